"""The CLI on both engines: stats, cypher, schema, reset, demo; the embedded db verbs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgdb.cli import cli

pytestmark = pytest.mark.live
ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_db_verbs(falkordb_store) -> None:
    # `kgdb db` manages the embedded FalkorDB server only (Neo4j: `kgdb neo4j`).
    store = falkordb_store
    code, out = invoke("db", "start", "--json")
    assert code == 0 and json.loads(out)["running"] is True
    code, out = invoke("db", "status", "--json")
    status = json.loads(out)
    assert code == 0 and status["running"] and status["address"].startswith("127.0.0.1:")
    assert store.graph_name in status["graphs"]


def test_cypher_params_write_and_json(cli_store) -> None:
    store = cli_store
    code, out = invoke("cypher", "CREATE (:T {id: $id, tags: $tags})",
                       "--param", "id=7", "--param", 'tags=["a","b"]')
    assert code == 1  # read-only by default: the engine refuses the write
    assert store.run("MATCH (n:T) RETURN count(n)").value() == 0
    code, out = invoke("cypher", "CREATE (:T {id: $id, tags: $tags})",
                       "--param", "id=7", "--param", 'tags=["a","b"]', "--write")
    assert code == 0 and "nodes created: 1" in out
    code, out = invoke("cypher", "MATCH (n:T) RETURN n, n.id AS id", "--json")
    data = json.loads(out)
    assert data["rows"][0]["id"] == 7
    assert data["rows"][0]["n"] == {"labels": ["T"], "properties": {"id": 7, "tags": ["a", "b"]}}


def test_schema_apply_stats_and_reset(cli_store) -> None:
    store = cli_store
    code, out = invoke("schema", "apply", str(ROOT / "loaders/schemas/metaqa.schema"),
                       "--json")
    assert code == 0 and json.loads(out)["relation_types"] == 9
    code, out = invoke("stats", "--json")
    stats = json.loads(out)
    assert stats["labels"]["RelationType"] == 9 and stats["labels"]["EntityType"] == 8
    vector = [i for i in stats["indexes"] if i["kind"] == "vector" and i["label"] == "Entity"]
    assert vector and vector[0]["dimension"] == 384 and vector[0]["state"] == "ONLINE"
    code, out = invoke("stats")
    assert code == 0 and "RelationType" in out and "vector" in out
    code, out = invoke("db", "reset")
    assert code == 2 and "--yes" in out
    code, out = invoke("db", "reset", "--yes")
    assert code == 0 and store.run("MATCH (n) RETURN count(n)").value() == 0


def test_demo_runs_from_the_repository(cli_store, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    code, out = invoke("demo")
    assert code == 0, out
    assert "loaded 442 triples" in out
    assert "graph [1]  GSD " in out
    assert "('Kismet', 'directed_by', 'William Dieterle')" in out
    # three of Kismet's four actors: equal GSD, so which three is the engine's (deterministic) pick
    actors = {a for a in ("Edward Arnold", "James Craig", "Marlene Dietrich", "Ronald Colman")
              if f"('Kismet', 'starred_actors', '{a}')" in out}
    assert len(actors) == 3, out
    # it names where the sample is and what to try next; the Cypher only when asked
    assert "The sample is in the " in out and "Next, try:" in out
    assert "Cypher that ran:" not in out
    code, out = invoke("demo", "--cypher")
    assert code == 0 and "Cypher that ran:" in out
