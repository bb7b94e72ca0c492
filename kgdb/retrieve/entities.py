"""The ``entities`` solver, the mutual index (KAG, section 2.2.1): the graph entities the
question names (the gazetteer's rules over the question, any case), then the documents whose
chunks support them, ranked by their entity evidence (:class:`EntityEvidence`), ties by the
vector ranking. Only documents the question names can rank: an ingredient of ``hybrid``
(:mod:`kgdb.retrieve.hybrid`), not a retriever on its own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from kgdb.cypher import documents as cy
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.graph_cache import GraphCache
from kgdb.link.gazetteer import NameIndex, name_index
from kgdb.llm import ChatClient
from kgdb.retrieve.evidence import Evidence, Json, RankedDocument, documents_of
from kgdb.retrieve.passages import nearest_passages
from kgdb.retrieve.solver import PASSAGES_PER_DOCUMENT, Solver, SolverOptions


class EntitiesOptions(SolverOptions):
    solver: Literal["entities"] = "entities"


class EntitiesSolver(Solver[EntitiesOptions]):
    """The documents whose chunks support the entities the question names."""

    name = "entities"
    summary = "documents supporting the entities the question names (the mutual index)"
    options = EntitiesOptions
    indexes = ("chunks",)

    def retrieve(self, store: GraphStore, embedder: Embedder, question: str,
                 options: EntitiesOptions, llm: ChatClient | None = None) -> Evidence:
        evidence, view, vector = self.start(store, embedder, question, "rank")
        with evidence.timings_ms.phase("chunks"):
            by_vector = [d.id for d in documents_of(nearest_passages(
                view, vector, 10 * PASSAGES_PER_DOCUMENT))]
        with evidence.timings_ms.phase("entities"):
            found = entity_evidence(view, question)
        evidence.documents = [RankedDocument(d, found.scores[d])
                              for d in found.ranking(by_vector)]
        evidence.detail["entities"] = found.to_json()
        return evidence


@dataclass(frozen=True)
class EntityEvidence:
    """The entities a question names, the documents supporting each, and each document's
    evidence: the sum of 1 / c(e) over the named entities e it supports, c(e) the number of
    documents supporting e."""

    entities: dict[str, tuple[str, ...]]
    names: dict[str, str]
    scores: dict[str, float]

    def ranking(self, by_vector: Sequence[str]) -> list[str]:
        """The documents with evidence, most first, ties by their place in ``by_vector``
        (those not in it after, by id)."""
        position = {d: i for i, d in enumerate(by_vector)}
        return sorted(self.scores, key=lambda d: (
            -self.scores[d], position.get(d, len(position)), d))

    def to_json(self) -> list[Json]:
        return [{"id": e, "name": self.names.get(e, e), "documents": len(docs)}
                for e, docs in self.entities.items()]


def entity_evidence(store: GraphStore, question: str) -> EntityEvidence:
    """The mutual index's evidence for ``question``: the entities it names (any case) and
    the documents whose chunks support them (see :class:`EntityEvidence`)."""
    names: dict[str, str] = {}
    for ident, name, *_ in _name_index(store).find(question):
        names.setdefault(ident, name)
    if not names:
        return EntityEvidence({}, {}, {})
    rows = store.run(cy.entity_documents(list(names))).records()
    found = {str(r["entity"]): tuple(sorted({str(d) for d in r["documents"]})) for r in rows}
    entities = {e: found[e] for e in names if found.get(e)}
    scores: dict[str, float] = {}
    for documents in entities.values():
        for d in documents:
            scores[d] = scores.get(d, 0.0) + 1.0 / len(documents)
    return EntityEvidence(entities, names, scores)



NAME_CACHE_ENTRIES = 8
"""Graphs whose entity names are kept, the least recently used dropped first (a MetaQA-sized
graph's names take about 20 MB: docs/operations.md, "Caches")."""

_NAME_INDEXES: GraphCache[NameIndex] = GraphCache("entity_names", NAME_CACHE_ENTRIES)


def _name_index(store: GraphStore) -> NameIndex:
    """The store's entity names, any case, kept per graph while its number of entities stays
    the same (reading every name costs more than the rest of a retrieval; a load or delete
    changes the count; a rename alone is seen by the next process)."""
    count = int(store.run(cy.count_entities()).records()[0]["entities"])
    return _NAME_INDEXES.get(store, count, lambda: name_index(store, ignore_case=True))
