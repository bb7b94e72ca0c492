"""The ``vector`` solver: plain chunk vector search, the chunks nearest the question's
embedding, each chunk's document ranked at its best chunk. The baseline every graph solver is
measured against. On Neo4j with kgdb's plugin the search is the plugin's exact
``kgdb.nearestNodes``, else the chunk vector index; the evidence's ``passage_search`` says
which (as ``hybrid``'s)."""

from __future__ import annotations

from typing import Literal

from kgdb.cypher import documents as cy
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.llm import ChatClient
from kgdb.retrieve.evidence import Evidence, documents_of
from kgdb.retrieve.passages import nearest_passages
from kgdb.retrieve.solver import PassageOptions, Solver, SolverOptions


class VectorOptions(PassageOptions, SolverOptions):
    solver: Literal["vector"] = "vector"


class VectorSolver(Solver[VectorOptions]):
    """Plain chunk vector search (the baseline)."""

    name = "vector"
    summary = "nearest chunks by the question's embedding (the baseline)"
    options = VectorOptions
    indexes = ("chunks",)
    ranks_by_passages = True

    def retrieve(self, store: GraphStore, embedder: Embedder, question: str,
                 options: VectorOptions, llm: ChatClient | None = None) -> Evidence:
        evidence, view, vector = self.start(store, embedder, question)
        with evidence.timings_ms.phase("chunks"):
            evidence.passages = nearest_passages(view, vector, options.passages)
        evidence.documents = documents_of(evidence.passages)
        evidence.detail["passage_search"] = cy.passage_search(store.dialect)
        return evidence
