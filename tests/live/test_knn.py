"""KG-Retriever's document layer (``kgdb index knn``) on both engines: the vector method
equals a brute-force numpy reference on random vectors, GDS and the vector index give the
same edges on Neo4j, a re-run after documents change equals a run from scratch, and the
expected failures are one line and exit 1."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from kgdb.cli import cli
from kgdb.documents.knn import KnnError, build_knn, similar_edges
from kgdb.documents.pipeline import DocumentOptions, delete_documents, load_documents

pytestmark = pytest.mark.live

DIM = 16


# ---------------------------------------------------------------------- synthetic corpora
def _hash(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


class Corpus:
    """Documents with chunks of random unit vectors, written the way the document pipeline
    writes them (Document {id, hash} -hasChunk-> Chunk {id, document, embedding}), and the
    numpy reference of the layer."""

    def __init__(self, store: Any, seed: int = 7) -> None:
        self.store = store
        self.rng = np.random.default_rng(seed)
        self.chunks: dict[str, dict[str, np.ndarray]] = {}
        self.version: dict[str, int] = {}
        d = store.dialect
        for op in d.create_vector_index("Chunk", "embedding", DIM):
            store.execute(op)

    def _vectors(self, n: int) -> dict[str, np.ndarray]:
        v = self.rng.normal(size=(n, DIM))
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        return {f"#{i:03d}": v[i] for i in range(n)}

    def put(self, doc: str, chunks: int | None = None) -> None:
        """Write (or rewrite, as the pipeline does: chunks deleted and created) a document."""
        self.delete_chunks(doc)
        n = int(chunks or self.rng.integers(1, 4))
        self.chunks[doc] = {doc + c: v for c, v in self._vectors(n).items()}
        self.version[doc] = self.version.get(doc, 0) + 1
        d = self.store.dialect
        self.store.run("MERGE (d:Document {id: $id}) SET d.hash = $hash",
                       {"id": doc, "hash": _hash(doc, self.version[doc])}, write=True)
        self.store.run(
            "UNWIND $rows AS row MATCH (d:Document {id: row.document}) "
            "CREATE (d)-[:hasChunk]->(:Chunk {id: row.id, document: row.document, "
            f"embedding: {d.vector_value('row.embedding')}}})",
            {"rows": [{"id": cid, "document": doc, "embedding": v.tolist()}
                      for cid, v in self.chunks[doc].items()]}, write=True)

    def delete_chunks(self, doc: str) -> None:
        self.store.run("MATCH (c:Chunk {document: $id}) DETACH DELETE c", {"id": doc},
                       write=True)
        self.chunks.pop(doc, None)

    def empty(self, doc: str) -> None:
        """The document loses its chunks (a new version without text): it leaves the layer."""
        self.delete_chunks(doc)
        self.version[doc] += 1
        self.store.run("MATCH (d:Document {id: $id}) SET d.hash = $hash",
                       {"id": doc, "hash": _hash(doc, self.version[doc])}, write=True)

    def delete(self, doc: str) -> None:
        self.delete_chunks(doc)
        self.store.run("MATCH (d:Document {id: $id}) DETACH DELETE d", {"id": doc}, write=True)

    def vectors(self, label: str) -> dict[str, np.ndarray]:
        if label == "Chunk":
            return {c: v for chunks in self.chunks.values() for c, v in chunks.items()}
        out = {}
        for doc, chunks in self.chunks.items():
            mean = np.mean(list(chunks.values()), axis=0)
            out[doc] = mean / np.linalg.norm(mean)
        return out

    def reference(self, label: str, k: int) -> dict[str, list[tuple[str, float]]]:
        """Brute force: every node's k' best (cosine descending, then id)."""
        vectors = self.vectors(label)
        ids = sorted(vectors)
        m = np.array([vectors[i] for i in ids])
        sims = m @ m.T
        k_eff = min(k, len(ids) - 1)
        out = {}
        for a, i in enumerate(ids):
            order = sorted((j for j in range(len(ids)) if j != a),
                           key=lambda j: (-sims[a, j], ids[j]))
            out[i] = [(ids[j], float(sims[a, j])) for j in order[:k_eff]]
        return out


def layer(store: Any, label: str) -> dict[str, list[tuple[str, float]]]:
    out: dict[str, list[tuple[str, float]]] = {}
    for source, target, score in similar_edges(store, label):
        out.setdefault(source, []).append((target, score))
    return {s: sorted(v, key=lambda p: (-p[1], p[0])) for s, v in out.items()}


def assert_same_layer(actual: dict[str, list[tuple[str, float]]],
                      expected: dict[str, list[tuple[str, float]]]) -> None:
    expected = {s: v for s, v in expected.items() if v}
    assert sorted(actual) == sorted(expected)
    for source, want in expected.items():
        got = actual[source]
        assert [t for t, _ in got] == [t for t, _ in want], source
        assert np.allclose([s for _, s in got], [s for _, s in want], atol=2e-5), source


def no_exact_ties(reference: dict[str, list[tuple[str, float]]]) -> None:
    for source, pairs in reference.items():
        scores = [s for _, s in pairs]
        assert len(set(np.round(scores, 9))) == len(scores), source


# ---------------------------------------------------------------------- vector = numpy
@pytest.mark.parametrize("label", ["Document", "Chunk"])
def test_vector_method_equals_brute_force(store, label: str) -> None:
    corpus = Corpus(store)
    for i in range(40):
        corpus.put(f"doc{i:02d}")
    reference = corpus.reference(label, 3)
    no_exact_ties(reference)
    report = build_knn(store, label=label, k=3, method="vector")
    assert (report.mode, report.method, report.reason) == ("full", "vector", "first build")
    assert report.nodes == len(reference)
    assert report.edges == 3 * len(reference)
    assert_same_layer(layer(store, label), reference)
    # k larger than the layer: each node links every other node
    small = build_knn(store, label=label, k=len(reference) + 5, method="vector")
    assert small.reason.startswith("k changed")
    assert small.edges == len(reference) * (len(reference) - 1)
    assert_same_layer(layer(store, label), corpus.reference(label, len(reference) + 5))


def test_document_vectors_are_normalised_chunk_means(store) -> None:
    corpus = Corpus(store, seed=3)
    for i in range(6):
        corpus.put(f"doc{i}", chunks=3)
    report = build_knn(store, label="Document", k=2, method="vector")
    assert report.vectors_written == 6
    assert any("created the vector index on :Document(embedding)" in n for n in report.notes)
    rows = store.run("MATCH (d:Document) RETURN d.id AS id, d.embedding AS e").records()
    want = corpus.vectors("Document")
    for row in rows:
        assert np.allclose(row["e"], want[row["id"]], atol=1e-6)
    again = build_knn(store, label="Document", k=2, method="vector")
    assert (again.mode, again.vectors_written, again.rewritten) == ("unchanged", 0, 0)


# ---------------------------------------------------------------------- incremental
@pytest.mark.parametrize("label", ["Document", "Chunk"])
def test_update_after_changes_equals_a_run_from_scratch(store, label: str) -> None:
    corpus = Corpus(store, seed=11)
    for i in range(60):
        corpus.put(f"doc{i:02d}")
    first = build_knn(store, label=label, k=3, method="vector")
    assert first.mode == "full"
    # one changed document, one deleted, one left without chunks, one new
    corpus.put("doc07")
    corpus.delete("doc13")
    corpus.empty("doc21")
    corpus.put("doc99")
    update = build_knn(store, label=label, k=3)
    assert update.mode == "incremental", update
    assert update.method == "vector"
    assert 0 < update.rewritten < update.nodes / 2, update
    assert update.affected > 0
    if label == "Document":
        assert (update.vectors_written, update.vectors_removed) == (2, 1)
    incremental = layer(store, label)
    reference = corpus.reference(label, 3)
    no_exact_ties(reference)
    assert_same_layer(incremental, reference)
    scratch = build_knn(store, label=label, k=3, full=True)
    assert (scratch.mode, scratch.reason) == ("full", "requested")
    assert_same_layer(incremental, layer(store, label))
    assert build_knn(store, label=label, k=3).mode == "unchanged"


def test_a_changed_node_that_enters_others_top_k_is_found(store) -> None:
    """Rule 2: a changed document moved next to unchanged ones becomes their neighbour,
    although none of them had an edge to it."""
    corpus = Corpus(store, seed=5)
    for i in range(30):
        corpus.put(f"doc{i:02d}", chunks=1)
    build_knn(store, label="Chunk", k=2, method="vector")
    target = corpus.chunks["doc03"]
    (cid, v), = target.items()
    # doc20's new chunk sits almost on doc03's
    corpus.delete_chunks("doc20")
    new = v + 0.01 * corpus.rng.normal(size=DIM)
    corpus.chunks["doc20"] = {"doc20#new": new / np.linalg.norm(new)}
    corpus.version["doc20"] += 1
    d = store.dialect
    store.run("MATCH (d:Document {id: 'doc20'}) SET d.hash = 'changed'", write=True)
    store.run("MATCH (d:Document {id: 'doc20'}) CREATE (d)-[:hasChunk]->(:Chunk {id: "
              f"'doc20#new', document: 'doc20', embedding: {d.vector_value('$v')}}})",
              {"v": corpus.chunks["doc20"]["doc20#new"].tolist()}, write=True)
    update = build_knn(store, label="Chunk", k=2)
    assert update.mode == "incremental"
    reference = corpus.reference("Chunk", 2)
    assert reference[cid][0][0] == "doc20#new"
    assert_same_layer(layer(store, "Chunk"), reference)


def test_stale_index_entries_fall_back_to_an_exact_scan(store) -> None:
    """On FalkorDB 4.16.3 every property update of a vector-indexed node leaves a stale HNSW
    entry that takes a place in the answer (kgdb/cypher/knn.py); when an answer is too short
    to hold the K nearest, those nodes are compared with every node. Neo4j has no stale
    entries, and the same test checks that nothing falls back there."""
    corpus = Corpus(store, seed=13)
    for i in range(30):
        corpus.put(f"doc{i:02d}")
    build_knn(store, label="Document", k=3, method="vector")
    # each update leaves a stale entry with the node's own vector: after 40 the index's
    # max(4k, 64) = 64 nearest entries of a document hold at most two distinct documents
    for round_ in range(40):
        store.run("MATCH (d:Document) SET d.touched = $n", {"n": round_}, write=True)
    report = build_knn(store, label="Document", k=3, method="vector", full=True)
    if store.dialect.NAME == "falkordb":
        assert report.exact_fallbacks > 0
    else:
        assert report.exact_fallbacks == 0
    assert_same_layer(layer(store, "Document"), corpus.reference("Document", 3))


def test_a_run_that_did_not_finish_is_redone_from_scratch(store) -> None:
    corpus = Corpus(store, seed=9)
    for i in range(12):
        corpus.put(f"doc{i:02d}")
    build_knn(store, label="Document", k=3, method="vector")
    store.run("MATCH (m:KgdbMeta {key: 'knn/Document'}) SET m.complete = false", write=True)
    store.run("MATCH (:Document)-[r:SIMILAR]->(:Document) WITH r LIMIT 5 DELETE r", write=True)
    report = build_knn(store, label="Document", k=3)
    assert (report.mode, report.reason) == ("full", "the previous run did not finish")
    assert_same_layer(layer(store, "Document"), corpus.reference("Document", 3))


# ---------------------------------------------------------------------- GDS = vector
def test_gds_equals_vector_index(neo4j_store) -> None:
    """Neo4j only: GDS is a Neo4j plugin (FalkorDB has no kNN procedure)."""
    store = neo4j_store
    assert any(p["name"] == "gds" for p in store.plugins()), "the test Neo4j has GDS"
    corpus = Corpus(store, seed=21)
    for i in range(50):
        corpus.put(f"doc{i:02d}")
    for label in ("Document", "Chunk"):
        reference = corpus.reference(label, 3)
        no_exact_ties(reference)
        by_gds = build_knn(store, label=label, k=3, method="gds")
        assert (by_gds.mode, by_gds.method) == ("full", "gds")
        gds_layer = layer(store, label)
        by_vector = build_knn(store, label=label, k=3, method="vector", full=True)
        assert by_vector.method == "vector"
        assert_same_layer(layer(store, label), reference)
        assert_same_layer(gds_layer, reference)
    graphs = store.run("CALL gds.graph.list() YIELD graphName RETURN graphName").records()
    assert not [g for g in graphs if str(g["graphName"]).startswith("kgdb_knn_")]
    # auto uses GDS for a full build and the vector index for the update
    corpus.put("doc04")
    update = build_knn(store, label="Document", k=3)
    assert (update.mode, update.method) == ("incremental", "vector")
    assert_same_layer(layer(store, "Document"), corpus.reference("Document", 3))


def test_gds_projection_is_dropped_when_knn_fails(neo4j_store, monkeypatch) -> None:
    from kgdb.cypher import knn as cy
    from kgdb.statement import Statement

    store = neo4j_store
    corpus = Corpus(store, seed=2)
    for i in range(5):
        corpus.put(f"doc{i}")
    monkeypatch.setattr(cy, "gds_knn_similar", lambda d, label, graph, k, n, seed: Statement(
        "CALL gds.knn.stream($graph, {nodeProperties: 'nope', topK: 1}) YIELD node1 "
        "RETURN count(*) AS n", {"graph": graph}, write=True))
    with pytest.raises(Exception):  # noqa: B017 - whatever GDS says about the bad property
        build_knn(store, label="Document", k=2, method="gds")
    graphs = store.run("CALL gds.graph.list() YIELD graphName RETURN graphName").records()
    assert not [g for g in graphs if str(g["graphName"]).startswith("kgdb_knn_")]


# ---------------------------------------------------------------------- real documents
TOPICS = {
    "kismet": "Kismet is a 1944 film directed by William Dieterle starring Marlene Dietrich.",
    "juarez": "Juarez is a 1939 film directed by William Dieterle about Benito Juarez.",
    "dietrich": "Marlene Dietrich was a German-American actress and singer in Hollywood.",
    "paris": "Paris is the capital of France, on the river Seine.",
    "lyon": "Lyon is a city in France at the confluence of the Rhone and the Saone.",
    "seine": "The Seine is a river in northern France that flows through Paris.",
    "python": "Python is a programming language created by Guido van Rossum.",
    "rust": "Rust is a systems programming language focused on memory safety.",
    "haskell": "Haskell is a purely functional programming language.",
    "everest": "Mount Everest is the highest mountain above sea level, in the Himalayas.",
    "k2": "K2 is the second-highest mountain on Earth, in the Karakoram range.",
    "alps": "The Alps are the highest mountain range in Europe.",
}


def write_corpus(path: Path, topics: dict[str, str]) -> Path:
    path.write_text(json.dumps([{"id": k, "title": k.title(), "text": v}
                                for k, v in topics.items()]), encoding="utf-8")
    return path


def test_real_documents_update_equals_scratch(store, embedder, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus.json", TOPICS)
    options = DocumentOptions()
    load_documents(store, embedder, [corpus], options=options, progress=False)
    first = build_knn(store)
    assert (first.label, first.k, first.mode, first.nodes, first.edges) == (
        "Document", 3, "full", 12, 36)
    edges = layer(store, "Document")
    assert {t for t, _ in edges["paris"][:2]} == {"seine", "lyon"}
    assert all(-1.0 <= s <= 1.0 for pairs in edges.values() for _, s in pairs)
    # rust becomes a text about mountains: it enters the mountains' top 3
    changed = dict(TOPICS, rust="Rust Peak is a mountain in the Himalayas near Mount Everest.")
    load_documents(store, embedder, [write_corpus(corpus, changed)], options=options,
                   progress=False)
    update = build_knn(store)
    assert update.mode == "incremental" and update.changed == 1 and update.affected >= 1
    incremental = layer(store, "Document")
    assert "rust" in [t for t, _ in incremental["everest"]]
    delete_documents(store, ["k2"])
    after_delete = build_knn(store)
    assert after_delete.mode == "incremental" and after_delete.nodes == 11
    incremental = layer(store, "Document")
    build_knn(store, full=True)
    assert_same_layer(incremental, layer(store, "Document"))
    chunks = build_knn(store, label="Chunk")
    assert chunks.nodes == 11 and chunks.edges == 33


# ---------------------------------------------------------------------- command line
def test_cli_builds_and_updates(cli_store, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus.json", dict(list(TOPICS.items())[:6]))
    assert CliRunner().invoke(cli, ["load", "documents", str(corpus), "--no-progress"]
                              ).exit_code == 0
    result = CliRunner().invoke(cli, ["index", "knn", "--k", "2", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["label"], report["k"], report["mode"], report["edges"]) == (
        "Document", 2, "full", 12)
    result = CliRunner().invoke(cli, ["index", "knn", "--k", "2"])
    assert result.exit_code == 0
    assert "Document layer up to date: 6 nodes, 12 SIMILAR edges (k=2)" in result.output
    result = CliRunner().invoke(cli, ["index", "knn", "--label", "Chunk", "--method", "vector"])
    assert result.exit_code == 0
    assert "Chunk layer rebuilt with vector (first build): 6 of 6 nodes rewritten, 18 " \
           "SIMILAR edges (k=3)" in result.output


def test_cli_errors_are_one_line(cli_store, embedder) -> None:
    def run(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(cli, ["index", "knn", *args])
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in result.output, result.output
        return result.exit_code, lines[0]

    code, line = run("--label", "Documents")
    assert code == 1
    assert line == ("kgdb: error: unknown label 'Documents' for the document layer (did you "
                    "mean 'Document'?); choose Document or Chunk")
    code, line = run()
    assert code == 1 and "no vector index on :Chunk(embedding)" in line
    from kgdb.schema.apply import ensure_base_schema

    ensure_base_schema(cli_store, embedder)
    code, line = run()
    assert code == 1 and "no :Document node has chunks with embeddings" in line
    code, line = run("--label", "Chunk")
    assert code == 1 and "no :Chunk node has an embedding" in line
    if cli_store.dialect.NAME == "falkordb":
        code, line = run("--method", "gds")
        assert code == 1 and "--method gds needs Neo4j Graph Data Science" in line
    code, line = run("--method", "nope")
    assert code == 2


def test_library_errors_are_knn_errors(store) -> None:
    with pytest.raises(KnnError, match="did you mean 'Chunk'"):
        build_knn(store, label="chunk")
    with pytest.raises(KnnError, match="k must be at least 1"):
        build_knn(store, k=0)
