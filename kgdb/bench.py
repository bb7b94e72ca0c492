"""Benchmarks that print numbers; never timed assertions in tests."""

from __future__ import annotations

import dataclasses
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kgdb.config import Settings
from kgdb.errors import KgdbError


def bench_load(settings: Settings, file: Path, *, sep: str | None = None, cold: bool = False,
               keep: bool = False, mode: str = "auto", progress: bool = True) -> dict[str, Any]:
    """Load ``file`` into a fresh graph; cold uses an empty embedding cache."""
    from kgdb.cypher.explore import count_nodes
    from kgdb.embed import CachedEmbedder, EmbeddingCache, default_embedder
    from kgdb.engine import connect
    from kgdb.load.triples import load_triples

    if settings.embedded:
        settings = dataclasses.replace(settings, graph=f"bench_{uuid.uuid4().hex[:8]}")
    store = connect(settings)
    tmp = None
    try:
        if store.run(count_nodes()).value(0):
            raise KgdbError(f"bench load needs an empty graph; {store.address} has data")
        embedder = default_embedder()
        if cold:
            tmp = tempfile.TemporaryDirectory(prefix="kgdb-bench-cache-")
            embedder = CachedEmbedder(embedder.inner,
                                      EmbeddingCache(Path(tmp.name) / "embeddings.sqlite"))
        started = time.perf_counter()
        report = load_triples(store, embedder, file, sep=sep, progress=progress, mode=mode)
        total = time.perf_counter() - started
        return {
            "file": str(file), "engine": store.dialect.NAME, "cache": "cold" if cold else "warm",
            "mode": report.mode,
            "triples": report.triples, "entities": report.entities_seen,
            "relation_types": len(report.predicates),
            "total_s": round(total, 2),
            "embedding_s": round(report.embed_seconds, 2),
            "entities_per_s": round(report.entities_seen / total, 1),
            "triples_per_s": round(report.triples / total, 1),
            "embedded_texts": embedder.misses, "cached_texts": embedder.hits,
        }
    finally:
        if not keep and settings.embedded:
            store.drop()
        store.close()
        if tmp is not None:
            tmp.cleanup()


def bench_procedures(store: Any, embedder: Any, question: str, options: dict[str, Any], *,
                     runs: int = 20, answer: bool = True) -> dict[str, Any]:
    """Latency of ``CALL custom.kgdb.ask`` (or ``askEvidence`` without ``answer``) through
    the database and its relay to kgdb serve, against the same solver run in-process (what
    ``kgdb ask`` runs after its start-up): p50/p90 in ms over ``runs`` after one warm-up."""
    from kgdb.cypher import procedures as cy
    from kgdb.measure import percentile
    from kgdb.retrieve.ask import ask, llm_needed, retrieve
    from kgdb.retrieve.registry import parse_options

    parsed = parse_options(options)
    llm = None
    if answer or llm_needed(parsed, answer=False):
        from kgdb.llm import ChatClient

        llm = ChatClient()

    def in_process() -> None:
        if answer:
            ask(store, embedder, llm, question, parsed)
        else:
            retrieve(store, embedder, question, parsed, llm)

    statement = cy.call_relay("ask" if answer else "askEvidence", question, options)

    def through_database() -> None:
        store.run(statement).records()

    out: dict[str, Any] = {"question": question, "options": options, "runs": runs,
                           "procedure": f"custom.kgdb.{'ask' if answer else 'askEvidence'}"}
    for name, call in (("kgdb_ask_in_process", in_process),
                       ("cypher_procedure", through_database)):
        call()
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            call()
            times.append((time.perf_counter() - started) * 1000)
        out[name] = {"p50_ms": round(percentile(times, 50), 2),
                     "p90_ms": round(percentile(times, 90), 2)}
    out["overhead_p50_ms"] = round(out["cypher_procedure"]["p50_ms"]
                                   - out["kgdb_ask_in_process"]["p50_ms"], 2)
    return out


def bench_embed(models: list[str], count: int, rounds: int = 3) -> dict[str, Any]:
    """Texts/s of each embedder on ``count`` texts of the bundled sample (its entity names and
    verbalised facts, repeated with a number so that none repeats), in alternating rounds (the
    best round counts: the machine is shared), and the largest cosine distance between the
    first model's vectors and each other's."""
    import numpy as np

    from kgdb.demo import DEFAULT_TRIPLES
    from kgdb.embed.models import inner_embedder

    facts = [line.split("|") for line in DEFAULT_TRIPLES.read_text().splitlines() if line]
    base = sorted({part for fact in facts for part in (fact[0], fact[2])}
                  | {" ".join(fact).replace("_", " ") for fact in facts})
    texts = [f"{base[i % len(base)]} {i // len(base)}" if i >= len(base) else base[i]
             for i in range(count)]
    embedders = {name: inner_embedder(name) for name in models}
    for embedder in embedders.values():
        embedder.embed(texts[:8])  # loading the model is not throughput
    best: dict[str, float] = {}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for name, embedder in embedders.items():
            began = time.perf_counter()
            vectors[name] = embedder.embed(texts)
            rate = count / (time.perf_counter() - began)
            best[name] = max(best.get(name, 0.0), rate)
    result: dict[str, Any] = {"texts": count, "rounds": rounds,
                              **{f"{name}_texts_per_s": round(rate, 1)
                                 for name, rate in best.items()}}
    first = vectors[models[0]]
    for name in models[1:]:
        other = vectors[name]
        cosine = (first * other).sum(axis=1) / (np.linalg.norm(first, axis=1)
                                                * np.linalg.norm(other, axis=1))
        result[f"max_cosine_distance_{models[0]}_vs_{name}"] = float((1.0 - cosine).max())
    return result
