"""What a real Neo4j adds over the embedded engine: transactions, index waits, Community's
limits, plugins, the driver's failures and its retries. Neo4j only: these are the things
FalkorDB does not have (or has differently, as the assertions on it say)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import neo4j
import pytest

from kgdb.cli import main
from kgdb.dialects.base import Plugin
from kgdb.dialects.neo4j import Neo4jDialect
from kgdb.errors import LoadError, StatementError, TransientEngineError
from kgdb.load.triples import load_triples
from kgdb.schema import apply_schema, ensure_base_schema, parse_schema
from kgdb.statement import Statement

pytestmark = pytest.mark.neo4j


def neo4j_env(store: Any) -> dict[str, str]:
    """What points an in-process ``kgdb`` command at ``store`` (Neo4j only)."""
    return {"KGDB_URI": store.uri, "NEO4J_USERNAME": store.username,
            "NEO4J_PASSWORD": store.password}


def count(store: Any, query: str, **params: Any) -> int:
    return int(store.run(query, params).value(0))


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = 0
    try:
        main(args)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------------- transactions
def test_a_rejected_batch_writes_nothing(neo4j_store, embedder, tmp_path: Path) -> None:
    """A batch is one transaction: its relation type and entities are written by statements
    that come before the one that fails (an entity violating a uniqueness constraint), and
    none of them stays."""
    store = neo4j_store
    ensure_base_schema(store, embedder)
    # Neo4j refuses a uniqueness constraint over an existing range index of the same key.
    (name_index,) = [i for i in store.indexes()
                     if (i.kind, i.label, i.properties) == ("range", "Entity", ("name",))]
    for op in store.dialect.drop_index(name_index):
        store.execute(op)
    for op in store.dialect.create_unique_constraint("Entity", "name"):
        store.execute(op)
    store.run("CREATE (:Entity {id: 'kismet-old', name: 'Kismet'})", write=True)
    data = tmp_path / "kb.txt"
    data.write_text("Alpha|first_rel|Beta\nGamma|first_rel|Delta\n"
                    "Epsilon|second_rel|Zeta\nKismet|second_rel|Eta\n")
    with pytest.raises(LoadError) as info:
        load_triples(store, embedder, data, batch_size=2, progress=False)
    message = str(info.value)
    assert "kb.txt:3-4: the engine rejected the batch" in message
    assert "ConstraintValidationFailed" in message
    assert "nothing from lines 3-4 was written" in message and "before 3 are loaded" in message
    # The first batch stays ...
    assert count(store, "MATCH (e:Entity) WHERE e.id IN $ids RETURN count(e)",
                 ids=["Alpha", "Beta", "Gamma", "Delta"]) == 4
    assert count(store, "MATCH ()-[r:first_rel]->() RETURN count(r)") == 2
    # ... and nothing of the second: not its relation type (the unit's first statement),
    # not the entities before the violating one, not its facts.
    assert count(store, "MATCH (t:RelationType {name: 'second_rel'}) RETURN count(t)") == 0
    assert count(store, "MATCH (e:Entity) WHERE e.id IN $ids RETURN count(e)",
                 ids=["Epsilon", "Zeta", "Kismet", "Eta"]) == 0
    assert count(store, "MATCH ()-[r:second_rel]->() RETURN count(r)") == 0


def test_run_unit_is_one_transaction(neo4j_store) -> None:
    store = neo4j_store
    ok = Statement("CREATE (:Unit {n: 1})", write=True)
    bad = Statement("UNWIND [1, 0] AS d CREATE (:Unit {n: 1 / d})", write=True)
    with pytest.raises(StatementError, match="ArithmeticError"):
        store.run_unit([ok, ok, bad])
    assert count(store, "MATCH (u:Unit) RETURN count(u)") == 0
    store.run_unit([ok, ok])
    assert count(store, "MATCH (u:Unit) RETURN count(u)") == 2


# ---------------------------------------------------------------------- retries
def locked_then_sleep(extra: str = "") -> str:
    """Lock node 2, sleep, then lock node 1 (and run ``extra``)."""
    return ("MATCH (b:Lock {id: 2}) SET b.by = 'kgdb' WITH b "
            "CALL apoc.util.sleep(1500) CALL (b) { MATCH (a:Lock {id: 1}) "
            f"SET a.by = 'kgdb' {extra} }} RETURN 1 AS done")


def _deadlock(store: Any, settings: dict[str, str], statement: Statement) -> dict[str, Any]:
    """Make ``statement`` (run by kgdb) the victim of a deadlock once: another transaction
    holds node 1 and then asks for node 2, which kgdb holds while it sleeps before asking
    for node 1. The transaction that closes the cycle (kgdb's) is the one Neo4j aborts."""
    store.run("CREATE (:Lock {id: 1}), (:Lock {id: 2})", write=True)
    outcome: dict[str, Any] = {}

    def kgdb_side() -> None:
        started = time.monotonic()
        try:
            outcome["result"] = store.run(statement)
        except Exception as exc:  # reported to the test
            outcome["error"] = exc
        outcome["seconds"] = time.monotonic() - started

    with neo4j.GraphDatabase.driver(settings["uri"],
                                    auth=(settings["username"], settings["password"])) as drv:
        with drv.session() as session:
            tx = session.begin_transaction()
            tx.run("MATCH (a:Lock {id: 1}) SET a.by = 'other'").consume()
            thread = threading.Thread(target=kgdb_side)
            thread.start()
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # until kgdb holds node 2 and sleeps
                running = drv.execute_query(
                    "SHOW TRANSACTIONS YIELD currentQuery "
                    "WHERE currentQuery CONTAINS 'apoc.util.sleep' RETURN count(*) AS n",
                    database_="neo4j").records[0]["n"]
                if running:
                    break
                time.sleep(0.05)
            time.sleep(0.2)
            tx.run("MATCH (b:Lock {id: 2}) SET b.by = 'other'").consume()
            tx.commit()
        thread.join(60)
    return outcome


def test_idempotent_writes_are_retried_once_by_the_driver(neo4j_store, neo4j_settings) -> None:
    store = neo4j_store
    assert store.retries == 0  # the driver owns retries on Neo4j; kgdb adds none
    outcome = _deadlock(store, neo4j_settings, Statement(
        locked_then_sleep(), write=True, idempotent=True))
    assert "error" not in outcome, outcome.get("error")
    assert outcome["result"].stats["attempts"] == 2  # one deadlock, one driver retry
    assert count(store, "MATCH (n:Lock {by: 'kgdb'}) RETURN count(n)") == 2


def test_other_writes_are_never_retried(neo4j_store, neo4j_settings) -> None:
    store = neo4j_store
    outcome = _deadlock(store, neo4j_settings, Statement(
        locked_then_sleep("CREATE (:Written)"), write=True))
    error = outcome.get("error")
    assert isinstance(error, TransientEngineError), outcome
    assert "DeadlockDetected" in str(error) and "not retried" in str(error)
    assert "nothing of it was written" in str(error)
    assert count(store, "MATCH (n:Written) RETURN count(n)") == 0
    assert count(store, "MATCH (n:Lock {by: 'other'}) RETURN count(n)") == 2


# ---------------------------------------------------------------------- indexes
def test_indexes_are_online_when_the_first_load_returns(neo4j_store, embedder,
                                                        tmp_path: Path) -> None:
    """The loader creates the built-in indexes on an empty database and waits for them
    (db.awaitIndexes) before it writes and before the caller's first query."""
    data = tmp_path / "kb.txt"
    data.write_text("Kismet|directed_by|William Dieterle\n")
    assert neo4j_store.indexes() == [i for i in neo4j_store.indexes() if i.kind == "lookup"]
    load_triples(neo4j_store, embedder, data, progress=False)
    states = {(i.kind, i.label): i.state for i in neo4j_store.indexes()}
    assert states[("vector", "Entity")] == "ONLINE"
    assert set(states.values()) == {"ONLINE"}, states


# ---------------------------------------------------------------------- Community's limits
SCHEMA = """\
Film(film): EntityType
    properties:
        imdbId(IMDb id): Text
            constraint: Unique
        title: Text
            constraint: NotNull
"""


def test_community_gets_a_note_for_existence_constraints(neo4j_store, embedder,
                                                          capsys, monkeypatch,
                                                          tmp_path: Path) -> None:
    store = neo4j_store
    assert store.server_info()["edition"] == "community"
    report = apply_schema(store, parse_schema(SCHEMA, "film.schema"), embedder)
    assert "unique constraint on :Film(imdbId)" in report.created
    assert [n for n in report.notes if ":Film(title)" in n and "Community" in n], report.notes
    kinds = {(i.kind, i.label, i.properties) for i in store.indexes()}
    assert ("unique", "Film", ("imdbId",)) in kinds
    assert not [k for k in kinds if k[0] == "exists"]
    # Applying again: the note again, nothing created, no failure; the CLI prints it.
    for name, value in neo4j_env(store).items():
        monkeypatch.setenv(name, value)
    schema_file = tmp_path / "film.schema"
    schema_file.write_text(SCHEMA)
    code, out, err = run_cli(["schema", "apply", str(schema_file)], capsys)
    assert code == 0, err
    assert "note: not created: exists constraint on :Film(title)" in out
    assert "0 created" in out


def test_falkordb_creates_both_constraints(falkordb_store, embedder) -> None:
    """The contrast: FalkorDB has MANDATORY constraints, so nothing is left out there."""
    report = apply_schema(falkordb_store, parse_schema(SCHEMA, "film.schema"), embedder)
    assert report.notes == []
    assert {"unique constraint on :Film(imdbId)", "exists constraint on :Film(title)"} <= set(
        report.created)
    assert apply_schema(falkordb_store, parse_schema(SCHEMA, "film.schema"),
                        embedder).created == []


def test_the_dialect_still_writes_the_enterprise_constraint() -> None:
    (stmt,) = Neo4jDialect().create_existence_constraint("Film", "title")
    assert isinstance(stmt, Statement)
    assert stmt.text == ("CREATE CONSTRAINT `kgdb_film_title_exists` IF NOT EXISTS "
                         "FOR (n:`Film`) REQUIRE n.`title` IS NOT NULL")


# ---------------------------------------------------------------------- plugins
def test_stats_shows_apoc_and_gds(neo4j_store, capsys, monkeypatch) -> None:
    for name, value in neo4j_env(neo4j_store).items():
        monkeypatch.setenv(name, value)
    code, out, err = run_cli(["stats", "--json"], capsys)
    assert code == 0, err
    import json

    engine = json.loads(out)["engine"]
    plugins = {p["name"]: p["version"] for p in engine["plugins"]}
    assert plugins["apoc"].startswith("5.26.")
    assert plugins["gds"].startswith("2.13.")
    assert "apoc-extended" in plugins
    code, out, err = run_cli(["stats"], capsys)
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("engine: "))
    assert line.startswith("engine: neo4j 5.26.") and "(community)" in line
    assert f"APOC {plugins['apoc']}" in line and f"Graph Data Science {plugins['gds']}" in line


