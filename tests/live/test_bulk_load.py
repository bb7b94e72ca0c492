"""Bulk loading (FalkorDB's GRAPH.BULK; CREATE batches on Neo4j) gives the graph the incremental
loader gives: the same nodes, properties, vectors, relationships, catalog and indexes; it runs
only when asked (auto: only for an empty graph); bad input and a re-run behave as they do
incrementally."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from kgdb.cypher.housekeeping import nearest_nodes
from kgdb.errors import LoadError
from kgdb.load.triples import load_triples

pytestmark = pytest.mark.live

LINES = [
    "Kismet|directed_by|William Dieterle",
    "Kismet|directed_by|William Dieterle",          # a duplicate: one relationship
    "Kismet|starred_actors|Marlene Dietrich",
    "Kismet|release_year|1944",
    "Ouroboros|related_to|Ouroboros",               # a self-loop
    "Amélie|directed_by|Jean-Pierre Jeunet",
    "O'Brien \"Quoted\" \\ Name|has_tags|naïve ☃ tag",
    "Kismet|ns:weird type|Marlene Dietrich",        # a bulk header cannot carry ':'
    "The Story of Louis Pasteur|directed_by|William Dieterle",
    "Marlene Dietrich|starred_in|Kismet",
]


def snapshot(store: Any) -> dict[str, Any]:
    """Everything a load writes, in a comparable form (vectors rounded to float32)."""
    nodes = sorted(
        (sorted(r["labels"]), json.dumps({k: v for k, v in r["props"].items()
                                          if k != "embedding"}, sort_keys=True))
        for r in store.run("MATCH (n) RETURN labels(n) AS labels, properties(n) AS props")
        .records())
    vectors = {r["id"]: np.asarray(r["v"], dtype=np.float32) for r in store.run(
        "MATCH (n) WHERE n.embedding IS NOT NULL "
        "RETURN coalesce(n.id, n.name, n.key) AS id, n.embedding AS v").records()}
    edges = sorted(
        (r["type"], r["a"], r["b"], json.dumps(r["props"], sort_keys=True))
        for r in store.run("MATCH (a)-[r]->(b) RETURN type(r) AS type, "
                           "coalesce(a.id, a.name, a.key) AS a, coalesce(b.id, b.name, b.key) "
                           "AS b, properties(r) AS props").records())
    indexes = sorted((i.kind, i.entity, i.label, i.properties, i.state)
                     for i in store.indexes())
    return {"nodes": nodes, "vectors": vectors, "edges": edges, "indexes": indexes}


def assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a["nodes"] == b["nodes"]
    assert a["edges"] == b["edges"]
    assert a["indexes"] == b["indexes"]
    assert a["vectors"].keys() == b["vectors"].keys()
    for key, vector in a["vectors"].items():
        np.testing.assert_array_equal(vector, b["vectors"][key], err_msg=key)


def write(tmp_path: Path, lines: list[str], name: str = "kb.txt") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_bulk_equals_incremental(store: Any, embedder: Any, tmp_path: Path) -> None:
    path = write(tmp_path, LINES)
    bulk = load_triples(store, embedder, path, progress=False, batch_size=3, mode="bulk")
    assert bulk.mode == "bulk"
    one = snapshot(store)
    assert len(one["edges"]) >= 9  # facts + catalog edges, the duplicate once
    # the vector index answers over bulk-loaded vectors: a name's nearest entity is itself
    nearest = nearest_nodes(store.dialect, "Entity", "embedding", embedder.embed_one("Amélie"), 1,
                                          returns=("id",))
    assert [r["id"] for r in store.run(nearest).records()] == ["Amélie"]
    # auto on a graph with data is incremental, and reloading changes nothing
    again = load_triples(store, embedder, path, progress=False, mode="auto")
    assert again.mode == "incremental" and again.entities_written == 0
    assert_same(snapshot(store), one)
    store.reset()
    incremental = load_triples(store, embedder, path, progress=False, batch_size=3,
                               mode="incremental")
    assert incremental.mode == "incremental"
    for field in ("triples", "entities_seen", "entities_written", "predicates"):
        assert getattr(bulk, field) == getattr(incremental, field), field
    assert_same(one, snapshot(store))


def test_auto_bulk_only_on_an_empty_graph(store: Any, embedder: Any, tmp_path: Path) -> None:
    path = write(tmp_path, LINES[:3])
    # bulk must be the graph's only writer, so only asked for: the default is incremental
    assert load_triples(store, embedder, path, progress=False).mode == "incremental"
    with pytest.raises(LoadError, match=r"already has nodes.*; use --mode incremental"):
        load_triples(store, embedder, path, progress=False, mode="bulk")
    store.reset()
    assert load_triples(store, embedder, path, progress=False, mode="auto").mode == "bulk"
    assert load_triples(store, embedder, path, progress=False, mode="auto").mode == "incremental"
    with pytest.raises(LoadError, match="--mode must be one of"):
        load_triples(store, embedder, path, progress=False, mode="fast")


def test_bad_line_then_rerun_completes(store: Any, embedder: Any, tmp_path: Path) -> None:
    lines = [*LINES[:4], "only two|fields", *LINES[4:]]
    path = write(tmp_path, lines)
    with pytest.raises(LoadError, match=r"kb.txt:5: expected 3 fields.*nothing from lines 5-8 "
                                        r"was written, lines before 5 are loaded"):
        load_triples(store, embedder, path, progress=False, batch_size=4, mode="bulk")
    # what was written is a consistent graph: indexed, searchable, resumable
    assert store.run("MATCH (e:Entity) RETURN count(e)").value() == 4
    assert {i.kind for i in store.indexes()} >= {"vector", "unique", "fulltext"}
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    assert load_triples(store, embedder, path, progress=False).mode == "incremental"
    resumed = snapshot(store)
    store.reset()
    load_triples(store, embedder, path, progress=False, mode="incremental")
    assert_same(resumed, snapshot(store))


def test_cli_mode_and_json(store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgdb.cli import cli
    from tests.conftest import engine_env

    for key, value in engine_env(store).items():
        monkeypatch.setenv(key, value)
    path = write(tmp_path, LINES)
    result = CliRunner().invoke(cli, ["load", "triples", str(path), "--mode", "bulk",
                                       "--json", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["mode"] == "bulk"
    result = CliRunner().invoke(cli, ["load", "triples", str(path), "--mode", "bulk"])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "use --mode incremental" in result.output
