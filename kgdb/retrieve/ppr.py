"""Graph retrieval by personalized PageRank, HippoRAG 2 without an LLM (``--mode ppr``).

Over the retrieval graph (kgdb/retrieve/graph.py: chunks, phrases, synonym edges), for a
question with embedding ``q``:

1. **Seeds.**
   * the phrases the question names (every phrase name found in it, any case, at word
     boundaries): weight ``question_weight / c(p)``, ``c(p)`` the chunks containing p
     (HippoRAG 2 divides a phrase's weight by its passage count the same way);
   * the phrases named by the ``sentences`` sentences nearest ``q`` (the LLM-free stand-in
     for HippoRAG 2's query-to-triple step): ``fact_weight * cos(q, sentence) / c(p)``,
     a phrase keeping its best;
   * optionally the ``names`` phrases whose name embedding is nearest ``q`` (off by
     default: measured, it costs recall);
   * the ``passages`` chunks nearest ``q``: ``passage_weight * n^sharpness``, n the cosine
     min-max normalised over them (HippoRAG 2: weight 0.05, sharpness 1, every passage).
2. **Personalized PageRank** (kgdb/retrieve/pagerank.py, damping 0.5) inside the database:
   FalkorDB runs ``kgdb.ppr`` (kgdb's UDF library) over the stored projection; Neo4j runs
   ``gds.pageRank`` over a projection made for the question. GDS 2.13's ``sourceNodes``
   takes no weights ("Failed to parse `sourceNodes` as a List of node IDs" for
   ``[[node, weight]]``), so the projection adds a hub node with a directed edge to each
   seed weighted by the seed's weight, and PageRank is personalised to the hub alone: the
   hub gets 1 - d, passes d (1 - d) s to the seeds, and every other node's score is exactly
   d times its PageRank personalised to s (dividing by d gives it back).
3. **Ranking.** Chunks by PPR score; documents at their best chunk.

Defaults are tuned on MuSiQue-100 (the README's ablation shows each against the paper's).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kgdb.cypher import pagerank as cy
from kgdb.documents.gazetteer import Gazetteer
from kgdb.engine.base import GraphStore
from kgdb.errors import KgdbError
from kgdb.retrieve.pagerank import DAMPING
from kgdb.statement import Statement


class PprError(KgdbError):
    """Graph retrieval cannot run (no retrieval graph, bad options)."""


@dataclass(frozen=True)
class PprOptions:
    damping: float = DAMPING
    """PageRank's damping factor (HippoRAG 2: 0.5)."""
    passages: int = 100
    """Chunks seeded by their vector score."""
    passage_weight: float = 0.3
    """Weight of the best passage seed (HippoRAG 2: 0.05)."""
    sharpness: float = 3.0
    """Exponent on the min-max normalised passage score (HippoRAG 2: 1)."""
    sentences: int = 3
    """Nearest sentences whose phrases are seeds (HippoRAG 2: 5 facts)."""
    fact_weight: float = 0.3
    """Weight of a sentence seed's cosine (HippoRAG 2: 1)."""
    question_weight: float = 0.2
    """Weight of a phrase the question names (HippoRAG 2 without its LLM: 0)."""
    names: int = 0
    """Phrases nearest the question by name vector seeded by their cosine (0: none)."""
    iterations: int = 100
    """Neo4j: GDS's iteration cap."""
    tolerance: float = 1e-9
    """Neo4j: GDS's convergence tolerance."""
    epsilon: float = 1e-5
    """FalkorDB: the residual each node may keep unsettled (forward push)."""
    k: int = 100
    """Chunks returned."""

    def check(self) -> PprOptions:
        checks = [("damping", 0.0 <= self.damping < 1.0, "in [0, 1)"),
                  ("passages", 0 <= self.passages <= 10_000, "in [0, 10000]"),
                  ("passage_weight", self.passage_weight >= 0, ">= 0"),
                  ("sharpness", self.sharpness > 0, "> 0"),
                  ("sentences", 0 <= self.sentences <= 1000, "in [0, 1000]"),
                  ("fact_weight", self.fact_weight >= 0, ">= 0"),
                  ("question_weight", self.question_weight >= 0, ">= 0"),
                  ("names", 0 <= self.names <= 1000, "in [0, 1000]"),
                  ("iterations", 1 <= self.iterations <= 1000, "in [1, 1000]"),
                  ("tolerance", self.tolerance >= 0, ">= 0"),
                  ("epsilon", 0 < self.epsilon < 1, "in (0, 1)"),
                  ("k", 1 <= self.k <= 10_000, "in [1, 10000]")]
        for name, ok, rule in checks:
            if not ok:
                raise PprError(f"ppr option {name} must be {rule}, not {getattr(self, name)}")
        return self


@dataclass
class Seed:
    kind: str
    """``question``, ``sentence``, ``name`` or ``passage``."""
    id: str
    weight: float
    source: str = ""
    """The sentence (or question) that named it."""


@dataclass
class PprResult:
    passages: list[tuple[str, str, float]] = field(default_factory=list)
    """(chunk id, document id, PPR score), best first."""
    seeds: list[Seed] = field(default_factory=list)
    paths: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)
    """For the best chunks: the seed phrases that reach them, (phrase, synonym it went
    through or None)."""
    statements: list[Statement] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def documents(self) -> list[tuple[str, float]]:
        """Documents at their best chunk."""
        best: dict[str, float] = {}
        for _, document, score in self.passages:
            best.setdefault(document, score)
        return list(best.items())


