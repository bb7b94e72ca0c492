"""KG-Retriever's document layer (its equation 1): ``(a)-[:SIMILAR {score}]->(b)`` from each
node of a label (Document or Chunk) to its K most similar nodes of that label.

Definitions:

* **Vectors.** A Chunk's vector is its ``embedding`` (written by the document pipeline). A
  Document's vector is the mean of its chunks' embeddings, normalised to unit length, stored
  as ``Document.embedding`` under a vector index that this module creates (MiniLM reads at
  most 256 word pieces, so embedding a whole document would embed its beginning only; the
  normalised centroid weighs every chunk and keeps L2 order equal to cosine order). A
  document without chunk embeddings has no vector and is not in the layer.
* **Score.** The cosine similarity of the two vectors, computed exactly by the engine from
  the stored vectors (Neo4j ``2 * vector.similarity.cosine - 1``, FalkorDB ``1 -
  vec.cosineDistance``), whichever method found the neighbours.
* **Neighbours.** The K' = min(K, N - 1) nodes of highest score, N the nodes of the layer;
  ties by id, ascending. kgdb's vector indexes are L2; for unit vectors d^2 = 2 - 2 cos, so
  the index's order is the cosine order (MiniLM's embeddings are normalised, and so are the
  Document vectors). A node whose index answer cannot be trusted to hold its K' nearest
  (stale FalkorDB entries, non-unit vectors) is compared with every node instead.
* **Methods.** ``gds``: Neo4j Graph Data Science's gds.knn over an in-memory projection of
  the layer, with deterministic settings (a fixed seed, one thread, every candidate sampled,
  no early stop, no cutoff, COSINE); the projection is dropped even on error. GDS's
  NN-descent is approximate, so it is asked for max(50, 3 K) neighbours and the best K are
  written (``GDS_CANDIDATES``). ``vector``: the label's vector index, one statement per
  batch of nodes. ``auto``: gds where GDS is installed, else vector. GDS breaks exact ties
  its own way; on data without exact ties both give the same edges (tests/live/test_knn.py).
* **Re-runs** rewrite only what changed. Each edge keeps ``knn_hash``, the signature of its
  source when it was computed: the ``hash`` the document pipeline sets on a Document
  (covering its text, chunks and how they were processed), a Chunk's being its document's.
  A node is *changed* when it is new or its signature differs from its edges'; the run
  recomputes the changed nodes and every other node that (1) has fewer or more than K'
  edges, or an edge to a changed node or to a node no longer in the layer, or (2) has a
  changed node at least as similar as its least similar neighbour (one statement over the
  changed nodes). Every other node keeps its edges: its neighbours' vectors did not change
  and no changed node beats them, so its top K' is the same. Incremental updates use the
  vector index (also where GDS is installed); a run from scratch happens on the first run,
  with another K, with ``full``, after a run that did not finish (the layer is marked
  incomplete while edges are written), and when more than a quarter of the nodes changed.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from kgdb.cypher import knn as cy
from kgdb.dialects.base import IndexInfo
from kgdb.engine.base import GraphStore
from kgdb.errors import KgdbError, did_you_mean
from kgdb.schema.apply import await_indexes, execute_ddl

log = logging.getLogger("kgdb")

LABELS = (cy.DOCUMENT, cy.CHUNK)
"""The labels a layer can be built for."""
METHODS = ("auto", "gds", "vector")
DEFAULT_K = 3
"""KG-Retriever's K for MuSiQue."""
BATCH = 200
"""Nodes per statement."""
FULL_FRACTION = 0.25
"""Above this share of changed nodes a run starts from scratch (cheaper than checking
every changed node against every other)."""
FLOOR_MARGIN = 1e-6
"""How much below a node's least stored score a changed node still counts as entering."""
VECTOR_TOLERANCE = 1e-6
"""A recomputed Document vector that differs from the stored one by less is not rewritten."""
GDS_SEED = 42
GDS_CANDIDATES = 50
"""gds.knn looks for max(50, 3 K) neighbours and the best K are kept. GDS's NN-descent is
approximate: on MuSiQue's 1,764 documents (MiniLM, K = 3, GDS 2.13.9, three seeds) asking
for 3 missed a true neighbour of 720 documents, for 30 of 2-7, for 50 of none."""

