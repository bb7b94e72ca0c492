"""The embedded FalkorDB 4.16.3 and hostile data: the engine bug reproduced minimally, kgdb
never replaying a statement that crashed the server, kill -9 of the server and of the loader.

Each test here runs its own embedded server in its own KGDB_HOME: they crash or kill it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgdb.engine.embedded import EmbeddedServer
from kgdb.errors import EngineCrashError
from kgdb.text import TextError

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def private_server(tmp_path: Path) -> Iterator[EmbeddedServer]:
    server = EmbeddedServer(tmp_path / "home")
    server.ensure_started()
    try:
        yield server
    finally:
        server.stop()


def _raw(server: EmbeddedServer):  # type: ignore[no-untyped-def]
    import redis

    state = server.ensure_started()
    return redis.Redis(port=state.port, password=server.password(), socket_timeout=20)


def _unique_id_graph(server: EmbeddedServer, graph: str) -> None:
    r = _raw(server)
    r.execute_command("GRAPH.QUERY", graph, "CREATE INDEX FOR (n:E) ON (n.id)")
    r.execute_command("GRAPH.CONSTRAINT", "CREATE", graph, "UNIQUE", "NODE", "E", "PROPERTIES",
                      1, "id")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        rows = r.execute_command("GRAPH.QUERY", graph,
                                 "CALL db.constraints() YIELD status RETURN status")[1]
        if rows and rows[0][0] in (b"OPERATIONAL", "OPERATIONAL"):
            return
        time.sleep(0.05)


@pytest.mark.parametrize("value", ["a\x01b", "k" * 4097], ids=["0x01", "4097 bytes"])
def test_engine_bug_a_uniquely_indexed_value_crashes_falkordb(private_server, value) -> None:
    """The engine bug itself, without kgdb: FalkorDB 4.16.3 segfaults when a value holding
    U+0001 or longer than 4096 bytes is written to a property with a unique constraint (the
    exact-match index misses such values; a range index alone silently duplicates them).
    If this test fails, FalkorDB fixed the bug: the text contract may be relaxed."""
    import redis

    _unique_id_graph(private_server, "bug")
    r = _raw(private_server)
    pid = private_server.status().pid  # type: ignore[union-attr]
    with pytest.raises(redis.ConnectionError):
        r.execute_command("GRAPH.QUERY", "bug",
                          'CYPHER v="' + value + '" MERGE (n:E {id: $v}) RETURN 1')
    time.sleep(0.2)
    assert private_server.status() is None
    assert "crashed by signal" in private_server.crash_report()
    assert private_server.crash_report()  # the pid's own crash, read from the log
    del pid


def test_4096_bytes_and_other_controls_do_not_crash(private_server) -> None:
    """The limits are exact: 4096 bytes and U+0002..U+001F are indexed correctly."""
    _unique_id_graph(private_server, "edge")
    r = _raw(private_server)
    values = ["k" * 4096, "é" * 2048, "a\x02b", "a\x1fb", "a\x7fb"]
    for value in values * 2:
        r.execute_command("GRAPH.QUERY", "edge", "CYPHER v=$v MERGE (n:E {id: $v}) RETURN 1"
                          .replace("$v", '"' + value + '"', 1))
    count = r.execute_command("GRAPH.QUERY", "edge", "MATCH (n:E) RETURN count(n)")[1][0][0]
    assert count == len(values)


def test_kgdb_refuses_the_crashing_values_before_the_engine(private_server) -> None:
    """Finding 1 through kgdb: the same bytes never reach the server."""
    from kgdb.engine.falkordb import FalkorDBStore

    state = private_server.ensure_started()
    store = FalkorDBStore("127.0.0.1", state.port, private_server.password(), "k",
                          server=private_server)
    for value in ["a\x01b", "a\x00b"]:
        with pytest.raises(TextError):
            store.run("MERGE (n:Entity {id: $v})", {"v": value}, write=True)
    assert private_server.status().pid == state.pid  # type: ignore[union-attr]


def test_a_statement_that_crashes_the_server_is_reported_once_not_replayed(private_server,
                                                                           ) -> None:
    """Raw Cypher with a literal kgdb cannot see into still crashes 4.16.3; kgdb reports it
    once with the cause, restarts the server, and does not send it again."""
    from kgdb.engine.falkordb import FalkorDBStore

    _unique_id_graph(private_server, "k")
    state = private_server.ensure_started()
    store = FalkorDBStore("127.0.0.1", state.port, private_server.password(), "k",
                          server=private_server)
    crashes_before = private_server.log_file.read_text(errors="replace").count("crashed by signal")
    long = "k" * 5000
    with pytest.raises(EngineCrashError) as info:
        # idempotent=True: the old logic would have retried it three more times
        from kgdb.statement import Statement

        store.run(Statement(f"MERGE (n:E {{id: '{long}'}})", write=True, idempotent=True))
    assert "crashed by signal: 11" in str(info.value) and "not retried" in str(info.value)
    log = private_server.log_file.read_text(errors="replace")
    assert log.count("crashed by signal") == crashes_before + 1
    assert store.run("RETURN 1 AS one").value() == 1  # restarted and usable


def _kb_file(tmp_path: Path, lines: int) -> Path:
    from tests.conftest import shared_data

    kb = shared_data("metaqa", "kb.txt")
    path = tmp_path / "kb.txt"
    with open(kb, encoding="utf-8") as src:
        path.write_text("".join(next(src) for _ in range(lines)), encoding="utf-8")
    return path


def _counts(home: Path, graph: str) -> tuple[int, int, int]:
    from kgdb.config import Settings
    from kgdb.engine import connect

    env = dict(os.environ)
    os.environ["KGDB_HOME"] = str(home)
    try:
        store = connect(Settings.from_env(graph=graph))
    finally:
        os.environ.clear()
        os.environ.update(env)
    try:
        entities = store.run("MATCH (n:Entity) RETURN count(n)").value()
        distinct = store.run("MATCH (n:Entity) RETURN count(DISTINCT n.id)").value()
        facts = store.run("MATCH (:Entity)-[r]->(:Entity) RETURN count(r)").value()
        return entities, distinct, facts
    finally:
        store.close()


def _load_cmd(path: Path, graph: str, batch_size: int = 200) -> list[str]:
    return [sys.executable, "-m", "kgdb", "--graph", graph, "load", "triples", str(path),
            "--sep", "|", "--batch-size", str(batch_size), "--no-progress"]


def test_kill_loader_and_server_mid_load_then_rerun_gives_exact_counts(tmp_path: Path) -> None:
    """kill -9 of the loader, then of the server, in the middle of a load; a re-run gives
    the counts of one clean load, with no duplicate ids."""
    home = tmp_path / "home"
    path = _kb_file(tmp_path, 1500)
    env = {**os.environ, "KGDB_HOME": str(home), "HF_HUB_OFFLINE": "1", "KGDB_DEBUG": "1"}
    cache = Path(os.environ.get("KGDB_TEST_CACHE", ROOT / ".cache")) / "embeddings.sqlite"
    if cache.exists():  # reuse the test cache so no embedding is recomputed
        (home / "cache").mkdir(parents=True)
        (home / "cache" / "embeddings.sqlite").symlink_to(cache)
    server = EmbeddedServer(home)
    try:
        ok = subprocess.run(_load_cmd(path, "clean"), env=env, cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
        assert ok.returncode == 0, ok.stderr
        expected = _counts(home, "clean")
        # 1) kill -9 the loader once it has written something; small batches keep it loading
        # long enough to be caught in the middle (a whole 1500-line load takes ~2 s)
        loader = subprocess.Popen(_load_cmd(path, "killed", batch_size=5), env=env, cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for_entities(home, "killed", loader)
        loader.kill()
        assert loader.wait(10) == -signal.SIGKILL, "the loader finished before it could be killed"
        # 2) kill -9 the server under a running load
        loader = subprocess.Popen(_load_cmd(path, "killed", batch_size=5), env=env, cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        state = server.status()
        if state is not None:
            os.kill(state.pid, signal.SIGKILL)
        _, err = loader.communicate(timeout=300)
        # KGDB_DEBUG=1: an internal error raises (a traceback and no "kgdb: error:" line);
        # a kgdb error prints the traceback of its chain of causes, then its one line
        assert "internal error" not in err, err[-3000:]
        assert "Traceback" not in err or err.strip().splitlines()[-1].startswith(
            "kgdb: error: "), err[-3000:]
        # 3) a re-run completes, with exactly the clean counts
        rerun = subprocess.run(_load_cmd(path, "killed"), env=env, cwd=ROOT,
                               capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, rerun.stderr
        got = _counts(home, "killed")
        assert got == expected and got[0] == got[1]
    finally:
        server.stop()


def _wait_for_entities(home: Path, graph: str, loader: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and loader.poll() is None:
        try:
            if _counts(home, graph)[0] > 0:
                return
        except Exception:
            pass
        time.sleep(0.05)
