"""Entity names found in text without a model: the gazetteer's matching, shared by
``--extract gazetteer`` (chunks, :mod:`kgdb.documents.gazetteer`) and retrieval (the entities a
question names).

Rules (the README's "Documents" section says the same):

- A name (or a synonym) matches at word boundaries only: ``Wind`` does not match inside
  ``Windows``; words are runs of letters and digits, everything else separates them.
- Case: a name matches with its own capitalisation; ``ignore_case`` matches any case.
- Names shorter than ``min_length`` characters are left out (``It``, ``1``).
- Overlaps: at each position the longest name wins, and matches do not overlap (``Inherit the
  Wind`` links the film, not also ``Wind``), scanning left to right.
- Ambiguity: a name shared by several entities links all of them (the text mentions that
  name; which entity it means is for the solver to decide); ``ambiguous`` counts such names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kgdb.cypher import documents as cy
from kgdb.engine.base import GraphStore

DEFAULT_MIN_LENGTH = 3
_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


class NameIndex:
    """Finds entity names in texts (see the module docstring for the rules)."""

    def __init__(self, entries: Iterable[tuple[str, str, Sequence[str]]], *,
                 ignore_case: bool = False, min_length: int = DEFAULT_MIN_LENGTH) -> None:
        """``entries``: (entity id, name, synonyms)."""
        self.ignore_case = ignore_case
        self.min_length = min_length
        # first word -> {word tuple: {entity id: name}}
        self._index: dict[str, dict[tuple[str, ...], dict[str, str]]] = {}
        self.longest = 1
        for ident, name, synonyms in entries:
            self.add(ident, name, synonyms)

    @property
    def ambiguous(self) -> int:
        """How many names link several entities."""
        return sum(1 for by_words in self._index.values() for ids in by_words.values()
                   if len(ids) > 1)

    def add(self, ident: str, name: str, synonyms: Sequence[str] = ()) -> None:
        """One more entity to find."""
        for text in dict.fromkeys([name, *synonyms]):
            self._add(ident, name, text)

    def _key(self, word: str) -> str:
        return word.casefold() if self.ignore_case else word

    def _add(self, ident: str, name: str, text: str) -> None:
        text = text.strip()
        if len(text) < self.min_length:
            return
        words = tuple(self._key(w) for w, _, _ in _words(text))
        if not words:
            return
        self.longest = max(self.longest, len(words))
        self._index.setdefault(words[0], {}).setdefault(words, {})[ident] = name

    def __len__(self) -> int:
        return sum(len(v) for v in self._index.values())

    def find(self, text: str) -> list[tuple[str, str, int, int]]:
        """(entity id, name, start, end) of every match in ``text``, left to right."""
        words = _words(text)
        keys = [self._key(w) for w, _, _ in words]
        found: list[tuple[str, str, int, int]] = []
        i = 0
        while i < len(words):
            candidates = self._index.get(keys[i])
            best: tuple[int, dict[str, str]] | None = None
            if candidates:
                for n in range(min(self.longest, len(words) - i), 0, -1):
                    ids = candidates.get(tuple(keys[i:i + n]))
                    if ids:
                        best = (n, ids)
                        break
            if best is None:
                i += 1
                continue
            n, ids = best
            for ident, name in ids.items():
                found.append((ident, name, words[i][1], words[i + n - 1][2]))
            i += n
        return found


def name_entries(store: GraphStore) -> list[tuple[str, str, list[str]]]:
    """(entity id, name, synonyms) of every entity in ``store``."""
    return [(str(r["id"]), str(r["name"]), [str(s) for s in r["synonyms"] or []])
            for r in store.run(cy.entity_names(store.dialect)).records()]


def name_index(store: GraphStore, *, ignore_case: bool = False,
               min_length: int = DEFAULT_MIN_LENGTH) -> NameIndex:
    """A :class:`NameIndex` of every entity in ``store``."""
    return NameIndex(name_entries(store), ignore_case=ignore_case, min_length=min_length)
