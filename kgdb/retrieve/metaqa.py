"""MetaQA evaluation of SimGRAG retrieval without an LLM: the pattern a perfect model would write.

A MetaQA line is ``question<TAB>answer|answer...<TAB>type``, the topic entity in ``[brackets]``
and the type naming the relation chain in question order, e.g. ``movie_to_director_to_movie``:
topic movie -directed by- director -directed by- answer movie. The oracle pattern has the
bracketed text as its one known node, an UNKNOWN node per further step (typed by the step's
name) and natural relation phrases ("directed by", "starred", ...), never the graph's own
predicate names, so relations are still found by meaning through the RelationType index.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgdb.dsl.pattern import pattern_from_triples
from kgdb.embed import Embedder
from kgdb.engine import GraphStore
from kgdb.errors import KgdbError, LoadError
from kgdb.ir import Pattern
from kgdb.measure import summary
from kgdb.retrieve.pattern_search import Retrieval, search

RELATION_PHRASES = {
    "director": "directed by",
    "actor": "starred",
    "writer": "written by",
    "year": "release year",
    "language": "language",
    "genre": "genre",
    "tags": "tags",
    "tag": "tags",
    "imdb_rating": "imdb rating",
    "rating": "imdb rating",
    "imdb_votes": "imdb votes",
    "votes": "imdb votes",
}
"""The phrase a person would use for the relation between a movie and each kind of value."""

_TOPIC = re.compile(r"\[([^\]]+)\]")


class MetaQAError(KgdbError):
    """A MetaQA question line or type that cannot be turned into a pattern."""


@dataclass(frozen=True)
class MetaqaQuestion:
    line: int
    text: str
    topic: str
    answers: frozenset[str]
    qtype: str

    @property
    def steps(self) -> list[str]:
        return self.qtype.split("_to_")

    @property
    def hops(self) -> int:
        return len(self.steps) - 1


def read_questions(path: Path) -> list[MetaqaQuestion]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise LoadError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    out = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        fields = raw.split("\t")
        if len(fields) != 3:
            raise LoadError(f"{path}:{number}: expected question, answers and type separated "
                            f"by tabs, found {len(fields)} field(s)")
        text, answers, qtype = fields
        m = _TOPIC.search(text)
        if not m:
            raise LoadError(f"{path}:{number}: no [topic entity] in the question")
        out.append(MetaqaQuestion(number, text.strip(), m.group(1).strip(),
                            frozenset(a.strip() for a in answers.split("|") if a.strip()),
                            qtype.strip()))
    return out


def oracle_pattern(question: MetaqaQuestion) -> Pattern:
    """The pattern for ``question`` (its answer node: :func:`answer_var`)."""
    return pattern_from_triples(oracle_triples(question))


def oracle_triples(question: MetaqaQuestion) -> list[tuple[str, str, str]]:
    """The oracle pattern as SimGRAG's query graph: ``(head, relation phrase, tail)`` triples,
    the topic entity by name and the other nodes ``UNKNOWN <kind> <step>``, in chain order
    from the topic."""
    steps = question.steps
    if len(steps) < 2:
        raise MetaQAError(f"line {question.line}: question type {question.qtype!r} has no step")
    names = [question.topic] + [f"UNKNOWN {kind.replace('_', ' ')} {i}"
                                for i, kind in enumerate(steps[1:], start=1)]
    triples: list[tuple[str, str, str]] = []
    for i in range(len(steps) - 1):
        a, b = steps[i], steps[i + 1]
        if a == "movie" and b != "movie":
            kind, movie, other = b, names[i], names[i + 1]
        elif b == "movie" and a != "movie":
            kind, movie, other = a, names[i + 1], names[i]
        else:
            raise MetaQAError(f"line {question.line}: step {a}_to_{b} of {question.qtype!r} "
                              "does not go through a movie")
        if kind not in RELATION_PHRASES:
            raise MetaQAError(f"line {question.line}: no relation phrase for {kind!r}")
        triples.append((movie, RELATION_PHRASES[kind], other))
    return triples


def answer_var(question: MetaqaQuestion, pattern: Pattern) -> str:
    """The pattern variable of the answer: the UNKNOWN node of the chain's last step."""
    last = f"UNKNOWN {question.steps[-1].replace('_', ' ')} {question.hops}"
    return next(n.var for n in pattern.nodes if n.display == last)


def answer_matches(name: str, gold: frozenset[str]) -> bool:
    # MetaQA splits a few answers at commas ("Paris, Texas" -> "Paris" and "Texas").
    if name in gold:
        return True
    parts = [p.strip() for p in name.split(",")]
    return len(parts) > 1 and all(p in gold for p in parts)


@dataclass
class Outcome:
    question: MetaqaQuestion
    hit_at_k: bool
    hit_at_1: bool
    answers: list[str]
    gsds: list[float]
    timings_ms: dict[str, float]
    topic_candidates: list[tuple[str, float]] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)
    """What ran each phase (:attr:`kgdb.retrieve.pattern_search.Retrieval.paths`)."""


