"""The embedded FalkorDB searches a small label's vectors exactly, by a scan
(``KGDB_FULL_SCAN``, default 10,000 nodes), and a larger one through its HNSW index, whose
top-k depends on what the index happened to return; kgdb's own writes move a label across the
limit at once, other clients' within ``FULL_SCAN_RECHECK_S``."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

LABEL = "V"
DIM = 48


def _fill(store: Any, start: int, count: int, rng: np.random.Generator) -> np.ndarray:
    # Clustered unit vectors: many near-ties around each centre, where HNSW is weakest.
    centres = rng.standard_normal((8, DIM))
    rows = centres[rng.integers(0, 8, count)] + 0.35 * rng.standard_normal((count, DIM))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    store.run("UNWIND $rows AS r CREATE (:V {id: r.id, embedding: vecf32(r.v)})",
              {"rows": [{"id": start + i, "v": v} for i, v in enumerate(rows.tolist())]},
              write=True)
    return rows.astype(np.float32)


def _index(store: Any) -> None:
    from kgdb.schema.apply import await_indexes

    store.run(f"CREATE VECTOR INDEX FOR (n:V) ON (n.embedding) OPTIONS {{dimension: {DIM}, "
              "similarityFunction: 'euclidean'}", write=True)
    await_indexes(store)


def _nearest(store: Any, query: np.ndarray, k: int) -> tuple[str, list[int], list[float]]:
    d = store.dialect
    text = (f"{d.nearest_top(LABEL, 'embedding', '$k', '$vector', d.vector_value('$vector'))}"
            "\nRETURN node.id AS id, distance ORDER BY distance ASC, id ASC LIMIT $k")
    rows = store.run(text, {"k": k, "vector": query.tolist()}).records()
    return text, [r["id"] for r in rows], [r["distance"] for r in rows]


def test_small_labels_are_scanned_exactly(falkordb_store: Any,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the limit every query's k nearest equal numpy's over the same float32 vectors,
    without the index (a node without a vector is skipped); at KGDB_FULL_SCAN=0 the same
    query asks the index."""
    rng = np.random.default_rng(11)
    vectors = _fill(falkordb_store, 0, 600, rng)
    falkordb_store.run("CREATE (:V {id: -1})", write=True)  # no vector: never a candidate
    _index(falkordb_store)
    assert falkordb_store.dialect.exact_search(LABEL)
    for _ in range(30):
        q = vectors[rng.integers(0, len(vectors))] + 0.2 * rng.standard_normal(DIM).astype(
            np.float32)
        text, ids, distances = _nearest(falkordb_store, q, 10)
        assert "queryNodes" not in text
        exact = np.linalg.norm(vectors.astype(np.float64) - q, axis=1)
        assert ids == sorted(range(len(vectors)), key=lambda i: (exact[i], i))[:10]
        assert np.allclose(distances, np.sort(exact)[:10], atol=1e-5)
    _, ids, _ = _nearest(falkordb_store, vectors[0], 700)  # more than there are vectors
    assert sorted(ids) == list(range(600))
    monkeypatch.setenv("KGDB_FULL_SCAN", "0")
    falkordb_store.refresh_full_scan()
    assert not falkordb_store.dialect.exact_search(LABEL)
    text, ids, _ = _nearest(falkordb_store, vectors[0], 10)
    assert "db.idx.vector.queryNodes" in text and ids[0] == 0


def test_writes_move_a_label_across_the_limit(falkordb_store: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """kgdb's own write is seen by the next search; another client's within
    FULL_SCAN_RECHECK_S; deleted nodes bring the label back under the limit."""
    import dataclasses

    from kgdb.config import Settings
    from kgdb.engine import connect

    monkeypatch.setenv("KGDB_FULL_SCAN", "100")
    rng = np.random.default_rng(5)
    _fill(falkordb_store, 0, 90, rng)
    _index(falkordb_store)
    assert falkordb_store.dialect.full_scan >= {LABEL}
    _fill(falkordb_store, 90, 20, rng)  # 110 nodes: over the limit at once
    assert not falkordb_store.dialect.exact_search(LABEL)
    text, ids, _ = _nearest(falkordb_store, rng.standard_normal(DIM), 5)
    assert "queryNodes" in text and len(ids) == 5

    monkeypatch.setattr(falkordb_store, "FULL_SCAN_RECHECK_S", 3600.0)
    settings = Settings.from_env(graph=falkordb_store.graph_name)
    other = connect(dataclasses.replace(settings, uri="embedded"), create=False)
    try:
        other.run("MATCH (n:V) WHERE n.id >= 90 DETACH DELETE n", write=True)
    finally:
        other.close()
    assert not falkordb_store.dialect.exact_search(LABEL)  # the sizes it read last
    monkeypatch.setattr(falkordb_store, "FULL_SCAN_RECHECK_S", 0.05)
    time.sleep(0.1)
    assert falkordb_store.dialect.exact_search(LABEL)  # the next search reads them again
