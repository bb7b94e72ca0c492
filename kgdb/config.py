"""Settings, read from the environment (the names Neo4j's and OpenAI's own tools use)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def kgdb_home() -> Path:
    """``KGDB_HOME``, default ``$XDG_DATA_HOME/kgdb`` (``~/.local/share/kgdb``)."""
    if os.environ.get("KGDB_HOME"):
        return Path(os.environ["KGDB_HOME"]).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "kgdb"


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
        env = os.environ
        return cls(
            uri=uri or env.get("KGDB_URI") or env.get("NEO4J_URI") or None,
            username=env.get("NEO4J_USERNAME", "neo4j"),
            password=env.get("NEO4J_PASSWORD"),
            database=env.get("NEO4J_DATABASE") or None,
            graph=graph or env.get("KGDB_GRAPH", "kgdb"),
            home=kgdb_home(),
            timeout_s=float(env.get("KGDB_TIMEOUT", "300")),
        )

    @property
    def embedded(self) -> bool:
        return self.uri is None or self.uri == "embedded"
