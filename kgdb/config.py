"""Settings, read from the environment (the names Neo4j's and OpenAI's own tools use).

Every environment variable kgdb reads is one field of :class:`Environment` (pydantic-settings),
with its type, default and description; the README's configuration table is checked against it
(tests/unit/test_settings.py). A bad value is a :class:`~kgdb.errors.ConfigError` naming the
variable, which the command line prints as one line."""

from __future__ import annotations

import functools
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from kgdb.errors import ConfigError

Bytes = Annotated[int | None, Field(ge=1)]


class Environment(BaseSettings):
    """The environment variables kgdb reads; an empty value counts as unset."""

    model_config = SettingsConfigDict(case_sensitive=True, env_ignore_empty=True, extra="ignore",
                                      frozen=True)

    KGDB_HOME: Path | None = Field(default=None, description=(
        "data, password, logs and the embedding cache (default: the platform's user data "
        "directory, `~/.local/share/kgdb` on Linux)"))
    KGDB_GRAPH: str = Field(default="kgdb", min_length=1, description="graph name on FalkorDB")
    KGDB_URI: str | None = Field(default=None, description=(
        "`neo4j://...` or `bolt://...` for Neo4j; unset (or `embedded`) for the embedded "
        "FalkorDB"))
    NEO4J_URI: str | None = Field(default=None, description="used when `KGDB_URI` is unset")
    NEO4J_USERNAME: str = Field(default="neo4j", description="Neo4j user")
    NEO4J_PASSWORD: str | None = Field(default=None, description="Neo4j password")
    NEO4J_DATABASE: str | None = Field(default=None, description="Neo4j database (default: the server's)")
    KGDB_TIMEOUT: float = Field(default=300.0, gt=0, description="statement timeout in seconds")
    KGDB_DEBUG: bool = Field(default=False, description=(
        "`1`: debug logging; tracebacks of internal errors and of every error's causes"))
    KGDB_NATIVE: bool = Field(default=True, description=(
        "`0`: plain Cypher on a Neo4j with kgdb's plugin (default: use its native procedures)"))
    KGDB_FULL_SCAN: int = Field(default=10000, ge=0, description=(
        "FalkorDB: a label with at most this many nodes is searched for the nearest vectors "
        "exactly, by a scan (as on Neo4j with kgdb's plugin); a larger one through its HNSW "
        "index (approximate, then re-ranked exactly). 0: always the index"))
    KGDB_NEO4J_PLUGIN: bool = Field(default=True, description=(
        "`0`: `kgdb neo4j start` starts Neo4j without kgdb's plugin"))
    KGDB_SPARK_CONNECTOR_JAR: Path | None = Field(default=None, description=(
        "`kgdb spark load-documents`: the Neo4j Connector for Apache Spark's jar (default: "
        "the one in the local Maven repository, fetched with `mvn dependency:get` if absent)"))
    KGDB_NEO4J_HEAP: str = Field(default="auto", description=(
        "`kgdb neo4j start --heap`: a size (`8g`) or `auto` (Neo4j's own rule for the "
        "machine: docs/engines/neo4j.md, Memory)"))
    KGDB_NEO4J_VECTOR_COPY: Literal["auto", "float32", "int8"] = Field(default="auto", description=(
        "the plugin's in-memory vector copies on a Neo4j kgdb starts (`-Dkgdb.vectors.copy`): "
        "`auto` (float32 while they fit a quarter of the heap, int8 beyond), `float32` or `int8`"))
    KGDB_NEO4J_PAGECACHE: str = Field(default="auto", description=(
        "`kgdb neo4j start --pagecache`: a size or `auto` (the store and a quarter, at least "
        "512m, at most Neo4j's own recommendation)"))
    KGDB_EMBED_MODEL: str = Field(default="minilm", description=(
        "`minilm` (all-MiniLM-L6-v2, 384 dims, offline, on numpy), `minilm-torch` (the same "
        "through sentence-transformers: the `sentence-transformers` extra) or `openai:<model>`"))
    KGDB_EMBED_THREADS: int = Field(default=1, ge=0, description=(
        "BLAS threads of the numpy MiniLM's matrix products (0: the BLAS library's own "
        "setting; on shared cores more threads spin and run slower: kgdb/embed/minilm.py)"))
    KGDB_EMBED_DIM: int | None = Field(default=None, ge=1, description=(
        "dimensions requested from an `openai:<model>` embedder"))
    OPENAI_BASE_URL: str | None = Field(default=None, description=(
        "the LLM endpoint (any OpenAI-compatible server)"))
    OPENAI_API_KEY: str | None = Field(default=None, description="its key")
    KGDB_LLM_MODEL: str = Field(default="gpt-4o-mini", description="the chat model")
    KGDB_LLM_TIMEOUT: float = Field(default=60.0, gt=0, description="seconds per LLM request")
    KGDB_LLM_RETRIES: int = Field(default=3, ge=0, description="HTTP retries per LLM request")
    KGDB_EXTRACT_CONCURRENCY: int = Field(default=4, ge=1, description=(
        "LLM extraction requests in flight at once (`--extract llm`)"))
    KGDB_MAX_KEY_BYTES: Bytes = Field(default=None, description=(
        "longest key string (names, ids, types); default and ceiling 4096"))
    KGDB_MAX_VALUE_BYTES: Bytes = Field(default=None, description="longest other string value (1 MiB)")
    KGDB_MAX_PROGRAM_BYTES: Bytes = Field(default=None, description=(
        "largest program file: schema, rules, logical form, spec, `--facts` (1 MiB)"))
    KGDB_MAX_FILE_BYTES: Bytes = Field(default=None, description="largest data file (16 GiB)")
    KGDB_MAX_LINE_BYTES: Bytes = Field(default=None, description="longest line of a data file (4 MiB)")