class _WithAbsentPlugin(Neo4jDialect):
    PLUGINS = (*Neo4jDialect.PLUGINS,
               Plugin("nope", "Nope", "nope.version", function=True),
               Plugin("nope-procs", "Nope procedures", "nope.install", function=False))


def test_absent_plugins_are_left_out_not_failed(neo4j_store) -> None:
    neo4j_store.dialect = _WithAbsentPlugin()
    names = [p["name"] for p in neo4j_store.plugins()]
    # kgdb's own plugin is listed where the server has it (kgdb neo4j start puts it there)
    assert names in (["apoc", "apoc-extended", "gds"], ["apoc", "apoc-extended", "gds", "kgdb"])


def test_falkordb_has_no_plugins(falkordb_store) -> None:
    assert falkordb_store.plugins() == []


# ---------------------------------------------------------------------- driver failures
def _one_error_line(code: int, err: str) -> str:
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err
    assert lines[0].startswith("kgdb: error: ") and "Traceback" not in err
    return lines[0]


def test_wrong_password(neo4j_store, capsys, monkeypatch) -> None:
    for name, value in neo4j_env(neo4j_store).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NEO4J_PASSWORD", "not-the-password")
    line = _one_error_line(*run_cli(["stats"], capsys)[::2])
    assert f"cannot connect to Neo4j at {neo4j_store.uri}: authentication failed" in line
    assert "NEO4J_PASSWORD" in line


