"""The ``hybrid`` solver: vector search (:mod:`kgdb.retrieve.vector`) and the mutual
index (:mod:`kgdb.retrieve.entities`) fused by scores, and the lexical index's
(:mod:`kgdb.retrieve.keyword`) where it is built: a document scores its best chunk's cosine
to the question plus ``lexical_weight`` times its lexical score (its best chunk's full-text
score min-max normalised over the question's lexical results) plus ``entity_weight`` times
its entity evidence, the sum over the entities the question names that its chunks support of
1 / c(e), c(e) the number of documents supporting e (an entity named by one document is
strong evidence for it, one named by hundreds is not; HippoRAG 2 divides phrase seeds by the
same count). ``fusion=rrf`` fuses the two rankings by reciprocal rank instead (the first
release: it put entity-only documents above better dense ones and lost 1.3 points of
recall@5 to plain vector search on MuSiQue-100)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from kgdb.cypher import documents as cy
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.llm import ChatClient
from kgdb.retrieve.entities import entity_evidence
from kgdb.retrieve.evidence import Evidence, RankedDocument, documents_of
from kgdb.retrieve.keyword import lexical_passages, lexical_ready, min_max, missing_index
from kgdb.retrieve.passages import nearest_passages
from kgdb.retrieve.solver import PassageOptions, Solver, SolverOptions

RRF_K = 60

LEXICAL_WEIGHT = 0.1
"""``hybrid``'s default weight of the lexical score (kgdb/retrieve/keyword.py), chosen on
MuSiQue-100 among 0.05-0.5 (docs/solvers/keyword.md); without the lexical index ``hybrid``
ranks as before and says so in the evidence."""

LEXICAL_PASSAGES = 100
"""Chunks ``hybrid`` asks the lexical index for."""


def fuse_scores(dense: Mapping[str, float], evidence: Mapping[str, float], weight: float,
                lexical: Mapping[str, float] | None = None, lexical_weight: float = 0.0
                ) -> list[RankedDocument]:
    """Documents by ``dense`` (a document's best chunk cosine) plus ``weight`` times its
    ``evidence`` plus ``lexical_weight`` times its normalised ``lexical`` score, best first,
    ties by id. A document with evidence or a lexical score but no dense score scores the
    lowest dense score given (its chunks are no closer than the last one read), or 0 when
    there is none."""
    floor = min(dense.values(), default=0.0)
    lexical = lexical or {}
    scores = {d: dense.get(d, floor) + weight * evidence.get(d, 0.0)
              + lexical_weight * lexical.get(d, 0.0)
              for d in (*dense, *evidence, *lexical)}
    return [RankedDocument(d, scores[d]) for d in sorted(scores, key=lambda d: (-scores[d], d))]


class HybridOptions(PassageOptions, SolverOptions):
    solver: Literal["hybrid"] = "hybrid"
    fusion: Literal["scores", "rrf"] = Field("scores", description=(
        "hybrid: fuse by scores (best chunk cosine + entity_weight x entity evidence) or by "
        "reciprocal rank (rrf, the first release's method)"))
    entity_weight: float = Field(0.2, ge=0.0, le=10.0, description=(
        "hybrid: weight of a document's entity evidence (the sum of 1 / c(e) over the "
        "question's entities e its chunks support, c(e) the documents supporting e), added "
        "to its best chunk's cosine"))
    rrf_k: int = Field(RRF_K, ge=1, le=10000, description=(
        "hybrid: reciprocal rank fusion's k (score 1 / (k + rank)), with fusion=rrf"))
    lexical_weight: float = Field(LEXICAL_WEIGHT, ge=0.0, le=10.0, description=(
        "hybrid: weight of a document's lexical score (its best chunk's full-text score, "
        "min-max normalised over the question's lexical_passages), added to its best "
        "chunk's cosine (0: off; kgdb index fulltext)"))
    lexical_passages: int = Field(LEXICAL_PASSAGES, ge=1, le=10000, description=(
        "hybrid: chunks the lexical index is asked for"))


class HybridSolver(Solver[HybridOptions]):
    """Vector search and the mutual index fused by scores."""

    name = "hybrid"
    summary = "vector search plus the mutual index's entity evidence, fused by scores"
    options = HybridOptions
    indexes = ("chunks",)
    ranks_by_passages = True

    def retrieve(self, store: GraphStore, embedder: Embedder, question: str,
                 options: HybridOptions, llm: ChatClient | None = None) -> Evidence:
        evidence, view, vector = self.start(store, embedder, question, "rank")
        with evidence.timings_ms.phase("chunks"):
            evidence.passages = nearest_passages(view, vector, options.passages)
        evidence.detail["passage_search"] = cy.passage_search(store.dialect)
        by_vector = documents_of(evidence.passages)
        with evidence.timings_ms.phase("entities"):
            found = entity_evidence(view, question)
        evidence.detail["entities"] = found.to_json()
        lexical: dict[str, float] = {}
        if options.lexical_weight > 0:
            with evidence.timings_ms.phase("lexical"):
                if lexical_ready(store):
                    lexical = lexical_documents(view, question, options.lexical_passages)
                else:
                    evidence.detail["lexical"] = missing_index(store)
        if options.fusion == "rrf":
            dense = [d.id for d in by_vector]
            rankings = [dense, found.ranking(dense)]
            if lexical:
                rankings.append(sorted(lexical, key=lambda d: (-lexical[d], d)))
            evidence.documents = rrf(rankings, options.rrf_k)
        else:
            evidence.documents = fuse_scores(
                {d.id: d.score for d in by_vector if d.score is not None}, found.scores,
                options.entity_weight, lexical, options.lexical_weight)
        return evidence


def lexical_documents(store: GraphStore, question: str, k: int) -> dict[str, float]:
    """The documents of the ``k`` chunks the lexical index scores best for ``question``,
    each at its best chunk's score, min-max normalised over them (1 the best, 0 the last)."""
    best: dict[str, float] = {}
    for p in lexical_passages(store, question, k):
        best.setdefault(p.document, float(p.score or 0.0))
    return dict(zip(best, min_max(list(best.values())), strict=True))


def rrf(rankings: list[list[str]], k: int = RRF_K) -> list[RankedDocument]:
    """Reciprocal rank fusion: each item scores the sum of 1 / (k + rank) over the rankings
    (rank from 1), best first, ties by id."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for i, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + i + 1)
    return [RankedDocument(d, scores[d]) for d in sorted(scores, key=lambda d: (-scores[d], d))]
