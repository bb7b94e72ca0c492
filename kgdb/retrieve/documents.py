"""Document retrieval without an LLM, and its evaluation (``kgdb eval retrieval``).

Modes, each a ranking of documents for a question:

``vector``
    Plain chunk vector search: the chunks nearest the question's embedding, each chunk's
    document ranked at its best chunk.
``entities``
    The mutual index: the graph entities the question names (the gazetteer over the question,
    any case), then the documents whose chunks support them, most entities first, ties by
    the vector ranking.
``hybrid``
    Both rankings fused by reciprocal rank (RRF, k = 60).
``kgr-onehop``, ``kgr-attentive``, ``kgr-multihop``
    KG-Retriever's document-level collaboration over the document layer (``kgdb index knn``):
    the top-N documents by the query (the seeds, most similar first), then the documents their
    ``SIMILAR`` edges reach, ranked by ``w * cos(document, query)`` where ``w`` is 1 (one-hop),
    the edge's similarity (attentive) or the product of the similarities along two hops
    (multi-hop); attentive and multi-hop keep only neighbours with ``w * cos > lambda`` (the
    paper's threshold, which it applies to entities; here it admits documents). Defaults are
    the paper's MuSiQue setting: N = 3, lambda = 0.1.
``hig-onehop``, ``hig-attentive``, ``hig-multihop``
    KG-Retriever's whole retrieval (kgdb/retrieve/hig.py): the same candidate documents, then
    the KG level (entities with ``w * cos > lambda``, at most T = 30 facts); the documents of
    the facts' chunks first, in the facts' order, then the candidate documents.
``cqr``
    KG-CQR without an LLM (kgdb/retrieve/cqr.py): the facts whose triple text is nearest the
    question (``kgdb index triples``), completed by beam-search paths, verbalised as the
    query's context, and chunk vector search with the fused query vector (alpha = 0.7), each
    chunk's document ranked at its best chunk. Its latency excludes embedding the context.

Recall@k is the share of a question's supporting documents among its top-k documents,
averaged over the questions.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kgdb.cypher import documents as cy
from kgdb.documents.gazetteer import Gazetteer
from kgdb.documents.pipeline import DocumentOptions, gazetteer_for
from kgdb.embed import Embedder
from kgdb.engine import GraphStore
from kgdb.errors import LoadError
from kgdb.retrieve.cqr import CqrSettings

MODES = ("vector", "entities", "hybrid", "kgr-onehop", "kgr-attentive", "kgr-multihop",
         "hig-onehop", "hig-attentive", "hig-multihop", "cqr")
KGR_N = 3
KGR_LAMBDA = 0.1
RRF_K = 60
CHUNKS_PER_QUERY = 100
"""Chunks the vector mode reads per question (enough to rank documents beyond recall@10)."""


@dataclass(frozen=True)
class Question:
    question: str
    supporting: tuple[str, ...]
    id: str = ""


def read_questions(path: Path) -> list[Question]:
    """JSONL ``{question, supporting: [document ids or titles], id?}``, or MuSiQue's own
    ``questions.json`` (a list whose items have ``paragraphs`` with ``is_supporting``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LoadError(f"{path}: cannot read the questions: {exc}") from None
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LoadError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
        return [musique_question(f"{path}: item {i}", item) for i, item in enumerate(items, 1)]
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LoadError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(item, dict) or not isinstance(item.get("question"), str) or \
                not isinstance(item.get("supporting"), list) or not item["supporting"]:
            raise LoadError(f"{path}:{number}: a question is {{question, supporting: [...]}}")
        out.append(Question(item["question"], tuple(str(s) for s in item["supporting"]),
                            str(item.get("id", number))))
    return out


def musique_question(where: str, item: Any) -> Question:
    """A MuSiQue question: its supporting paragraphs' titles are the supporting documents."""
    if not isinstance(item, dict) or "paragraphs" not in item or "question" not in item:
        raise LoadError(f"{where}: not a MuSiQue question (question, paragraphs)")
    titles = tuple(dict.fromkeys(p["title"] for p in item["paragraphs"] if p.get("is_supporting")))
    if not titles:
        raise LoadError(f"{where}: the question has no supporting paragraph")
    return Question(item["question"], titles, str(item.get("id", "")))


@dataclass
class Ranker:
    """Ranks documents for questions on one store (one gazetteer, one embedder)."""

    store: GraphStore
    embedder: Embedder
    gazetteer: Gazetteer | None = None
    kgr_n: int = KGR_N
    kgr_lambda: float = KGR_LAMBDA
    cqr_settings: CqrSettings = field(default_factory=CqrSettings)
    fact_types: list[str] | None = None

    def collaboration(self, vector: Sequence[float], mode: str) -> list[str]:
        """KG-Retriever's candidate documents for ``mode`` (see the module docstring)."""
        hops = 2 if mode == "kgr-multihop" else 1
        rows = self.store.run(cy.collaborating_documents(self.store.dialect, vector,
                                                         self.kgr_n, hops)).records()
        seeds: dict[str, float] = {}
        others: dict[str, float] = {}

        def admit(doc: Any, weight: float, sim: Any) -> None:
            if doc is None or sim is None:
                return
            score = weight * float(sim)
            if mode != "kgr-onehop" and score <= self.kgr_lambda:
                return
            others[str(doc)] = max(others.get(str(doc), -2.0), score)

        for r in rows:
            seeds[str(r["seed"])] = float(r["seed_sim"])
            w1 = 1.0 if mode == "kgr-onehop" else float(r["w1"] or 0.0)
            admit(r["m1"], w1, r["sim1"])
            if hops == 2 and r["m2"] is not None:
                admit(r["m2"], w1 * float(r["w2"] or 0.0), r["sim2"])
        ranked = sorted(seeds, key=lambda d: (-seeds[d], d))
        return ranked + sorted((d for d in others if d not in seeds),
                               key=lambda d: (-others[d], d))

    def hig(self, vector: Sequence[float], mode: str) -> list[str]:
        """KG-Retriever's documents with the KG level (see the module docstring)."""
        from kgdb.retrieve.hig import HigSettings, retrieve_hig

        documents, evidence = retrieve_hig(self.store, vector, HigSettings(
            strategy=mode.removeprefix("hig-"), n=self.kgr_n, threshold=self.kgr_lambda,
            passages=0))
        from_facts = [c.split("#", 1)[0] for t in evidence.triples for c in t.chunks]
        return list(dict.fromkeys([*from_facts, *(d for d, _ in documents)]))

    def cqr(self, question: str, vector: Sequence[float]) -> tuple[list[str], float]:
        """KG-CQR's documents (see the module docstring), and the ms spent embedding the
        context."""
        from kgdb.documents.ttr import indexed_types
        from kgdb.retrieve.cqr import retrieve_cqr

        if self.fact_types is None:
            self.fact_types = indexed_types(self.store)
        result = retrieve_cqr(self.store, self.embedder, question, vector,
                              replace(self.cqr_settings, chunks=CHUNKS_PER_QUERY),
                              types=self.fact_types)
        return (list(dict.fromkeys(p.document for p in result.evidence.passages)),
                result.evidence.timings.get("embed_context", 0.0))

    def vector(self, vector: Sequence[float]) -> list[str]:
        rows = self.store.run(cy.nearest_chunk_documents(self.store.dialect, vector,
                                                         CHUNKS_PER_QUERY)).records()
        return list(dict.fromkeys(str(r["document"]) for r in rows))

    def entities(self, question: str, by_vector: list[str]) -> list[str]:
        if self.gazetteer is None:
            self.gazetteer = gazetteer_for(self.store, DocumentOptions(ignore_case=True))
        ids = list(dict.fromkeys(i for i, *_ in self.gazetteer.find(question)))
        if not ids:
            return []
        counts = {str(r["document"]): int(r["entities"])
                  for r in self.store.run(cy.documents_mentioning(ids)).records()}
        position = {d: i for i, d in enumerate(by_vector)}
        return sorted(counts, key=lambda d: (-counts[d], position.get(d, len(position)), d))

    def rank(self, question: str, modes: Sequence[str]) -> tuple[dict[str, list[str]],
                                                                dict[str, float]]:
        t0 = time.perf_counter()
        vector = self.embedder.embed([question])[0]
        t1 = time.perf_counter()
        by_vector = self.vector(vector)
        t2 = time.perf_counter()
        out: dict[str, list[str]] = {}
        timings = {"embed": (t1 - t0) * 1000}
        if "vector" in modes:
            out["vector"] = by_vector
            timings["vector"] = (t2 - t1) * 1000
        for mode in modes:
            if mode.startswith("kgr-"):
                t = time.perf_counter()
                out[mode] = self.collaboration(vector, mode)
                timings[mode] = (time.perf_counter() - t) * 1000
            if mode.startswith("hig-"):
                t = time.perf_counter()
                out[mode] = self.hig(vector, mode)
                timings[mode] = (time.perf_counter() - t) * 1000
        if "cqr" in modes:
            t = time.perf_counter()
            out["cqr"], embed_ms = self.cqr(question, vector)
            timings["cqr"] = (time.perf_counter() - t) * 1000 - embed_ms
        if "entities" in modes or "hybrid" in modes:
            by_entities = self.entities(question, by_vector)
            t3 = time.perf_counter()
            if "entities" in modes:
                out["entities"] = by_entities
                timings["entities"] = (t3 - t1) * 1000
            if "hybrid" in modes:
                scores: dict[str, float] = {}
                for ranking in (by_vector, by_entities):
                    for i, d in enumerate(ranking):
                        scores[d] = scores.get(d, 0.0) + 1.0 / (RRF_K + i + 1)
                out["hybrid"] = sorted(scores, key=lambda d: (-scores[d], d))
                timings["hybrid"] = (time.perf_counter() - t1) * 1000
        return out, timings


@dataclass
class RetrievalEval:
    questions: int = 0
    ks: tuple[int, ...] = (2, 5, 10)
    recall: dict[str, dict[str, float]] = field(default_factory=dict)
    latency_ms: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"questions": self.questions, "k": list(self.ks), "recall": self.recall,
                "latency_ms": self.latency_ms}