def evaluate_question(store: GraphStore, embedder: Embedder, question: MetaqaQuestion, *,
                      k: int = 3, **options: Any) -> tuple[Outcome, Retrieval]:
    pattern = oracle_pattern(question)
    var = answer_var(question, pattern)
    result = search(store, embedder, pattern, k=k, **options)
    names = [s.value_of(var) for s in result.subgraphs]
    hits = [answer_matches(n, question.answers) for n in names]
    topic = [(c.id, round(c.distance, 4)) for c in
             result.candidates.get(f"node:{question.topic}", [])][:5]
    return Outcome(question, any(hits), bool(hits and hits[0]), names,
                   [s.gsd for s in result.subgraphs], dict(result.timings_ms), topic,
                   dict(result.paths)), result


def evaluate(store: GraphStore, embedder: Embedder, questions: Iterable[MetaqaQuestion], *,
             k: int = 3, warmup: int = 3, **options: Any) -> dict[str, Any]:
    """Hits@k, hits@1 and latency percentiles (per phase) per hop, plus every miss."""
    questions = list(questions)
    for q in questions[:warmup]:  # plan caches, model load: not part of the measurement
        search(store, embedder, oracle_pattern(q), k=k, **options)
    by_hop: dict[int, list[Outcome]] = {}
    started = time.perf_counter()
    for q in questions:
        outcome, _ = evaluate_question(store, embedder, q, k=k, **options)
        by_hop.setdefault(q.hops, []).append(outcome)
    report: dict[str, Any] = {"k": k, "options": options, "questions": len(questions),
                              "seconds": round(time.perf_counter() - started, 2), "hops": {}}
    for hop, outcomes in sorted(by_hop.items()):
        n = len(outcomes)
        phases = {phase: summary([o.timings_ms.get(phase, 0.0) for o in outcomes])
                  for phase in ("embed", "vector", "match")}
        phases["retrieval_excluding_embed"] = summary(
            [o.timings_ms.get("vector", 0.0) + o.timings_ms.get("match", 0.0)
             for o in outcomes])
        report["hops"][f"{hop}-hop"] = {
            "questions": n,
            f"hits@{k}": round(sum(o.hit_at_k for o in outcomes) / n, 4),
            "hits@1": round(sum(o.hit_at_1 for o in outcomes) / n, 4),
            "latency_ms": phases,
            "paths": sorted({f"vector {o.paths.get('vector')}, match {o.paths.get('match')}"
                             for o in outcomes}),
            "misses": [{"line": o.question.line, "question": o.question.text,
                        "type": o.question.qtype, "gold": sorted(o.question.answers)[:5],
                        "retrieved": o.answers, "gsd": [round(g, 4) for g in o.gsds],
                        "topic_candidates": o.topic_candidates}
                       for o in outcomes if not o.hit_at_k],
        }
    return report


BEAM_KS = (1, 3, 10)


def evaluate_beam(store: GraphStore, embedder: Embedder, questions: Iterable[MetaqaQuestion], *,
                  ks: Sequence[int] = BEAM_KS, width: int = 3, direction: str = "both",
                  warmup: int = 3) -> dict[str, Any]:
    """KG-CQR's beam completion alone (kgdb/retrieve/beam.py): from each question's topic
    entity, paths of as many facts as the question has hops, scored by the question text
    only (its words, brackets removed, against the facts' triple texts); hits@k is whether a
    gold answer is among the k best path ends. Per hop: hits@k and the beam's latency
    (excluding the question's embedding)."""
    from kgdb.retrieve.beam import beam_answers

    questions = list(questions)
    texts = [q.text.replace("[", "").replace("]", "") for q in questions]
    vectors: Any = embedder.embed(texts) if texts else []
    for q, v in list(zip(questions, vectors, strict=True))[:warmup]:
        beam_answers(store, v, q.topic, width=width, max_length=q.hops, direction=direction)
    by_hop: dict[int, list[tuple[MetaqaQuestion, list[bool], float, list[str]]]] = {}
    started = time.perf_counter()
    for q, v in zip(questions, vectors, strict=True):
        t = time.perf_counter()
        answers = beam_answers(store, v, q.topic, width=width, max_length=q.hops,
                               direction=direction)
        ms = (time.perf_counter() - t) * 1000
        hits = [answer_matches(a.name, q.answers) for a in answers]
        by_hop.setdefault(q.hops, []).append((q, hits, ms, [a.name for a in answers[:3]]))
    report: dict[str, Any] = {"questions": len(questions), "k": list(ks), "width": width,
                              "direction": direction,
                              "seconds": round(time.perf_counter() - started, 2), "hops": {}}
    for hop, rows in sorted(by_hop.items()):
        n = len(rows)
        report["hops"][f"{hop}-hop"] = {
            "questions": n,
            **{f"hits@{k}": round(sum(any(h[:k]) for _, h, _, _ in rows) / n, 4) for k in ks},
            "answers_per_question": round(statistics.fmean(len(h) for _, h, _, _ in rows), 2),
            "latency_ms": summary([ms for _, _, ms, _ in rows]),
            "misses": [{"line": q.line, "question": q.text, "gold": sorted(q.answers)[:5],
                        "retrieved": names} for q, h, _, names in rows if not any(h[:ks[-1]])
                       ][:20],
        }
    return report
