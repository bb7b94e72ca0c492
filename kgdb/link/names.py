"""Linking by spelling: a relation phrase to the graph's relationship types, with no model.

Exact, then ignoring case and separators, then the closest spelling (a misspelt
``brithPlace`` still finds ``birthPlace``), then a shared word stem (``director`` finds
``directed_by``, ``actor`` finds ``starred_actors``); only an unambiguous best match counts.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any

SPELLING_CUTOFF = 0.75
"""How close (difflib ratio of the squashed spellings) a misspelling must be."""

_STOP_WORDS = {"has", "have", "had", "in", "by", "of", "the", "is", "a", "an", "to", "for",
               "on", "at", "with", "was", "be"}


def squash(text: str) -> str:
    """Lower case without spaces, ``_`` or ``-``: ``Release_Year`` -> ``releaseyear``."""
    return re.sub(r"[\s_\-]+", "", text).lower()


def lexical_relation(phrase: str, types: Iterable[str]) -> tuple[str, ...]:
    """The relationship type spelled like ``phrase`` (one, or none)."""
    types = list(types)
    if phrase in types:
        return (phrase,)
    squashed = {squash(t): t for t in types}
    if squash(phrase) in squashed:
        return (squashed[squash(phrase)],)
    close = difflib.get_close_matches(squash(phrase), list(squashed), n=1,
                                      cutoff=SPELLING_CUTOFF)
    if close:
        return (squashed[close[0]],)
    return _shared_stem(phrase, types)


def _words_of(text: str) -> list[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return [w for w in re.split(r"[\s_\-]+", spaced.lower()) if w and w not in _STOP_WORDS]


def _stem_match(a: str, b: str) -> bool:
    common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                  min(len(a), len(b)))
    return common >= 4 and common >= 0.6 * min(len(a), len(b))


def _shared_stem(phrase: str, types: list[str]) -> tuple[str, ...]:
    words = _words_of(phrase)
    scored = []
    for t in types:
        hits = sum(1 for w in words if any(_stem_match(w, x) for x in _words_of(t)))
        if hits:
            scored.append((hits, difflib.SequenceMatcher(None, squash(phrase),
                                                         squash(t)).ratio(), t))
    scored.sort(reverse=True)
    if not scored or (len(scored) > 1 and scored[0][0] == scored[1][0]):
        return ()
    return (scored[0][2],)


def relation_words(rel_type: str) -> str:
    """``directed_by`` / ``directedBy`` / ``DIRECTED_BY`` -> ``directed by``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", rel_type)
    words = re.split(r"[\s_\-.:/]+", spaced)
    return " ".join(w.lower() if w.isupper() or w[:1].isupper() else w for w in words if w)


def verbalise(head: Any, rel_type: str, tail: Any) -> str:
    """A fact's text: ``head relation tail`` (a missing name reads as an empty string)."""
    return " ".join(s for s in (str(head or "").strip(), relation_words(rel_type),
                                str(tail or "").strip()) if s)