def evaluate(store: GraphStore, embedder: Embedder, questions: Sequence[Question], *,
             ks: Sequence[int] = (2, 5, 10), modes: Sequence[str] = MODES,
             kgr_n: int = KGR_N, kgr_lambda: float = KGR_LAMBDA,
             cqr: CqrSettings | None = None) -> RetrievalEval:
    """Recall@k of supporting documents per mode (document ids; a title counts for the
    document whose id or title it is)."""
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise LoadError(f"unknown retrieval mode {unknown[0]!r}; choose from {', '.join(MODES)}")
    ranker = Ranker(store, embedder, kgr_n=kgr_n, kgr_lambda=kgr_lambda,
                    cqr_settings=(cqr or CqrSettings()).check())
    hits: dict[str, dict[int, list[float]]] = {m: {k: [] for k in ks} for m in modes}
    times: dict[str, list[float]] = {}
    for q in questions:
        rankings, timings = ranker.rank(q.question, modes)
        for phase, ms in timings.items():
            times.setdefault(phase, []).append(ms)
        gold = set(q.supporting)
        for mode, ranking in rankings.items():
            for k in ks:
                hits[mode][k].append(len(gold & set(ranking[:k])) / len(gold))
    result = RetrievalEval(len(questions), tuple(ks))
    for mode in modes:
        result.recall[mode] = {f"recall@{k}": round(statistics.fmean(v), 4) if v else 0.0
                               for k, v in hits[mode].items()}
    for phase, values in times.items():
        values.sort()
        result.latency_ms[phase] = {"p50": round(statistics.median(values), 3),
                                    "p90": round(values[int(0.9 * (len(values) - 1))], 3)}
    return result
