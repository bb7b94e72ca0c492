"""KG-CQR's triple text representations (its equation 2): a text and an embedding on every
fact relationship, searchable by meaning through one relationship vector index per relation
type (``kgdb index triples``).

* **Facts** are the relationships between two ``Entity`` nodes whose type is not one of the
  knowledge layer's structural relations (``supporting_chunks``, ``belongTo``, ``SIMILAR``,
  ...; :data:`kgdb.cypher.link.STRUCTURAL_RELATIONS`).
* **Text.** The paper has an LLM describe each triple from its document; kgdb verbalises it
  without a model: head name, the relation type in words, tail name
  (``Kismet directed by William Dieterle``; ``directed_by``, ``directedBy`` and
  ``DIRECTED_BY`` all read ``directed by``). Stored as ``r.ttr``.
* **Embedding** of that text with kgdb's embedding model (cached like every embedding),
  stored as ``r.embedding`` under a vector index on the relation type (L2 on unit vectors,
  so its order is the cosine order).
* **Incremental.** A run writes only facts without an embedding or whose text changed (an
  entity renamed); an unchanged graph writes nothing. Where a stored embedding was replaced,
  the type's index is rebuilt (FalkorDB 4.16.3 keeps a stale entry for an updated vector).
  A first build writes the vectors before it creates the index (one bulk build).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kgdb.cypher import triples as cy
from kgdb.dialects.base import IndexInfo
from kgdb.embed import Embedder
from kgdb.engine.base import GraphStore
from kgdb.errors import KgdbError, did_you_mean
from kgdb.link.names import verbalise
from kgdb.schema.apply import await_indexes, execute_ddl

BATCH = 1000
"""Facts written per statement."""


class TripleIndexError(KgdbError):
    """Triple texts cannot be written as asked (an unknown relation type)."""


@dataclass
class TripleIndexReport:
    types: int = 0
    facts: int = 0
    written: int = 0
    unchanged: int = 0
    indexes_created: list[str] = field(default_factory=list)
    indexes_rebuilt: list[str] = field(default_factory=list)
    seconds: float = 0.0
    embed_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out = dict(vars(self))
        out["facts_per_second"] = round(self.written / self.seconds, 1) if self.seconds else None
        return out


def index_triples(store: GraphStore, embedder: Embedder, *, types: Sequence[str] | None = None,
                  batch: int = BATCH, progress: bool = True) -> TripleIndexReport:
    """Write the TTR and its embedding on every fact (of ``types``, default all) that lacks
    them or whose text changed, and make sure each type has its vector index."""
    from kgdb.progress import progress_bar

    t0 = time.perf_counter()
    report = TripleIndexReport()
    counts = {str(r["type"]): int(r["facts"])
              for r in store.run(cy.fact_types(store.dialect)).records()}
    unknown = [t for t in types or () if t not in counts]
    if unknown:
        raise TripleIndexError(f"no fact of relation type {unknown[0]!r} in {store.address}"
                       f"{did_you_mean(unknown[0], list(counts))}"
                       + (f"; its fact types: {', '.join(sorted(counts))}" if counts else ""))
    wanted = [t for t in counts if types is None or t in types]
    report.types = len(wanted)
    report.facts = sum(counts[t] for t in wanted)
    indexed = {i.label for i in store.indexes()
               if i.kind == "vector" and i.entity == "relationship"
               and i.properties == (cy.EMBEDDING,)}
    embed_before = getattr(embedder, "compute_seconds", 0.0)
    bar = progress_bar(total=report.facts, unit="facts", unit_scale=True, file=sys.stderr,
                       disable=not progress or not report.facts, desc="triple texts")
    try:
        for rel_type in wanted:
            replaced = _index_type(store, embedder, rel_type, batch, report, bar)
            if rel_type not in indexed:
                _create_index(store, rel_type, embedder.dimension)
                report.indexes_created.append(rel_type)
            elif replaced:
                _rebuild_index(store, rel_type, embedder.dimension)
                report.indexes_rebuilt.append(rel_type)
    finally:
        bar.close()
    report.embed_seconds = round(getattr(embedder, "compute_seconds", 0.0) - embed_before, 3)
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def _index_type(store: GraphStore, embedder: Embedder, rel_type: str, batch: int,
                report: TripleIndexReport, bar: Any) -> bool:
    """Write the type's missing or outdated texts; whether a stored embedding was replaced."""
    d = store.dialect
    todo: list[dict[str, Any]] = []
    replaced = False
    for row in store.run(cy.facts_of_type(d, rel_type)).records():
        text = verbalise(row["head"], rel_type, row["tail"])
        if row["embedded"] and row["ttr"] == text:
            report.unchanged += 1
            bar.update(1)
            continue
        replaced = replaced or bool(row["embedded"])
        todo.append({"h": row["h"], "t": row["t"], "text": text})
    for start in range(0, len(todo), batch):
        part = todo[start:start + batch]
        vectors = embedder.embed([r["text"] for r in part])
        store.run(cy.set_fact_texts(d, rel_type, [
            {**r, "embedding": v}
            for r, v in zip(part, vectors, strict=True)]))
        report.written += len(part)
        bar.update(len(part))
    return replaced


def _info(rel_type: str, dimension: int) -> IndexInfo:
    return IndexInfo("vector", "relationship", rel_type, (cy.EMBEDDING,),
                     options={"dimension": dimension})


def _create_index(store: GraphStore, rel_type: str, dimension: int) -> None:
    for op in store.dialect.create_vector_index(rel_type, cy.EMBEDDING, dimension,
                                                relationship=True):
        execute_ddl(store, op)
    await_indexes(store, vectors=[_info(rel_type, dimension)])


def _rebuild_index(store: GraphStore, rel_type: str, dimension: int) -> None:
    for info in store.indexes():
        if (info.kind == "vector" and info.entity == "relationship" and info.label == rel_type
                and info.properties == (cy.EMBEDDING,)):
            for op in store.dialect.drop_index(info):
                store.execute(op)
    _create_index(store, rel_type, dimension)
