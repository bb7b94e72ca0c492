"""KG-Retriever's retrieval on its Hierarchical Index Graph (paper section 3.2.2), the
``document-graph`` solver.

1. **Document level** (:func:`collaboration`). The top-N documents by cosine to the question
   (the seeds, over ``Document.embedding``, which ``kgdb index knn`` writes) and the documents
   the document layer's ``SIMILAR`` edges reach from them: their neighbours (``onehop``,
   ``attentive``) or neighbours and neighbours' neighbours (``multihop``). Each neighbour has a
   weight w: 1 (``onehop``), the edge's similarity (``attentive``) or the product of the
   similarities along the hops (``multihop``); a document reached several ways keeps its
   largest w. Seeds rank first by cosine, then neighbours by ``w * cos(document, question)``;
   ``attentive`` and ``multihop`` admit only neighbours with ``w * cos > lambda`` (the paper's
   threshold, which it applies to entities; kgdb applies it to documents too).
2. **KG level** (``facts`` > 0). The entities the candidate documents' chunks support
   (the mutual index) whose ``w * cos(entity, question) > lambda`` (a seed's w is 1); their
   facts (any relation but the knowledge layer's structural ones), at most T, best entity
   score first (ties by head id, relation, tail id), each with the chunks it came from.
3. **Document ranking** fuses scores with plain chunk search instead of putting the facts'
   documents first (which ranked well below plain vector search on MuSiQue; see
   docs/solvers/triple-context.md):
   a document scores its best chunk's cosine to the question (the ``dense`` chunks nearest
   it), or its candidate score if higher, plus ``fact_boost`` times the best score of a fact
   whose chunks are in it.

Defaults are the paper's MuSiQue setting: N = 3, T = 30, lambda = 0.1 (K = 3 is the layer's).
One statement per level; the answer step gives the LLM the facts, their chunks and the
question. ``facts = 0`` is the document level alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from kgdb.cypher import documents as cy
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.llm import ChatClient
from kgdb.retrieve.evidence import Evidence, Fact, RankedDocument
from kgdb.retrieve.passages import nearest_passages, passages_by_id
from kgdb.retrieve.solver import PassageOptions, Solver, SolverOptions


class DocumentGraphOptions(PassageOptions, SolverOptions):
    solver: Literal["document-graph"] = "document-graph"
    strategy: Literal["onehop", "attentive", "multihop"] = Field("onehop", description=(
        "document-graph: how the document layer widens the seed documents"))
    seeds: int = Field(3, ge=1, le=1000, description=(
        "document-graph: seed documents nearest the question (KG-Retriever's N)"))
    facts: int = Field(30, ge=0, le=10000, description=(
        "document-graph: facts at most from the KG level (T); 0: the document level alone"))
    threshold: float = Field(0.1, ge=-1.0, le=1.0, description=(
        "document-graph: admission threshold on w * cos for neighbours and entities (lambda)"))
    fact_boost: float = Field(0.03, ge=0.0, le=10.0, description=(
        "document-graph: added to a document's score per unit of its best fact's score"))
    dense: int = Field(100, ge=0, le=10000, description=(
        "document-graph: chunks nearest the question whose cosine scores their documents"))


@dataclass(frozen=True)
class DocumentCandidate:
    """A candidate document: its weight w (1 for a seed) and its score (a seed's cosine to the
    question, a neighbour's w * cosine)."""

    id: str
    weight: float
    score: float
    seed: bool


def collaboration(store: GraphStore, vector: Sequence[float], options: DocumentGraphOptions
                  ) -> list[DocumentCandidate]:
    """The candidate documents, seeds first by cosine, then neighbours by ``w * cos`` (see the
    module docstring)."""
    hops = 2 if options.strategy == "multihop" else 1
    rows = store.run(cy.collaborating_documents(store.dialect, vector, options.seeds, hops)
                     ).records()
    seeds: dict[str, float] = {}
    others: dict[str, tuple[float, float]] = {}

    def admit(doc: object, weight: float, sim: object) -> None:
        if doc is None or sim is None:
            return
        score = weight * float(sim)  # type: ignore[arg-type]
        if options.strategy != "onehop" and score <= options.threshold:
            return
        if score > others.get(str(doc), (0.0, -2.0))[1]:
            others[str(doc)] = (weight, score)

    for r in rows:
        if r["seed"] is None:  # found, then deleted by a commit before its id was read
            continue
        seeds[str(r["seed"])] = float(r["seed_sim"])
        w1 = 1.0 if options.strategy == "onehop" else float(r["w1"] or 0.0)
        admit(r["m1"], w1, r["sim1"])
        if hops == 2 and r["m2"] is not None:
            admit(r["m2"], w1 * float(r["w2"] or 0.0), r["sim2"])
    ranked = [DocumentCandidate(d, 1.0, seeds[d], True) for d in sorted(seeds, key=lambda d: (-seeds[d], d))]
    ranked += [DocumentCandidate(d, *others[d], False)
               for d in sorted((d for d in others if d not in seeds),
                               key=lambda d: (-others[d][1], d))]
    return ranked


class DocumentGraphSolver(Solver[DocumentGraphOptions]):
    """KG-Retriever (Chen et al., "KG-Retriever: Efficient Knowledge Indexing for
    Retrieval-Augmented Large Language Models"): documents through the document layer, then
    their entities' facts."""

    name = "document-graph"
    aliases = ("hig", "kg-retriever")
    summary = ("KG-Retriever: seed documents, their document-layer neighbours, then their "
               "entities' facts")
    options = DocumentGraphOptions
    indexes = ("chunks", "knn")

    def retrieve(self, store: GraphStore, embedder: Embedder, question: str,
                 options: DocumentGraphOptions, llm: ChatClient | None = None) -> Evidence:
        evidence, view, vector = self.start(store, embedder, question)
        with evidence.timings_ms.phase("documents"):
            candidates = collaboration(view, vector, options)
        if options.facts:
            with evidence.timings_ms.phase("facts"):
                rows = view.run(cy.entity_level_triples(
                    view.dialect, [(c.id, c.weight) for c in candidates], vector,
                    options.threshold, options.facts)).records()
                evidence.facts = [Fact.from_row(r) for r in rows]
        scores: dict[str, float] = {}
        if options.dense:
            with evidence.timings_ms.phase("chunks"):
                for p in nearest_passages(view, vector, options.dense):
                    if p.score is not None:
                        scores[p.document] = max(scores.get(p.document, -2.0), p.score)
        for c in candidates:
            scores[c.id] = max(scores.get(c.id, -2.0), c.score)
        boost: dict[str, float] = {}
        for f in evidence.facts:
            for chunk in f.chunks:
                document = chunk.split("#", 1)[0]
                boost[document] = max(boost.get(document, 0.0), f.score or 0.0)
        for document, best in boost.items():
            scores[document] = max(scores.get(document, 0.0), 0.0) + options.fact_boost * best
        evidence.documents = [RankedDocument(d, scores[d])
                              for d in sorted(scores, key=lambda d: (-scores[d], d))]
        evidence.detail["candidates"] = [
            {"id": c.id, "weight": round(c.weight, 6), "score": round(c.score, 6),
             "seed": c.seed} for c in candidates]
        if options.passages:
            with evidence.timings_ms.phase("chunks"):
                ids = list(dict.fromkeys(c for f in evidence.facts for c in f.chunks))
                evidence.passages = passages_by_id(view, ids[:options.passages])
        return evidence
