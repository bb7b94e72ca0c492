"""Document retrieval without an LLM, and its evaluation (``kgdb eval retrieval``).

A mode is a solver of :mod:`kgdb.retrieve.registry` with options: ``vector``,
``document-graph:facts=0,strategy=attentive``. Each question is retrieved with each mode
exactly as ``kgdb retrieve`` would (the solver's options, with enough passages read to rank
the largest cut-off's documents), and the evidence's document ranking is scored.

Recall@k is the share of a question's supporting documents among its top-k documents,
averaged over the questions. Latency is each retrieval's time in the graph, excluding
embedding (the question's, and KG-CQR's context's).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgdb.embed import Embedder
from kgdb.engine import GraphStore
from kgdb.errors import LoadError
from kgdb.measure import elapsed_ms, summary
from kgdb.retrieve.registry import parse_options, solver_named
from kgdb.retrieve.solver import AskError, SolverOptions

DEFAULT_MODES = ("vector", "entities", "hybrid")


@dataclass(frozen=True)
class Mode:
    """A named retrieval mode: a solver and its options."""

    label: str
    options: SolverOptions


def parse_mode(spec: str) -> Mode:
    """``SOLVER[:OPTION=VALUE[,OPTION=VALUE...]]`` (``document-graph:facts=0``); values are
    read as JSON where they parse (numbers, true/false), else as text."""
    name, _, rest = spec.strip().partition(":")
    values: dict[str, object] = {"solver": solver_named(name.strip()).name}
    for item in filter(None, (i.strip() for i in rest.split(","))):
        key, eq, raw = item.partition("=")
        if not eq:
            raise AskError(f"mode {spec!r}: {item!r} is not OPTION=VALUE")
        try:
            values[key.strip().replace("-", "_")] = json.loads(raw)
        except json.JSONDecodeError:
            values[key.strip().replace("-", "_")] = raw.strip()
    from pydantic import ValidationError

    try:
        options = parse_options(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise AskError(f"mode {spec!r}: {error['loc'][-1]}: {error['msg']}") from exc
    label = str(values["solver"]) + (":" + rest.strip() if rest.strip() else "")
    return Mode(label, options)


def parse_modes(specs: Sequence[str]) -> list[Mode]:
    """Modes from ``--mode`` values: each one mode spec, or plain solver names separated by
    commas (``vector,entities,hybrid``)."""
    out: list[Mode] = []
    for spec in specs:
        parts = [spec] if ":" in spec else [p for p in spec.split(",") if p.strip()]
        out += [parse_mode(p) for p in parts]
    return out


class _QuestionVectors(Embedder):
    """The evaluation's embedder: each question embedded once for every mode."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self._memo: dict[str, np.ndarray] = {}

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            if len(self._memo) > 4096:
                self._memo.clear()
            self._memo.update(zip(missing, self.inner.embed(missing), strict=True))
        return np.stack([self._memo[t] for t in texts]) if texts else \
            np.zeros((0, self.dimension), dtype=np.float32)


@dataclass(frozen=True)
class RetrievalQuestion:
    question: str
    supporting: tuple[str, ...]
    id: str = ""


def read_questions(path: Path) -> list[RetrievalQuestion]:
    """JSONL ``{question, supporting: [document ids or titles], id?}``, or MuSiQue's own
    ``questions.json`` (a list whose items have ``paragraphs`` with ``is_supporting``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LoadError(f"{path}: cannot read the questions: {exc}") from exc
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LoadError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from exc
        return [musique_question(f"{path}: item {i}", item) for i, item in enumerate(items, 1)]
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LoadError(f"{path}:{number}: not JSON ({exc.msg})") from exc
        if not isinstance(item, dict) or not isinstance(item.get("question"), str) or \
                not isinstance(item.get("supporting"), list) or not item["supporting"]:
            raise LoadError(f"{path}:{number}: a question is {{question, supporting: [...]}}")
        out.append(RetrievalQuestion(item["question"], tuple(str(s) for s in item["supporting"]),
                            str(item.get("id", number))))
    return out


def musique_question(where: str, item: Any) -> RetrievalQuestion:
    """A MuSiQue question: its supporting paragraphs' titles are the supporting documents."""
    if not isinstance(item, dict) or "paragraphs" not in item or "question" not in item:
        raise LoadError(f"{where}: not a MuSiQue question (question, paragraphs)")
    titles = tuple(dict.fromkeys(p["title"] for p in item["paragraphs"] if p.get("is_supporting")))
    if not titles:
        raise LoadError(f"{where}: the question has no supporting paragraph")
    return RetrievalQuestion(item["question"], titles, str(item.get("id", "")))


@dataclass
class RetrievalEval:
    questions: int = 0
    ks: tuple[int, ...] = (2, 5, 10)
    recall: dict[str, dict[str, float]] = field(default_factory=dict)
    latency_ms: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"questions": self.questions, "k": list(self.ks), "recall": self.recall,
                "latency_ms": self.latency_ms}


def _documents_named(store: GraphStore, names: set[str]) -> dict[str, set[str]]:
    """Supporting-document name (an id or a title) -> the ids of the documents it names."""
    from kgdb.cypher.documents import documents_named

    out: dict[str, set[str]] = {}
    if names:
        for row in store.run(documents_named(sorted(names))).records():
            out.setdefault(str(row["wanted"]), set()).add(str(row["id"]))
    return out


def evaluate(store: GraphStore, embedder: Embedder, questions: Sequence[RetrievalQuestion], *,
             ks: Sequence[int] = (2, 5, 10), modes: Sequence[Mode] | None = None,
             progress: bool = False) -> RetrievalEval:
    """Recall@k of supporting documents per mode (document ids; a title counts for the
    document whose id or title it is), and each mode's latency without embedding."""
    from kgdb.progress import progress_bar

    modes = list(modes) if modes is not None else parse_modes(DEFAULT_MODES)
    vectors = _QuestionVectors(embedder)
    plans = [(m.label, solver_named(m.options.solver), m.options) for m in modes]
    plans = [(label, solver, solver.for_recall(options, max(ks))) for label, solver, options
             in plans]
    hits: dict[str, dict[int, list[float]]] = {label: {k: [] for k in ks} for label, *_ in plans}
    times: dict[str, list[float]] = {label: [] for label, *_ in plans}
    times["embed"] = []
    named = _documents_named(store, {s for q in questions for s in q.supporting})
    for q in progress_bar(questions, desc="questions", unit="q", disable=not progress, leave=False):
        start = time.perf_counter()
        vectors.embed([q.question])
        times["embed"].append(elapsed_ms(start))
        # each supporting document: the ids it names (by id or title), or itself if none
        gold = [named.get(s) or {s} for s in dict.fromkeys(q.supporting)]
        for label, solver, options in plans:
            evidence = solver.retrieve(store, vectors, q.question, options)
            times[label].append(evidence.retrieval_ms)
            ranking = [d.id for d in evidence.documents]
            for k in ks:
                top = set(ranking[:k])
                hits[label][k].append(sum(1 for ids in gold if ids & top) / len(gold))
    result = RetrievalEval(len(questions), tuple(ks))
    for label, *_ in plans:
        result.recall[label] = {f"recall@{k}": round(statistics.fmean(v), 4) if v else 0.0
                                for k, v in hits[label].items()}
    for phase, values in times.items():
        if values:
            found = summary(values)
            result.latency_ms[phase] = {"p50": found["p50"], "p90": found["p90"]}
    return result