class PprRetriever:
    """Runs the solver on one store (caches the question gazetteer of phrase names)."""

    def __init__(self, store: GraphStore, options: PprOptions | None = None) -> None:
        self.store = store
        self.options = (options or PprOptions()).check()
        self._gazetteer: Gazetteer | None = None
        self._built: Any = None

    def _run(self, statement: Statement, result: PprResult) -> list[dict[str, Any]]:
        result.statements.append(statement)
        return [dict(r) for r in self.store.run(statement).records()]

    def gazetteer(self) -> Gazetteer:
        meta = self.store.run(cy.read_meta()).records()
        if not meta:
            raise PprError(f"no retrieval graph in {self.store.address}: build it first "
                           "(kgdb index ppr)")
        if self._gazetteer is None or self._built != meta[0]["built"]:
            names = [str(r["id"]) for r in self.store.run(cy.phrase_names()).records()]
            self._gazetteer = Gazetteer(((n, n, []) for n in names), ignore_case=True)
            self._built = meta[0]["built"]
        return self._gazetteer

    def retrieve(self, question: str, vector: Sequence[float],
                 *, paths: bool = True) -> PprResult:
        o = self.options
        d = self.store.dialect
        result = PprResult()
        t0 = time.perf_counter()
        seeds: dict[int, float] = {}
        phrase_weight: dict[str, tuple[float, int, str, str]] = {}

        def seed_phrase(node: int, pid: str, chunks: int, weight: float, kind: str,
                        source: str) -> None:
            weight /= max(int(chunks), 1)
            if weight > phrase_weight.get(pid, (0.0,))[0]:
                phrase_weight[pid] = (weight, node, kind, source)

        named = list(dict.fromkeys(i for i, *_ in self.gazetteer().find(question)))
        if named and o.question_weight > 0:
            for r in self._run(cy.phrases_by_id(named), result):
                seed_phrase(r["node"], r["id"], r["chunks"], o.question_weight, "question",
                            question)
        if o.sentences and o.fact_weight > 0:
            for r in self._run(cy.nearest_sentences(d, vector, o.sentences), result):
                similarity = 1.0 - float(r["distance"]) ** 2 / 2.0
                for node, pid, chunks in r["phrases"]:
                    seed_phrase(node, pid, chunks, o.fact_weight * similarity, "sentence",
                                r["text"])
        if o.names:
            for r in self._run(cy.nearest_phrases(d, vector, o.names), result):
                seed_phrase(r["node"], r["id"], r["chunks"],
                            1.0 - float(r["distance"]) ** 2 / 2.0, "name", "")
        for pid, (weight, node, kind, source) in sorted(phrase_weight.items()):
            seeds[int(node)] = seeds.get(int(node), 0.0) + weight
            result.seeds.append(Seed(kind, pid, weight, source))
        if o.passages and o.passage_weight > 0:
            rows = self._run(cy.nearest_passages(d, vector, o.passages), result)
            cos = [1.0 - float(r["distance"]) ** 2 / 2.0 for r in rows]
            if cos:
                low, high = min(cos), max(cos)
                for r, c in zip(rows, cos, strict=True):
                    n = (c - low) / (high - low) if high > low else 1.0
                    weight = o.passage_weight * n ** o.sharpness
                    if weight > 0:
                        seeds[int(r["node"])] = seeds.get(int(r["node"]), 0.0) + weight
                        result.seeds.append(Seed("passage", r["chunk"], weight))
        t1 = time.perf_counter()
        result.timings["seeds"] = (t1 - t0) * 1000
        if not seeds:
            return result
        rows = self._pagerank(seeds, result)
        result.passages = [(str(r["chunk"]), str(r["document"]), float(r["score"]))
                           for r in rows]
        t2 = time.perf_counter()
        result.timings["pagerank"] = (t2 - t1) * 1000
        if paths and result.passages:
            phrases = [s.id for s in result.seeds if s.kind != "passage"]
            best = [c for c, _, _ in result.passages[:10]]
            for r in self._run(cy.seed_paths(best, phrases), result) if phrases else []:
                result.paths.setdefault(str(r["chunk"]), []).append((r["phrase"], r["via"]))
            result.timings["paths"] = (time.perf_counter() - t2) * 1000
        return result

    def _pagerank(self, seeds: dict[int, float], result: PprResult) -> list[dict[str, Any]]:
        o = self.options
        if self.store.dialect.NAME == "falkordb":
            return self._run(cy.udf_ppr_chunks(seeds, damping=o.damping, epsilon=o.epsilon,
                                               k=o.k), result)
        graph = f"kgdb_ppr_{uuid.uuid4().hex[:12]}"
        try:
            self._run(cy.gds_project_seeded(graph, seeds), result)
            return self._run(cy.gds_ppr_hub(graph, damping=o.damping, iterations=o.iterations,
                                            tolerance=o.tolerance, k=o.k), result)
        finally:
            self.store.run(cy.gds_drop_named(graph))