def test_unreachable_host(capsys, monkeypatch) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("NEO4J_PASSWORD", "x")
    line = _one_error_line(*run_cli(["--uri", f"bolt://127.0.0.1:{port}", "stats"], capsys)[::2])
    assert line == (f"kgdb: error: cannot connect to Neo4j at bolt://127.0.0.1:{port}: "
                    "[Errno 111] Connection refused")
    line = _one_error_line(*run_cli(["--uri", "bolt://no-such-host.invalid:7687", "stats"],
                                    capsys)[::2])
    assert "Failed to DNS resolve address no-such-host.invalid:7687" in line


def test_missing_database(neo4j_store, capsys, monkeypatch) -> None:
    for name, value in neo4j_env(neo4j_store).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NEO4J_DATABASE", "movies")
    line = _one_error_line(*run_cli(["stats"], capsys)[::2])
    assert line == (f"kgdb: error: Neo4j at {neo4j_store.uri} has no database 'movies' "
                    "(NEO4J_DATABASE); it has 'neo4j' (Neo4j Community has one user database): "
                    "unset NEO4J_DATABASE or name an existing database")


def test_missing_procedure_and_function(neo4j_store, capsys, monkeypatch) -> None:
    for name, value in neo4j_env(neo4j_store).items():
        monkeypatch.setenv(name, value)
    line = _one_error_line(*run_cli(["cypher", "CALL apoc.nope.nothing()"], capsys)[::2])
    assert "Neo4j has no such procedure (Neo.ClientError.Procedure.ProcedureNotFound)" in line
    assert "`apoc.nope.nothing`" in line
    line = _one_error_line(*run_cli(["cypher", "RETURN apoc.nope() AS x"], capsys)[::2])
    assert "Unknown function 'apoc.nope'" in line
