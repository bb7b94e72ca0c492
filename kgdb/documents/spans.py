"""LLM-free named things in a text: the phrases of the retrieval graph (kgdb/documents/ppr_graph.py).

No model, only rules (the README's "Graph retrieval" section says the same):

- **Proper-noun spans**: runs of capitalised words, joined across the lower-case connectors
  of names (``of``, ``the``, ``de``, ``von``, ...): ``University of Notre Dame``, ``Hank
  Snow``; leading function words that merely start a sentence (``The``, ``In``, ``He``, ...)
  and trailing connectors are dropped.
- **Quoted spans**: text between double quotes, 3 to 60 characters (titles of songs, films).
- **Years and numbers**: four-digit years (1000-2099) and numbers with a thousands separator
  or a decimal point are phrases too (``1,200``).
- **The gazetteer**: names of the graph's entities found in the text, any case (so the
  knowledge graph's entities are phrases wherever a chunk names them).
- Phrases shorter than 3 characters are left out; each is kept once, case-folded as its id.

Sentences are split after ``.``, ``!`` or ``?`` followed by space and a capital letter, digit
or quote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kgdb.documents.gazetteer import Gazetteer

_CONNECTOR_WORDS = "of the de la le du del da von van der den and for on in at y"
CONNECTORS = frozenset(_CONNECTOR_WORDS.split())
"""Lower-case words allowed inside a name (between capitalised words)."""
_FUNCTION_WORDS = """
a an the in on at of for and but or if when while after before during this that these those
it its he she they his her their we our you your i as by from to with is was were are be
been being there here where which who what how why also although however since unlike
despite following according other some many most such each both several all any no not one
two three four five six seven eight nine ten first second third after later then thus
"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())
"""Capitalised words that start a sentence without naming anything."""
MIN_LENGTH = 3
_CAPITALISED = r"[A-Z\u00C0-\u00DE][\w'\u2019\-.&]*"
_SPAN = re.compile(rf"{_CAPITALISED}(?:\s+(?:(?:{'|'.join(sorted(CONNECTORS))})\s+)*"
                   rf"{_CAPITALISED})*")
_QUOTED = re.compile(r"\"([^\"\n]{3,60})\"|\u201c([^\u201d\n]{3,60})\u201d")
_NUMBER = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})\b|\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b|"
                     r"\b\d+\.\d+\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"\u201c\u00C0-\u00DE])")


def phrase_id(text: str) -> str:
    """A phrase's id: its words case-folded, single-spaced."""
    return " ".join(text.casefold().split())


def proper_noun_spans(text: str) -> list[str]:
    """The proper-noun spans of ``text`` (see the module docstring), in order."""
    out = []
    for match in _SPAN.finditer(text):
        words = match.group().strip(" .'\u2019-").split()
        while words and words[0].casefold().strip(".") in FUNCTION_WORDS:
            words = words[1:]
        while words and words[-1].casefold() in CONNECTORS:
            words = words[:-1]
        span = " ".join(words).rstrip(".")
        if len(span) >= MIN_LENGTH:
            out.append(span)
    return out


def phrases(text: str, gazetteer: Gazetteer | None = None,
            extra: Iterable[str] = ()) -> list[str]:
    """Phrase ids named in ``text``: proper-noun and quoted spans, years and numbers, the
    gazetteer's names, and ``extra`` (a chunk's document title), each once, in order."""
    found: list[str] = [*extra, *proper_noun_spans(text)]
    found += [a or b for a, b in _QUOTED.findall(text)]
    found += _NUMBER.findall(text)
    if gazetteer is not None:
        found += [name for _, name, _, _ in gazetteer.find(text)]
    ids = (phrase_id(p) for p in found)
    return list(dict.fromkeys(p for p in ids if len(p) >= MIN_LENGTH))


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (see the module docstring), blank ones left out."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]