T = TypeVar("T")


class KnnError(KgdbError):
    """The document layer cannot be built (unknown label, no embeddings, no index, no GDS)."""


@dataclass
class KnnReport:
    label: str
    k: int
    method: str = ""
    """``gds`` or ``vector``: what computed the neighbours that were written."""
    mode: str = ""
    """``full`` (from scratch), ``incremental`` or ``unchanged`` (nothing written)."""
    reason: str = ""
    """Why a run started from scratch."""
    nodes: int = 0
    changed: int = 0
    affected: int = 0
    """Unchanged nodes whose neighbours were recomputed."""
    rewritten: int = 0
    """Nodes whose SIMILAR edges were written."""
    exact_fallbacks: int = 0
    edges: int = 0
    vectors_written: int = 0
    vectors_removed: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class _Node:
    id: str
    signature: str
    embedded: bool
    neighbours: list[str]
    scores: list[float]
    hashes: list[Any]

    @property
    def changed(self) -> bool:
        """New (no edge yet) or its signature differs from the one its edges were computed
        with."""
        return not self.hashes or any(h != self.signature for h in self.hashes)


def batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def check_label(label: str) -> str:
    if label not in LABELS:
        raise KnnError(f"unknown label {label!r} for the document layer"
                       f"{did_you_mean(label, LABELS)}; choose {' or '.join(LABELS)}")
    return label


def build_knn(store: GraphStore, *, label: str = cy.DOCUMENT, k: int = DEFAULT_K,
              method: str = "auto", full: bool = False, batch: int = BATCH) -> KnnReport:
    """Write the layer of ``label`` (see the module docstring) and report what was done."""
    t0 = time.perf_counter()
    check_label(label)
    if k < 1:
        raise KnnError(f"k must be at least 1, not {k}")
    if method not in METHODS:
        raise KnnError(f"unknown method {method!r}{did_you_mean(method, METHODS)}; "
                       f"choose one of {', '.join(METHODS)}")
    report = KnnReport(label=label, k=k)
    indexes = store.indexes()
    dimension = _chunk_dimension(store, indexes)
    if label == cy.DOCUMENT:
        _ensure_document_index(store, indexes, dimension, report)
    use_gds = _use_gds(store, method)
    state = _read_state(store, label)
    if label == cy.DOCUMENT and _refresh_document_vectors(store, state, report, batch):
        state = _read_state(store, label)
    members = {n.id: n for n in state if n.embedded}
    if not members:
        what = ("has chunks with embeddings" if label == cy.DOCUMENT else "has an embedding")
        raise KnnError(f"no :{label} node {what} in {store.address}: load documents first "
                       "(kgdb load documents PATH)")
    outsiders = [n.id for n in state if not n.embedded and n.neighbours]
    for part in batches(outsiders, 1000):
        store.run(cy.delete_similar_from(store.dialect, label, part))
    k_eff = min(k, len(members) - 1)
    changed = sorted(i for i, n in members.items() if n.changed)
    report.nodes, report.changed = len(members), len(changed)
    reason = "requested" if full else _full_reason(store, label, k, len(changed), len(members))
    if reason:
        report.mode, report.reason = "full", reason
        report.method = "gds" if use_gds else "vector"
        store.run(cy.mark_layer(label, k, report.method, False))
        _delete_layer(store, label)
        if use_gds:
            _gds_build(store, label, members, k_eff)
            report.rewritten = len(members)
        else:
            _recompute(store, label, sorted(members), members, k_eff, batch, report)
        store.run(cy.mark_layer(label, k, report.method, True))
    else:
        affected = _affected(store, label, members, changed, k_eff)
        report.affected = len(affected)
        todo = changed + affected
        if todo:
            report.mode, report.method = "incremental", "vector"
            store.run(cy.mark_layer(label, k, report.method, False))
            _recompute(store, label, todo, members, k_eff, batch, report)
            store.run(cy.mark_layer(label, k, report.method, True))
        else:
            report.mode = "unchanged"
    report.edges = int(store.run(cy.count_similar(store.dialect, label)).value(0))
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def similar_edges(store: GraphStore, label: str = cy.DOCUMENT) -> list[tuple[str, str, float]]:
    """The layer's edges as (source, target, score), by source, best first."""
    rows = store.run(cy.similar_edges(store.dialect, check_label(label))).records()
    return [(str(r["source"]), str(r["target"]), float(r["score"])) for r in rows]


