"""The Spark job's Cypher and connector options, without Spark: the title entities' query is
the pipeline's own MERGE (as the connector runs it, linted by Neo4j's front-end), and every
write is keyed so that a re-run and a retried task change nothing."""

from __future__ import annotations

import pytest

from kgdb.cypher.documents import merge_extracted_entities
from kgdb.cypher.spark import title_entities_query
from kgdb.dialects import get_dialect
from kgdb.spark.job import CONNECTOR, WRITES, _write_options
from tests.support.neo4j_lint import format_diagnostics, lint_available, lint_queries

NEO4J = get_dialect("neo4j")


class _Neo4j:
    """What the options read from a Neo4jStore (its address and dialect)."""

    dialect = NEO4J
    uri, username, password, database = "bolt://127.0.0.1:7687", "neo4j", "secret", None


def test_title_entities_are_the_pipelines_merge() -> None:
    query = title_entities_query(NEO4J)
    ours = merge_extracted_entities(NEO4J, []).text
    assert query.startswith("WITH event AS row\nMERGE (e:Entity {id: row.id})")
    assert query.split("\n", 1)[1] == ours.split("\n", 1)[1]


def test_the_connectors_statement_lints_clean() -> None:
    reason = lint_available()
    if reason:
        pytest.skip(reason)
    texts = ["UNWIND $events AS event\n" + title_entities_query(NEO4J)]
    problems = [format_diagnostics(q, d) for q, d in zip(texts, lint_queries(texts),
                                                          strict=True) if d]
    assert not problems, "\n\n".join(problems)


def test_every_write_is_keyed() -> None:
    options = _write_options(_Neo4j(), 500)  # type: ignore[arg-type]
    assert list(options) == list(WRITES)
    for name in ("documents", "chunks", "hashes"):
        assert options[name]["node.keys"] == "id"
    for name, source, target in (("hasChunk", "document:id", "chunk:id"),
                                 ("mentions", "entity:id", "chunk:id")):
        o = options[name]
        assert o["relationship.save.strategy"] == "keys"
        assert (o["relationship.source.node.keys"], o["relationship.target.node.keys"]) == \
            (source, target)
        assert o["relationship.source.save.mode"] == o["relationship.target.save.mode"] == "Match"
    assert options["hasChunk"]["relationship.properties"] == "position"
    assert all(o["batch.size"] == "500" and o["url"] == _Neo4j.uri for o in options.values())
    assert CONNECTOR.startswith("org.neo4j:neo4j-connector-apache-spark_2.12:")


def test_the_command_needs_a_neo4j(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from click.testing import CliRunner

    from kgdb.cli import cli

    monkeypatch.delenv("KGDB_URI", raising=False)
    monkeypatch.delenv("NEO4J_URI", raising=False)
    result = CliRunner().invoke(cli, ["spark", "load-documents", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "kgdb: error: kgdb spark writes through the Neo4j Connector for Apache Spark: point "
        "KGDB_URI at a Neo4j (bolt://... or neo4j://...)"]
