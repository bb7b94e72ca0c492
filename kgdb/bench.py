"""Benchmarks that print numbers; never timed assertions in tests."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from kgdb.config import Settings
from kgdb.errors import KgdbError


@contextlib.contextmanager
def _fresh_graph(settings: Settings, what: str, *, cold: bool,
                 keep: bool) -> Iterator[tuple[Any, Any]]:
    """(store, embedder) of an empty graph (embedded: a new one), dropped or emptied
    afterwards unless ``keep`` (a server's graph only when it was empty at the start:
    everything in it is then the benchmark's); ``cold``: an empty embedding cache."""
    from kgdb.cypher.explore import count_nodes
    from kgdb.embed import CachedEmbedder, EmbeddingCache, default_embedder
    from kgdb.engine import connect

    if settings.embedded:
        settings = dataclasses.replace(settings, graph=f"bench_{uuid.uuid4().hex[:8]}")
    store = connect(settings)
    tmp = None
    ours = False
    try:
        if store.run(count_nodes()).value(0):
            raise KgdbError(f"bench {what} needs an empty graph; {store.address} has data")
        ours = True
        embedder = default_embedder()
        if cold:
            tmp = tempfile.TemporaryDirectory(prefix="kgdb-bench-cache-")
            embedder = CachedEmbedder(embedder.inner,
                                      EmbeddingCache(Path(tmp.name) / "embeddings.sqlite"))
        yield store, embedder
    finally:
        if ours and not keep:
            store.drop()
        store.close()
        if tmp is not None:
            tmp.cleanup()


def bench_load(settings: Settings, file: Path, *, sep: str | None = None, cold: bool = False,
               keep: bool = False, mode: str = "auto", progress: bool = True) -> dict[str, Any]:
    """Load ``file`` into a fresh graph; cold uses an empty embedding cache."""
    from kgdb.load.triples import load_triples

    with _fresh_graph(settings, "load", cold=cold, keep=keep) as (store, embedder):
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


def index_state(store: Any) -> dict[str, Any]:
    """How ``store`` finds nearest-node candidates (exact or approximate), the labels FalkorDB
    scans exactly (``full_scan``) and, on a Neo4j with kgdb's plugin, the state of each exact
    in-memory copy (kgdb.vectorIndexes)."""
    from kgdb.cypher.link import vector_index_state

    state: dict[str, Any] = {"vector_search": store.dialect.VECTOR_SEARCH}
    if store.dialect.full_scan:
        state["full_scan"] = sorted(store.dialect.full_scan)
    if store.dialect.NATIVE:
        state["indexes"] = [row for row in store.run(vector_index_state()).records()
                            if row["state"] != "none"]
    return state


SIDE_BY_SIDE_WARMUP = 200
"""Unmeasured retrievals per engine before kgdb bench retrieve --engines measures: a Neo4j
started just before needs JIT compilation of the plugin's screen and matching and a warm
page cache before its latency settles, and on a busy machine 200 may not be enough (hence
the rounds of _warm_up); see docs/design/neo4j-latency.md."""


class SideBySideEngine(Protocol):
    """What :func:`bench_side_by_side` runs: a database through kgdb (:class:`StoreEngine`),
    or other code answering the same oracle patterns (benchmarks/simgrag_reference.py: the
    SimGRAG authors' retriever)."""

    address: str

    def evaluate(self, embedder: Any, question: Any, *, k: int, **options: Any) -> Any:
        """One question's :class:`kgdb.retrieve.metaqa.Outcome` (``timings_ms``: ``embed``,
        ``vector``, ``match``, optionally ``vector_in_server``)."""

    def index_state(self) -> dict[str, Any]:
        """How it finds candidates (``vector_search``: exact or approximate, and how)."""


class StoreEngine:
    """kgdb's SimGRAG retrieval on one database."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.address = store.address

    def evaluate(self, embedder: Any, question: Any, *, k: int, **options: Any) -> Any:
        from kgdb.retrieve.metaqa import evaluate_question

        return evaluate_question(self.store, embedder, question, k=k, **options)[0]

    def index_state(self) -> dict[str, Any]:
        return index_state(self.store)


def bench_side_by_side(stores: dict[str, Any], embedder: Any, questions: list[Any], *,
                       k: int = 3, warmup: int = SIDE_BY_SIDE_WARMUP,
                       **options: Any) -> dict[str, Any]:
    """SimGRAG retrieval of MetaQA oracle patterns on several stores in one run, alternating
    question by question (the same load on every engine): per hop and engine the phase split
    (vector search, matching, glue: the rest of the retrieval outside the two; total: all
    but the question's embedding; with kgdb's one-call procedure also the searches' time in
    the server, ``vector_in_server``), hits@k, and whether the top-k GSDs equal the first
    engine's for every question (the ones that differ are listed); paired ratios of totals
    against each engine before it (the first engine's first); the CPU, the load average and
    each engine's index state.

    First at least ``warmup`` unmeasured retrievals per engine, alternating, cycling through
    the questions hop by hop (every hop's statements planned and compiled); the report gives
    the p50 total of each warm-up round (a cold JVM is several times slower than a warm one: see
    :func:`_warm_up`).

    ``stores``: name -> a GraphStore (kgdb's retrieval on it) or a :class:`SideBySideEngine`."""
    from kgdb.measure import cpu_model, load_average, summary

    stores = {name: s if hasattr(s, "evaluate") else StoreEngine(s) for name, s in stores.items()}
    names = list(stores)
    first = names[0]
    result: dict[str, Any] = {
        "k": k, "options": options,
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                    "load_average_at_start": load_average()},
        "engines": {name: {"address": store.address} for name, store in stores.items()},
        "hops": {}}
    by_hop: dict[int, list[Any]] = {}
    for q in questions:
        by_hop.setdefault(q.hops, []).append(q)
    result["warmup"] = _warm_up(stores, embedder, by_hop, warmup, k=k, **options)
    for hop, qs in sorted(by_hop.items()):
        phases: dict[str, dict[str, list[float]]] = {
            n: {"vector": [], "match": [], "glue": [], "total": []} for n in names}
        hits = dict.fromkeys(names, 0)
        gsds: dict[str, list[list[float]]] = {n: [] for n in names}
        paths: dict[str, set[str]] = {n: set() for n in names}
        for q in qs:
            for name, store in stores.items():
                started = time.perf_counter()
                outcome = store.evaluate(embedder, q, k=k, **options)
                wall = (time.perf_counter() - started) * 1000
                t = outcome.timings_ms
                total = wall - t.get("embed", 0.0)
                phases[name]["vector"].append(t.get("vector", 0.0))
                phases[name]["match"].append(t.get("match", 0.0))
                phases[name]["glue"].append(total - t.get("vector", 0.0) - t.get("match", 0.0))
                phases[name]["total"].append(total)
                if "vector_in_server" in t:
                    phases[name].setdefault("vector_in_server", []).append(t["vector_in_server"])
                hits[name] += outcome.hit_at_k
                gsds[name].append(outcome.gsds)
                paths[name].add(f"vector {outcome.paths.get('vector')}, "
                                f"match {outcome.paths.get('match')}")
        row: dict[str, Any] = {"questions": len(qs), "load_average": load_average()}
        for name in names:
            tolerance = max(_gsd_tolerance(stores[first]), _gsd_tolerance(stores[name]))
            differ = [q.line for q, a, b in zip(qs, gsds[first], gsds[name], strict=True)
                      if not _same_gsds(a, b, tolerance)]
            row[name] = {
                "latency_ms": {phase: {key: s[key] for key in ("p50", "p90")}
                               for phase, values in phases[name].items()
                               for s in [summary(values)]},
                f"hits@{k}": round(hits[name] / len(qs), 4),
                f"gsds_equal_to_{first}": f"{len(qs) - len(differ)}/{len(qs)}",
                "differing_lines": differ[:20],
                "paths": sorted(paths[name])}
            for other in names[:names.index(name)]:  # the first engine's ratio first
                ratios = [b / a for a, b in zip(phases[other]["total"], phases[name]["total"],
                                                strict=True) if a > 0]
                row[name][f"paired_ratio_total_to_{other}_p50"] = summary(ratios)["p50"]
        result["hops"][f"{hop}-hop"] = row
    result["machine"]["load_average_at_end"] = load_average()
    for name, store in stores.items():
        result["engines"][name]["index_state"] = store.index_state()
    return result


WARMUP_ROUND = 50
"""Retrievals per engine in one warm-up round (see :func:`_warm_up`)."""


def _warm_up(stores: dict[str, Any], embedder: Any, by_hop: dict[int, list[Any]], count: int,
             **options: Any) -> dict[str, Any]:
    """Unmeasured retrievals (plan caches, the JIT, in-memory copies, the page cache),
    alternating engines, the hops taking turns, in rounds of :data:`WARMUP_ROUND` (or
    ``count`` if fewer): at least ``count`` per engine, then more rounds while an engine's
    round p50 is still 10 % below its previous round's (a JVM still compiling), up to 5 x
    ``count``. Reported: the retrievals per engine, and each engine's p50 total (ms,
    embedding included) in the first and the last round."""
    from kgdb.measure import summary

    hops = [qs for _, qs in sorted(by_hop.items()) if qs]
    if not hops or count <= 0:
        return {"retrievals": 0}
    size = min(WARMUP_ROUND, count)
    rounds: dict[str, list[float]] = {name: [] for name in stores}
    done = 0
    while True:
        times: dict[str, list[float]] = {name: [] for name in stores}
        for i in range(done, done + size):
            qs = hops[i % len(hops)]
            q = qs[(i // len(hops)) % len(qs)]
            for name, store in stores.items():
                started = time.perf_counter()
                store.evaluate(embedder, q, **options)
                times[name].append((time.perf_counter() - started) * 1000)
        done += size
        for name, t in times.items():
            rounds[name].append(summary(t)["p50"])
        settling = any(len(r) > 1 and r[-1] < 0.9 * r[-2] for r in rounds.values())
        if done >= 5 * count or (done >= count and not settling):
            break
    return {"retrievals": done, "rounds_p50_ms": rounds}


GSD_TOLERANCE = 1e-6
"""GSDs this close are equal: FalkorDB stores vectors in float32 and Neo4j in float64, so the
same exact distance differs between them by about 1e-7. An engine may declare a larger
``gsd_tolerance`` (the SimGRAG authors' code takes the square root of Milvus' float32 squared
L2, so a distance of 0 comes back as about 1e-3)."""


def _gsd_tolerance(engine: Any) -> float:
    return float(getattr(engine, "gsd_tolerance", GSD_TOLERANCE))


def _same_gsds(a: list[float], b: list[float], tolerance: float = GSD_TOLERANCE) -> bool:
    """The same multiset of GSDs, to ``tolerance``."""
    return len(a) == len(b) and all(abs(x - y) <= tolerance for x, y in
                                    zip(sorted(a), sorted(b), strict=True))


WARMUP_ROUNDS = 5
"""Unmeasured rounds before kgdb bench bi's: plan caches, the JIT, the driver's pool."""


def bench_bi(store: Any, *, text: str, rules: dict[str, Any], facts: dict[str, Any],
             runs: int = 50) -> dict[str, Any]:
    """Latency of what BI tools call on Neo4j, p50/p90 in ms over ``runs`` rounds (each path
    once per round, after :data:`WARMUP_ROUNDS`): ``kgdb.entities`` (kgdb's plugin),
    ``custom.kgdb.entities`` (APOC Extended), and each rule set's ask-time, as the one Cypher
    statement ``kgdb rules eval`` runs (no APOC) and as ``custom.kgdb.rules.<name>``. A path
    that is not installed shows its one-line error."""
    from kgdb.cypher import procedures as cy
    from kgdb.cypher import rules as cy_rules
    from kgdb.errors import KgdbError
    from kgdb.measure import cpu_model, load_average, summary
    from kgdb.statement import Statement

    calls: dict[str, Statement] = {
        "kgdb.entities": cy.call_entities(text, 10, native=True),
        "custom.kgdb.entities": cy.call_entities(text, 10, native=False)}
    for name, ruleset in sorted(rules.items()):
        calls[f"rules {name}: ask statement"] = cy_rules.judge_facts(
            cy_rules.evaluate_facts(store.dialect, ruleset), facts)
        calls[f"custom.kgdb.rules.{name}"] = cy.call_ruleset(name, facts)
    out: dict[str, Any] = {"text": text, "facts": facts, "runs": runs,
                           "engine": store.dialect.NAME, "native": store.dialect.NATIVE,
                           "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                                       "load_average_at_start": load_average()}}
    rows: dict[str, int] = {}
    for name, statement in calls.items():
        try:
            rows[name] = len(store.run(statement).records())
        except KgdbError as exc:
            out[name] = {"error": str(exc).splitlines()[0][:300]}
    times: dict[str, list[float]] = {name: [] for name in rows}
    for round_ in range(WARMUP_ROUNDS + runs):  # round-robin: the same load on every path
        for name in list(times):
            started = time.perf_counter()
            try:
                store.run(calls[name]).records()
            except KgdbError as exc:  # e.g. an APOC custom procedure dropped meanwhile
                out[name] = {"error": str(exc).splitlines()[0][:300]}
                del times[name]
                continue
            if round_ >= WARMUP_ROUNDS:
                times[name].append((time.perf_counter() - started) * 1000)
    for name, values in times.items():
        s = summary(values)
        out[name] = {"rows": rows[name], "p50_ms": s["p50"], "p90_ms": s["p90"]}
    out["machine"]["load_average_at_end"] = load_average()
    return out


def scaled_corpus(base: Path, extra: list[Path], passages: int,
                  distinct: int | None = None) -> list[dict[str, str]]:
    """A corpus of ``passages`` records (``{id, title, text}``, one per paragraph): every
    passage of ``base`` as it is, then the documents of ``extra`` (real distractors) under the
    ids ``x1:<id>``, then again as ``x2:<id>``, ``x3:<id>``... until ``passages`` are reached.
    A repeat keeps its title and text, so it is a distinct document whose chunks embed to the
    cached vectors of the first pass (the graph grows; the embedding bill does not).
    ``distinct``: use only the first ``distinct`` documents of ``extra``."""
    from kgdb.documents.readers import read_corpus

    def records(doc: Any, ident: str) -> list[dict[str, str]]:
        return [{"id": ident, "title": doc.title, "text": s.text} for s in doc.sections]

    out = [r for doc in read_corpus(base) for r in records(doc, doc.id)]
    extras = [doc for path in extra for doc in read_corpus(path)][:distinct]
    if len(out) > passages:
        raise KgdbError(f"{base} has {len(out)} passages, more than the {passages} asked for")
    if not extras and len(out) < passages:
        raise KgdbError(f"{passages} passages need more than the {len(out)} of {base}: "
                        "give a corpus of extra documents")
    repeat = 0
    while len(out) < passages:
        repeat += 1
        for doc in extras:
            out += records(doc, f"x{repeat}:{doc.id}")[:passages - len(out)]
            if len(out) >= passages:
                break
    return out


def bench_documents(settings: Settings, paths: list[Path], *, options: Any, parts: int = 4,
                    cold: bool = False, keep: bool = False,
                    progress: bool = True) -> dict[str, Any]:
    """Load the documents of ``paths`` into a fresh graph in ``parts`` consecutive loads and
    report each one's documents/s, embedding time and statements per batch beside the graph's
    size before it: a load whose cost grows with the graph shows here."""
    from kgdb.documents.pipeline import write_documents
    from kgdb.documents.readers import read_documents

    documents = read_documents(paths)
    with _fresh_graph(settings, "documents", cold=cold, keep=keep) as (store, embedder):
        size = max(1, -(-len(documents) // parts))
        rows, loaded = [], 0
        for start in range(0, len(documents), size):
            part = documents[start:start + size]
            report = write_documents(store, embedder, part, options=options, progress=progress)
            rows.append({
                "documents_before": loaded, "documents": len(part),
                "seconds": report.seconds, "embedding_s": report.embed_seconds,
                "documents_per_s": round(len(part) / report.seconds, 1),
                "documents_per_s_without_embedding": round(
                    len(part) / max(report.seconds - report.embed_seconds, 1e-9), 1),
                "chunks": report.chunks, "batches": report.batches,
                "statements_per_batch": round(report.statements / max(report.batches, 1), 1),
                "most_statements_per_batch": report.most_statements_per_batch,
                "load": round(os.getloadavg()[0], 2)})
            loaded += len(part)
        total = sum(r["seconds"] for r in rows)
        return {"paths": [str(p) for p in paths], "engine": store.dialect.NAME,
                "cache": "cold" if cold else "warm", "documents": loaded,
                "extract": options.extract, "title_entity": options.title_entity,
                "mention_facts": options.mention_facts, "total_s": round(total, 2),
                "documents_per_s": round(loaded / total, 1) if total else None,
                "embedded_texts": embedder.misses, "cached_texts": embedder.hits,
                "parts": rows}