# ---------------------------------------------------------------------- preparation

def _chunk_dimension(store: GraphStore, indexes: Iterable[IndexInfo]) -> int:
    for info in indexes:
        if (info.kind == "vector" and info.label == cy.CHUNK
                and info.properties == (cy.EMBEDDING,) and info.dimension):
            return info.dimension
    raise KnnError(f"no vector index on :{cy.CHUNK}({cy.EMBEDDING}) in {store.address}: "
                   "load documents first (kgdb load documents PATH) or apply a schema "
                   "(kgdb schema apply)")


def _ensure_document_index(store: GraphStore, indexes: Iterable[IndexInfo], dimension: int,
                           report: KnnReport) -> None:
    key = ("vector", "node", cy.DOCUMENT, (cy.EMBEDDING,))
    if any(info.key == key for info in indexes):
        return
    for op in store.dialect.create_vector_index(cy.DOCUMENT, cy.EMBEDDING, dimension):
        execute_ddl(store, op)
    await_indexes(store, vectors=[IndexInfo("vector", "node", cy.DOCUMENT, (cy.EMBEDDING,),
                                            options={"dimension": dimension})])
    report.notes.append(f"created the vector index on :{cy.DOCUMENT}({cy.EMBEDDING}), "
                        f"{dimension} dims")


def _use_gds(store: GraphStore, method: str) -> bool:
    if method == "vector":
        return False
    present = any(p["name"] == "gds" for p in store.plugins())
    if method == "gds" and not present:
        raise KnnError(f"--method gds needs Neo4j Graph Data Science, which {store.address} "
                       "does not have; use --method vector (or auto)")
    return present


def _read_state(store: GraphStore, label: str) -> list[_Node]:
    statement = cy.layer_state(store.dialect, label,
                               signature_from_document=label == cy.CHUNK)
    return [_Node(id=str(r["id"]), signature=str(r["signature"] or ""),
                  embedded=bool(r["embedded"]), neighbours=[str(x) for x in r["neighbours"]],
                  scores=[float(x) for x in r["scores"]], hashes=list(r["hashes"]))
            for r in store.run(statement).records() if r["id"] is not None]


def _refresh_document_vectors(store: GraphStore, state: Sequence[_Node], report: KnnReport,
                              batch: int) -> bool:
    """Compute the vectors of new and changed documents; write those that differ, remove
    those of documents left without chunk embeddings. True when something was written."""
    d = store.dialect
    todo = [n.id for n in state if not n.embedded or n.changed]
    writes: list[tuple[str, list[float]]] = []
    removes: list[str] = []
    for part in batches(todo, batch):
        for row in store.run(cy.document_chunk_vectors(d, part)).records():
            vector = document_vector(row["vectors"])
            current = row["current"]
            if vector is None:
                if current is not None:
                    removes.append(str(row["id"]))
                continue
            if current is None or len(current) != len(vector) or float(
                    np.max(np.abs(np.asarray(current, dtype=np.float64) - vector))
            ) > VECTOR_TOLERANCE:
                writes.append((str(row["id"]), vector.tolist()))
    for vectors in batches(writes, batch):
        store.run(cy.set_document_vectors(d, vectors))
    for ids in batches(removes, 1000):
        store.run(cy.remove_document_vectors(d, ids))
    report.vectors_written, report.vectors_removed = len(writes), len(removes)
    return bool(writes or removes)


def document_vector(chunk_vectors: Iterable[Sequence[float] | None]) -> np.ndarray | None:
    """The mean of the chunk embeddings, normalised to unit length (None without any)."""
    rows = [v for v in chunk_vectors if v is not None and len(v)]
    if not rows:
        return None
    mean = np.asarray(rows, dtype=np.float64).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    if not np.isfinite(norm) or norm == 0.0:
        return None
    return mean / norm


