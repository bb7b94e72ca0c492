"""The ``vector`` solver (plain chunk vector search) on every path: FalkorDB's exact scan
(chunks under ``KGDB_FULL_SCAN``) and its vector index, Neo4j's Lucene index (plain Cypher)
and, on Neo4j with kgdb's plugin, the plugin's exact ``kgdb.nearestNodes``. Each says which it
used (``passage_search``) and all give the exact nearest chunks (numpy over the same
embeddings)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kgdb.documents.chunking import chunk_document
from kgdb.documents.pipeline import DocumentOptions, embedding_text, load_documents
from kgdb.documents.readers import read_documents
from kgdb.retrieve.hybrid import HybridOptions, HybridSolver
from kgdb.retrieve.vector import VectorOptions, VectorSolver

CITIES = ["London", "Manchester", "Paris", "Copenhagen", "Vienna", "Erlangen", "Rome",
          "Cambridge", "Madrid", "Lisbon", "Oslo", "Prague"]
FIELDS = ["mathematics", "computing", "radioactivity", "atoms", "fission", "algebra",
          "reactors", "crystals", "botany", "astronomy", "geology", "music"]
RECORDS = [{"id": f"d{i:02d}", "title": f"{field.title()} in {city}",
            "text": f"The study of {field} in {city} began in {1800 + 7 * i}. "
                    f"Its school in {city} still teaches {field} and {FIELDS[i - 1]}."}
           for i, (city, field) in enumerate(zip(CITIES, FIELDS, strict=True))]
QUESTIONS = ["Where was radioactivity studied?", "When did music begin in Prague?",
             "Which school teaches geology and astronomy?", "reactors in Rome"]


def _reference(path: Path, embedder: Any, question: str, k: int) -> list[tuple[str, float]]:
    """The ``k`` chunks nearest ``question`` by exact cosine, computed here (numpy)."""
    chunks = [(c.id, embedding_text(d, c)) for d in read_documents([path])
              for c in chunk_document(d)]
    vectors = np.asarray(embedder.embed([t for _, t in chunks]), dtype=np.float64)
    q = np.asarray(embedder.embed([question])[0], dtype=np.float64)
    cos = vectors @ q / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(q))
    order = sorted(range(len(chunks)), key=lambda i: (-cos[i], chunks[i][0]))[:k]
    return [(chunks[i][0], float(cos[i])) for i in order]


def _passages(store: Any, embedder: Any, question: str, k: int) -> tuple[Any, list[Any]]:
    evidence = VectorSolver().retrieve(store, embedder, question, VectorOptions(passages=k))
    return evidence, [(p.id, float(p.score or 0.0)) for p in evidence.passages]


def _same(found: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    assert [c for c, _ in found] == [c for c, _ in expected]
    for (_, a), (_, b) in zip(found, expected, strict=True):
        assert math.isclose(a, b, abs_tol=1e-5)


def test_vector_solver_on_every_path(falkordb_store: Any, neo4j_store: Any, embedder: Any,
                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neo4j with kgdb's plugin searches chunks with kgdb.nearestNodes (the statement says so,
    and the evidence's passage_search), without it with the vector index; FalkorDB scans
    them (12 chunks), or with KGDB_FULL_SCAN=0 asks its vector index; each returns the numpy
    reference's chunks in its order, cosines within 1e-5."""
    if neo4j_store.plugin_version is None:
        pytest.skip(f"the Neo4j at {neo4j_store.uri} has no kgdb plugin (kgdb neo4j plugin)")
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps(RECORDS), encoding="utf-8")
    for store in (falkordb_store, neo4j_store):
        load_documents(store, embedder, [path], options=DocumentOptions(), progress=False)
    k = 5
    for question in QUESTIONS:
        expected = _reference(path, embedder, question, k)
        runs = {"falkordb scan": _passages(falkordb_store, embedder, question, k),
                "neo4j plugin": _passages(neo4j_store, embedder, question, k)}
        with monkeypatch.context() as env:
            env.setenv("KGDB_FULL_SCAN", "0")
            falkordb_store.refresh_full_scan()
            runs["falkordb index"] = _passages(falkordb_store, embedder, question, k)
        falkordb_store.refresh_full_scan()
        neo4j_store.detect_plugin(use=False)
        try:
            runs["neo4j cypher"] = _passages(neo4j_store, embedder, question, k)
            hybrid_plain = HybridSolver().retrieve(neo4j_store, embedder, question,
                                                   HybridOptions(passages=k))
        finally:
            neo4j_store.detect_plugin(use=True)
        hybrid_native = HybridSolver().retrieve(neo4j_store, embedder, question,
                                                HybridOptions(passages=k))
        searches = {"falkordb scan": "scan", "neo4j plugin": "kgdb.nearestNodes"}
        for name, (evidence, found) in runs.items():
            search = searches.get(name, "vector index")
            assert evidence.detail["passage_search"] == search, name
            texts = [s.text for s in evidence.statements]
            assert any("kgdb.nearestNodes" in t for t in texts) == (
                search == "kgdb.nearestNodes"), name
            assert any("queryNodes" in t for t in texts) == (search == "vector index"), name
            _same(found, expected)
        assert hybrid_native.detail["passage_search"] == "kgdb.nearestNodes"
        assert hybrid_plain.detail["passage_search"] == "vector index"
        assert [d.id for d in hybrid_native.documents] == [d.id for d in hybrid_plain.documents]
