"""A persistent cache of LLM extraction replies, so extracting the same chunks again is free.

Keyed by (model, prompt, chunk message): the prompt is the whole system prompt (its version
and the schema's types are in it) and the chunk message is the chunk's text with its headings,
both stored as SHA-256 digests. The value is the model's reply text that parsed, not the parsed
result: a cache hit is parsed again by the current parser, so a fix to the parser applies to
cached replies too, and what the parser drops is counted the same on a cached run.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from kgdb.config import kgdb_home, private_sqlite


def default_cache_path() -> Path:
    """``$KGDB_HOME/cache/extractions.sqlite``, next to the embedding cache."""
    return kgdb_home() / "cache" / "extractions.sqlite"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ExtractionCache:
    """SQLite file of reply texts. Safe for threads (one connection behind a lock) and for
    several processes (SQLite locking, WAL), like :class:`kgdb.embed.cache.EmbeddingCache`."""

    def __init__(self, path: Path | None = None) -> None:
        path = path or default_cache_path()
        # The replies quote the documents: owner-only, like the database.
        self.path = path
        self._lock = threading.Lock()
        self._db = private_sqlite(path, (
            "CREATE TABLE IF NOT EXISTS extraction ("
            " model TEXT NOT NULL, prompt TEXT NOT NULL, chunk TEXT NOT NULL,"
            " reply TEXT NOT NULL, PRIMARY KEY (model, prompt, chunk)) WITHOUT ROWID"))

    def get(self, model: str, prompt: str, chunk: str) -> str | None:
        """The reply cached for this model, system prompt and chunk message, or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT reply FROM extraction WHERE model = ? AND prompt = ? AND chunk = ?",
                (model, _digest(prompt), _digest(chunk)),
            ).fetchone()
        return None if row is None else str(row[0])

    def put(self, model: str, prompt: str, chunk: str, reply: str) -> None:
        """Remember a reply that parsed (never call it with one that did not)."""
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO extraction (model, prompt, chunk, reply)"
                " VALUES (?, ?, ?, ?)",
                (model, _digest(prompt), _digest(chunk), reply),
            )

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM extraction").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
