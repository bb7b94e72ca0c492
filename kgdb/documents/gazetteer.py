"""``--extract gazetteer``: link each chunk to the graph's existing entities it names. No model.
The matching rules are :mod:`kgdb.link.gazetteer`'s (the README's "Documents" section says
the same).

The gazetteer never creates an entity, so deleting a document never deletes one it linked.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from kgdb.documents.model import Chunk, ExtractedEntity, Extraction, ExtractionStats
from kgdb.link.gazetteer import DEFAULT_MIN_LENGTH, NameIndex

__all__ = ["DEFAULT_MIN_LENGTH", "Gazetteer"]


class Gazetteer(NameIndex):
    """Links chunks to the entities whose names they contain."""

    name = "gazetteer"

    def __init__(self, entries: Iterable[tuple[str, str, Sequence[str]]], *,
                 ignore_case: bool = False, min_length: int = DEFAULT_MIN_LENGTH) -> None:
        """``entries``: (entity id, name, synonyms)."""
        super().__init__(entries, ignore_case=ignore_case, min_length=min_length)
        self.stats = ExtractionStats()

    def extract(self, chunks: Sequence[Chunk]) -> Iterator[Extraction]:
        for chunk in chunks:
            seen: dict[str, ExtractedEntity] = {}
            for ident, name, _, _ in self.find(chunk.text):
                seen.setdefault(ident, ExtractedEntity(name=name, id=ident))
            yield Extraction(chunk.id, tuple(seen.values()))
