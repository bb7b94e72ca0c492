"""Passages: the chunks nearest a vector, with their documents and texts. Every solver that
searches chunks (plain vector search, KG-CQR's fused query, the service's Dify records) reads
them here."""

from __future__ import annotations

from collections.abc import Sequence

from kgdb.cypher import documents as cy
from kgdb.engine.base import GraphStore
from kgdb.retrieve.evidence import Passage


def nearest_passages(store: GraphStore, vector: Sequence[float], k: int) -> list[Passage]:
    """The ``k`` chunks nearest ``vector`` by the chunk vector index, best first, each scored
    by its cosine similarity (the index is L2 over unit vectors: cos = 1 - d^2 / 2)."""
    if k < 1:
        return []
    rows = store.run(cy.nearest_chunk_documents(store.dialect, vector, k)).records()
    return [Passage(str(r["chunk"]), str(r["document"]), str(r["text"] or ""),
                    1.0 - float(r["distance"]) ** 2 / 2.0, _source(r)) for r in rows]


def passages_by_id(store: GraphStore, ids: Sequence[str]) -> list[Passage]:
    """The chunks among ``ids`` as passages (no score), in the order of ``ids``."""
    if not ids:
        return []
    found = {str(r["id"]): r for r in store.run(cy.chunks_by_id(ids)).records()}
    return [Passage(i, str(found[i]["document"]), str(found[i]["text"]),
                    source=_source(found[i])) for i in ids if i in found]


def _source(row: dict[str, object]) -> str | None:
    """A row's chunk ``source`` (None where the chunk has none)."""
    source = row.get("source")
    return None if source is None else str(source)
