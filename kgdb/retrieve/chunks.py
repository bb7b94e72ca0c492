"""Solvers over the chunks alone and the mutual index, without an LLM at retrieval:

``vector``
    Plain chunk vector search: the chunks nearest the question's embedding, each chunk's
    document ranked at its best chunk. The baseline every graph solver is measured against.
``entities``
    The mutual index (KAG, section 2.2.1): the graph entities the question names (the
    gazetteer's rules over the question, any case), then the documents whose chunks support
    them, most entities first, ties by the vector ranking.
``hybrid``
    Both document rankings fused by reciprocal rank (RRF, k = 60).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kgdb.cypher import documents as cy
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.link.gazetteer import NameIndex, name_index
from kgdb.llm import ChatClient
from kgdb.retrieve.evidence import Evidence, RankedDocument, documents_of
from kgdb.retrieve.passages import nearest_passages
from kgdb.retrieve.solver import PASSAGES_PER_DOCUMENT, PassageOptions, Solver, SolverOptions

RRF_K = 60


class VectorOptions(PassageOptions, SolverOptions):
    solver: Literal["vector"] = "vector"


class VectorSolver(Solver[VectorOptions]):
    """Plain chunk vector search (the baseline)."""

    name = "vector"
    summary = "nearest chunks by the question's embedding (the baseline)"
    options = VectorOptions
    ranks_by_passages = True

    def retrieve(self, store: GraphStore, embedder: Embedder, question: str,
                 options: VectorOptions, llm: ChatClient | None = None) -> Evidence:
        evidence, view, vector = self.start(store, embedder, question)
        with evidence.timings_ms.phase("chunks"):
            evidence.passages = nearest_passages(view, vector, options.passages)
        evidence.documents = documents_of(evidence.passages)
        return evidence



class EntitiesOptions(SolverOptions):
    solver: Literal["entities"] = "entities"


class EntitiesSolver(Solver[EntitiesOptions]):
    """The documents whose chunks support the entities the question names."""

    name = "entities"
    summary = "documents supporting the entities the question names (the mutual index)"
    options = EntitiesOptions

    def retrieve(self, store: GraphStore, embedder: Embedder, question: str,
                 options: EntitiesOptions, llm: ChatClient | None = None) -> Evidence:
        evidence, view, vector = self.start(store, embedder, question, "rank")
        with evidence.timings_ms.phase("chunks"):
            by_vector = [d.id for d in documents_of(nearest_passages(
                view, vector, 10 * PASSAGES_PER_DOCUMENT))]
        with evidence.timings_ms.phase("entities"):
            evidence.documents = entity_documents(view, question, by_vector)
        return evidence


def entity_documents(store: GraphStore, question: str, by_vector: list[str]
                     ) -> list[RankedDocument]:
    """Documents supporting the entities ``question`` names (any case), most entities first,
    ties by their position in ``by_vector``; the score is the number of entities."""
    names = _name_index(store)
    ids = list(dict.fromkeys(i for i, *_ in names.find(question)))
    if not ids:
        return []
    counts = {str(r["document"]): int(r["entities"])
              for r in store.run(cy.documents_mentioning(ids)).records()}
    position = {d: i for i, d in enumerate(by_vector)}
    ranked = sorted(counts, key=lambda d: (-counts[d], position.get(d, len(position)), d))
    return [RankedDocument(d, float(counts[d])) for d in ranked]


class HybridOptions(PassageOptions, SolverOptions):
    solver: Literal["hybrid"] = "hybrid"
    rrf_k: int = Field(RRF_K, ge=1, le=10000, description=(
        "hybrid: reciprocal rank fusion's k (score 1 / (k + rank))"))


class HybridSolver(Solver[HybridOptions]):
    """Vector search and the mutual index fused by reciprocal rank."""

    name = "hybrid"
    summary = "vector and entities fused by reciprocal rank"
    options = HybridOptions
    ranks_by_passages = True

    def retrieve(self, store: GraphStore, embedder: Embedder, question: str,
                 options: HybridOptions, llm: ChatClient | None = None) -> Evidence:
        evidence, view, vector = self.start(store, embedder, question, "rank")
        with evidence.timings_ms.phase("chunks"):
            evidence.passages = nearest_passages(view, vector, options.passages)
        by_vector = [d.id for d in documents_of(evidence.passages)]
        with evidence.timings_ms.phase("entities"):
            by_entities = [d.id for d in entity_documents(view, question, by_vector)]
        evidence.documents = rrf([by_vector, by_entities], options.rrf_k)
        return evidence



def rrf(rankings: list[list[str]], k: int = RRF_K) -> list[RankedDocument]:
    """Reciprocal rank fusion: each item scores the sum of 1 / (k + rank) over the rankings
    (rank from 1), best first, ties by id."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for i, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + i + 1)
    return [RankedDocument(d, scores[d]) for d in sorted(scores, key=lambda d: (-scores[d], d))]


_NAME_INDEXES: dict[tuple[str, int], NameIndex] = {}


def _name_index(store: GraphStore) -> NameIndex:
    """The store's entity names, any case, kept while the number of entities stays the same
    (reading every name costs more than the rest of a retrieval; a load or delete changes the
    count; a rename alone is seen by the next process)."""
    count = int(store.run(cy.count_entities()).records()[0]["entities"])
    key = (store.address, count)
    if key not in _NAME_INDEXES:
        if len(_NAME_INDEXES) >= 8:
            _NAME_INDEXES.pop(next(iter(_NAME_INDEXES)))
        _NAME_INDEXES[key] = name_index(store, ignore_case=True)
    return _NAME_INDEXES[key]
