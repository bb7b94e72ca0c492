"""``kgdb bench scale`` end to end on a tiny size, on both engines: it generates, loads through
the triples loader, measures and prints JSON (the numbers themselves are not asserted)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kgdb.cli import cli
from kgdb.cypher.explore import count_nodes

pytestmark = pytest.mark.live


def test_bench_scale_runs(cli_store) -> None:
    result = CliRunner().invoke(cli, ["bench", "scale", "--entities", "400", "--queries", "2",
                                      "--kn", "4,16", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{"):])
    assert report["entities"] > 300 and report["triples"] == report["facts"]
    assert report["engine"] == cli_store.dialect.NAME
    assert set(report["retrieval_excluding_embedding"]) == {
        f"{h}-hop k(n)={k}" for h in (1, 2, 3) for k in (4, 16)}
    assert all(v["queries"] == 2 for v in report["retrieval_excluding_embedding"].values())
    # beside every figure: the phase split, what ran, the machine and its load
    for row in report["retrieval_excluding_embedding"].values():
        assert {"vector_p50_ms", "match_p50_ms", "glue_p50_ms", "vector_p90_ms",
                "match_p90_ms", "glue_p90_ms"} <= set(row)
        assert row["glue_p50_ms"] >= 0
        assert row["paths"] and all(p.startswith("vector ") for p in row["paths"])
        assert row["load_average"] is None or len(row["load_average"]) == 3
    assert report["machine"]["cpu"] and report["machine"]["cores"] >= 1
    # measured after a warm-up (the first retrieval, which builds the plugin's copies, apart)
    assert report["warmup"]["retrievals_per_kn"] == 50 and report["warmup"]["first_ms"] > 0
    assert {"k(n)=4 p50_ms", "k(n)=16 p50_ms"} <= set(report["warmup"])
    if getattr(cli_store, "plugin_version", None) and cli_store.dialect.NATIVE:
        # the one-call procedure's own time for the searches, beside the round trip's
        assert any("vector_in_server_p50_ms" in row
                   for row in report["retrieval_excluding_embedding"].values())
    state = report["index_state"]
    assert state["vector_search"] == cli_store.dialect.VECTOR_SEARCH
    if cli_store.dialect.NATIVE:  # the exact in-memory copy the queries used, current
        entity = next(i for i in state["indexes"] if i["index"] == "kgdb_entity_embedding_vector")
        assert entity["state"] == "current" and entity["rows"] == report["entities"]
    if getattr(cli_store, "plugin_version", None) and cli_store.dialect.NATIVE:
        assert any("kgdb.simgrag.search" in p or "kgdb.simgrag.match" in p for row in report[
            "retrieval_excluding_embedding"].values() for p in row["paths"])
    # a server's graph the benchmark filled from empty is empty again (embedded: its own
    # graph was dropped, this one never touched)
    assert cli_store.run(count_nodes()).value(0) == 0


def test_bench_scale_refuses_a_graph_with_data_and_leaves_it(cli_store) -> None:
    cli_store.run("CREATE (:Keep {name: 'mine'})", write=True)
    result = CliRunner().invoke(cli, ["bench", "scale", "--entities", "100", "--queries", "1",
                                      "--kn", "4", "--json"])
    if cli_store.dialect.NAME == "falkordb":  # embedded: the bench makes its own graph
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 1
        assert "needs an empty graph" in result.output
    assert cli_store.run("MATCH (n) RETURN count(n) AS n").value(0) == 1


def test_bench_scale_reuses_the_graph_it_kept(cli_store) -> None:
    """--keep leaves the graph; --reuse measures it without loading (the same arguments), and
    refuses one of other arguments; on the embedded engine --reuse is refused."""
    args = ["bench", "scale", "--entities", "200", "--queries", "1", "--kn", "4",
            "--warmup", "2", "--json"]
    if cli_store.dialect.NAME == "falkordb":
        result = CliRunner().invoke(cli, [*args, "--reuse"])
        assert result.exit_code == 1 and "--reuse needs a server" in result.output
        return
    try:
        kept = CliRunner().invoke(cli, [*args, "--keep"])
        assert kept.exit_code == 0, kept.output
        nodes = cli_store.run(count_nodes()).value(0)
        assert nodes > 0
        result = CliRunner().invoke(cli, [*args, "--reuse"])
        assert result.exit_code == 0, result.output
        report = json.loads(result.output[result.output.index("{"):])
        first = json.loads(kept.output[kept.output.index("{"):])
        assert report["reused"] and "load_s" not in report
        assert report["entities"] == first["entities"]
        assert set(report["retrieval_excluding_embedding"]) == set(first["retrieval_excluding_embedding"])
        assert cli_store.run(count_nodes()).value(0) == nodes  # measured, not reloaded or dropped
        other = CliRunner().invoke(cli, [*args[:2], "--entities", "300", *args[4:], "--reuse"])
        assert other.exit_code == 1 and "--reuse:" in other.output and "entities" in other.output
    finally:
        cli_store.run("MATCH (n) DETACH DELETE n", write=True)