def _full_reason(store: GraphStore, label: str, k: int, changed: int, nodes: int) -> str:
    meta = store.run(cy.read_layer(label)).single()
    if meta is None:
        return "first build"
    if meta["k"] != k:
        return f"k changed from {meta['k']} to {k}"
    if not meta["complete"]:
        return "the previous run did not finish"
    if changed > FULL_FRACTION * nodes:
        return f"{changed} of {nodes} nodes changed"
    return ""


# ---------------------------------------------------------------------- neighbours

def _affected(store: GraphStore, label: str, members: dict[str, _Node],
              changed: Sequence[str], k_eff: int) -> list[str]:
    """The unchanged nodes whose neighbours must be recomputed (module docstring, rule 1 and
    rule 2)."""
    changed_set = set(changed)
    stable = {i for i in members if i not in changed_set}
    out = {i for i in stable
           if len(set(members[i].neighbours)) != k_eff
           or len(members[i].neighbours) != k_eff
           or any(v not in stable for v in members[i].neighbours)}
    for part in batches(list(changed), 500):
        rows = store.run(cy.entering_nodes(store.dialect, label, part, FLOOR_MARGIN)).records()
        out.update(str(r["id"]) for r in rows if str(r["id"]) in stable)
    return sorted(out)


def _best(candidates: Sequence[Sequence[Any]], k: int) -> list[tuple[str, float]]:
    """The ``k`` best ``[id, score]`` candidates: score descending, then id ascending."""
    pairs = {str(c[0]): float(c[1]) for c in candidates}
    return sorted(pairs.items(), key=lambda p: (-p[1], p[0]))[:k]


def _recompute(store: GraphStore, label: str, ids: Sequence[str], members: dict[str, _Node],
               k_eff: int, batch: int, report: KnnReport) -> None:
    d = store.dialect
    for part in batches(list(ids), batch):
        lists: dict[str, list[tuple[str, float]]] = {i: [] for i in part}
        if k_eff > 0:
            rows = {str(r["id"]): r for r in
                    store.run(cy.nearest_by_index(d, label, part, k_eff)).records()}
            short = []
            for i in part:
                row = rows.get(i)
                if row is None or int(row["live"] or 0) < k_eff or len(row["neighbours"]) < k_eff:
                    short.append(i)
                else:
                    lists[i] = _best(row["neighbours"], k_eff)
            if short:
                report.exact_fallbacks += len(short)
                for row in store.run(cy.nearest_by_scan(d, label, short, k_eff)).records():
                    lists[str(row["id"])] = _best(row["neighbours"], k_eff)
        store.run(cy.replace_similar(d, label, [
            {"id": i, "hash": members[i].signature,
             "neighbours": [{"id": j, "score": s} for j, s in lists[i]]} for i in part]))
        report.rewritten += len(part)


def _delete_layer(store: GraphStore, label: str) -> None:
    while int(store.run(cy.delete_similar(store.dialect, label, 10_000)).value(0)):
        pass


def _gds_build(store: GraphStore, label: str, members: dict[str, _Node], k_eff: int) -> None:
    """gds.knn over a projection of the layer, dropped even when a step fails; then every
    edge gets its source's signature."""
    d = store.dialect
    graph = f"kgdb_knn_{label.lower()}_{uuid.uuid4().hex[:12]}"
    candidates = min(len(members) - 1, max(GDS_CANDIDATES, 3 * k_eff))
    try:
        store.run(cy.gds_project(d, label, graph))
        if k_eff > 0:
            store.run(cy.gds_knn_similar(d, label, graph, k_eff, candidates, GDS_SEED))
    except BaseException:
        with contextlib.suppress(KgdbError):
            store.run(cy.gds_drop(d, graph))
        raise
    store.run(cy.gds_drop(d, graph))
    for part in batches(sorted(members), 1000):
        store.run(cy.sign_similar(d, label, [(i, members[i].signature) for i in part]))
