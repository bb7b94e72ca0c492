"""``kgdb spark load-documents`` on a real Neo4j with a real local Spark (local[1]) and the
Neo4j Connector for Apache Spark: the graph equals a ``kgdb load documents`` load of the same
files (nodes, relationships, ids, embeddings within float tolerance, the counts after ``kgdb
index``, a solver's answer), a second run changes nothing, and a run after a write that failed
in the middle finishes the load. Skipped without PySpark, unless KGDB_REQUIRE_SPARK=1."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kgdb.cli import cli
from kgdb.documents.pipeline import DocumentOptions, load_documents
from kgdb.errors import LoadError
from kgdb.load.triples import load_triples
from kgdb.retrieve.hybrid import HybridOptions
from kgdb.retrieve.registry import solver_named
from tests.conftest import engine_env, shared_data
from tests.live.test_documents import snapshot

if os.environ.get("KGDB_REQUIRE_SPARK") == "1":  # CI with the spark extra: never skipped
    import pyspark  # noqa: F401
else:
    pytest.importorskip("pyspark", reason="PySpark is not installed (pip install -e '.[spark]'; "
                                          "KGDB_REQUIRE_SPARK=1 makes this an error)")

pytestmark = pytest.mark.live
OPTIONS = DocumentOptions(extract="gazetteer", title_entity=True)


@pytest.fixture(scope="module")
def spark() -> Any:
    from kgdb.spark.job import spark_session

    session = spark_session("local[1]")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The 20 passages of MuSiQue-100's first question, and the question."""
    questions = json.loads(shared_data("musique-100", "questions.json").read_text("utf-8"))
    records: dict[str, str] = {}
    for q in questions[:1]:
        for p in q["paragraphs"]:
            records.setdefault(p["title"], p["paragraph_text"])
    path = tmp_path_factory.mktemp("spark") / "corpus.json"
    path.write_text(json.dumps([{"title": t, "text": x} for t, x in records.items()]), "utf-8")
    return path, str(questions[0]["question"])


def _triples(store: Any, embedder: Any, path: Path) -> None:
    """Entities that exist before the load: some are also documents' titles (their names
    and embeddings stay), the others are named in passages (the gazetteer links them)."""
    kb = path.parent / "kb.txt"
    kb.write_text("Journal of Psychotherapy Integration|published_by|American Psychological "
                  "Association\nNature Physics|published_by|Nature Publishing Group\n"
                  "Carl Rogers|developed|Person-centered therapy\n", encoding="utf-8")
    load_triples(store, embedder, kb, sep="|", progress=False)


def _embeddings(store: Any) -> dict[str, list[float]]:
    rows = store.run("MATCH (n) WHERE n.embedding IS NOT NULL "
                     "RETURN labels(n)[0] + ':' + n.id AS key, n.embedding AS v").records()
    return {r["key"]: list(r["v"]) for r in rows}


def _counts(store: Any) -> dict[str, int]:
    nodes = store.run("MATCH (n) UNWIND labels(n) AS l RETURN l, count(*) AS n").records()
    rels = store.run("MATCH ()-[r]->() RETURN type(r) AS t, count(*) AS n").records()
    return {**{f":{r['l']}": r["n"] for r in nodes}, **{f"-{r['t']}-": r["n"] for r in rels}}


def _close(a: dict[str, list[float]], b: dict[str, list[float]]) -> None:
    assert set(a) == set(b)
    for key, vector in a.items():
        assert vector == pytest.approx(b[key], abs=1e-5), key


def _answer(store: Any, embedder: Any, question: str) -> list[tuple[str, Any]]:
    evidence = solver_named("hybrid").retrieve(store, embedder, question, HybridOptions())
    return [(d.id, pytest.approx(d.score, abs=1e-5)) for d in evidence.documents]


def _index() -> None:
    result = CliRunner().invoke(cli, ["index", "--json"])
    assert result.exit_code == 0, result.output


def _cli_load(store: Any, embedder: Any, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    _triples(store, embedder, path)
    report = load_documents(store, embedder, [path], options=OPTIONS, progress=False)
    assert report.written == report.documents and report.mentions > report.chunks
    graph, vectors = snapshot(store), _embeddings(store)
    store.reset()
    return graph, vectors


def test_spark_load_equals_the_cli_load(neo4j_store, embedder, spark, corpus, monkeypatch):
    from kgdb.spark.job import load_documents_spark

    for name, value in engine_env(neo4j_store).items():
        monkeypatch.setenv(name, value)
    path, question = corpus
    _triples(neo4j_store, embedder, path)
    load_documents(neo4j_store, embedder, [path], options=OPTIONS, progress=False)
    cli_graph, cli_vectors = snapshot(neo4j_store), _embeddings(neo4j_store)
    _index()
    cli_counts, cli_answer = _counts(neo4j_store), _answer(neo4j_store, embedder, question)
    neo4j_store.reset()

    _triples(neo4j_store, embedder, path)
    report = load_documents_spark(spark, neo4j_store, embedder, [path], options=OPTIONS,
                                  partitions=3)
    assert report.written == report.documents == 20 and report.partitions == 3
    assert snapshot(neo4j_store) == cli_graph
    _close(_embeddings(neo4j_store), cli_vectors)
    result = CliRunner().invoke(cli, ["spark", "load-documents", str(path), "--extract",
                                      "gazetteer", "--title-entity", "--json"])
    assert result.exit_code == 0, result.output  # the command, in the module's session
    again = json.loads(result.output)
    assert (again["written"], again["unchanged"], again["master"]) == (0, 20, "local[1]")
    assert snapshot(neo4j_store) == cli_graph
    _index()
    assert _counts(neo4j_store) == cli_counts
    assert _answer(neo4j_store, embedder, question) == cli_answer


def test_failed_write_is_finished_by_a_rerun(neo4j_store, embedder, spark, corpus):
    from kgdb.spark.job import load_documents_spark

    path, _ = corpus
    cli_graph, cli_vectors = _cli_load(neo4j_store, embedder, path)
    _triples(neo4j_store, embedder, path)
    with pytest.raises(LoadError, match=r"failed writing mentions: .*injected failure.*run "
                                        r"it again"):
        load_documents_spark(spark, neo4j_store, embedder, [path], options=OPTIONS,
                             partitions=2, batch_size=5, fail_after=("mentions", 12))
    half = neo4j_store.run("MATCH (:Entity)-[m:supporting_chunks]->() RETURN count(m)").value()
    total = len([r for r in cli_graph["rels"] if '"supporting_chunks"' in r])
    assert 0 < half < total  # committed batches stay: the connector has no job transaction
    assert neo4j_store.run("MATCH (d:Document) WHERE d.hash IS NOT NULL "
                           "RETURN count(d)").value() == 0  # nothing is marked complete
    report = load_documents_spark(spark, neo4j_store, embedder, [path], options=OPTIONS,
                                  partitions=2)
    assert report.written == report.documents and report.unchanged == 0
    assert snapshot(neo4j_store) == cli_graph
    _close(_embeddings(neo4j_store), cli_vectors)


def test_bad_input_is_a_one_line_error(neo4j_store, embedder, spark, tmp_path: Path) -> None:
    from kgdb.spark.job import load_documents_spark

    with pytest.raises(LoadError, match="extracts with none or gazetteer"):
        load_documents_spark(spark, neo4j_store, embedder, [tmp_path],
                             options=DocumentOptions(extract="llm"))