def environment() -> Environment:
    """The environment, validated whenever one of its variables changed (so a change by a test
    or a caller is seen), and otherwise the same object: callers read it per value (the text
    contract checks every field of every loaded row), so it must cost a few dict lookups."""
    return _validated(tuple(os.environ.get(name) for name in _FIELDS))


_FIELDS = tuple(Environment.model_fields)


@functools.lru_cache(maxsize=8)
def _validated(snapshot: tuple[str | None, ...]) -> Environment:
    try:
        return Environment()
    except ValidationError as exc:
        error = exc.errors()[0]
        name = ".".join(str(part) for part in error["loc"]) or "environment"
        raise ConfigError(f"{name}={error.get('input')!r}: {error['msg']}") from exc


def debug_enabled() -> bool:
    """``KGDB_DEBUG``; false while the environment is invalid (that error is reported anyway)."""
    try:
        return environment().KGDB_DEBUG
    except ConfigError:
        return False


def kgdb_home() -> Path:
    """``KGDB_HOME``, default the platform's user data directory (``~/.local/share/kgdb``)."""
    home = environment().KGDB_HOME
    return home.expanduser() if home else platformdirs.user_data_path("kgdb")


def cache_dir() -> Path:
    """The platform's user cache directory for kgdb (``~/.cache/kgdb``): downloads that can be
    fetched again, shared by every ``KGDB_HOME``."""
    return platformdirs.user_cache_path("kgdb")


def private_sqlite(path: Path, create_table: str) -> sqlite3.Connection:
    """A SQLite file under ``KGDB_HOME`` (a cache of texts from the user's data): owner-only
    (the -wal and -shm files too), WAL so that several processes share it, one connection that
    threads share behind their own lock; ``create_table`` runs once."""
    private_dir(path.parent)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        private_file(path)
    for suffix in ("-wal", "-shm"):
        private_file(path.with_name(path.name + suffix))
    db = sqlite3.connect(path, timeout=60, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(create_table)
    return db


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) readable by its owner only; tighten it if it
    exists and is ours. Everything kgdb keeps under ``KGDB_HOME`` is user data."""
    for folder in [*reversed(path.parents), path]:
        if folder.exists():
            continue
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:  # another process was first
            pass
    _tighten(path, 0o700)
    return path


def private_file(path: Path) -> None:
    """Make an existing file of ours readable by its owner only."""
    _tighten(path, 0o600)


def _tighten(path: Path, mode: int) -> None:
    try:
        info = path.stat()
        if info.st_uid == os.getuid() and info.st_mode & 0o777 & ~mode:
            os.chmod(path, info.st_mode & 0o777 & mode)
    except OSError:
        pass


@dataclass(frozen=True)
class Settings:
    """Where the graph lives and how to reach it."""

    uri: str | None
    """``KGDB_URI`` or ``NEO4J_URI``; unset means the embedded FalkorDB."""
    username: str
    password: str | None
    database: str | None
    graph: str
    """The FalkorDB graph key (``KGDB_GRAPH``, default ``kgdb``)."""
    home: Path
    timeout_s: float

    @classmethod
    def from_env(cls, *, uri: str | None = None, graph: str | None = None) -> Settings:
        env = environment()
        return cls(
            uri=uri or env.KGDB_URI or env.NEO4J_URI or None,
            username=env.NEO4J_USERNAME,
            password=env.NEO4J_PASSWORD,
            database=env.NEO4J_DATABASE,
            graph=graph or env.KGDB_GRAPH,
            home=kgdb_home(),
            timeout_s=env.KGDB_TIMEOUT,
        )

    @property
    def embedded(self) -> bool:
        return self.uri is None or self.uri == "embedded"
