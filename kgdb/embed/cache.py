"""A persistent embedding cache keyed by (model, text), so reloading never recomputes."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kgdb.config import private_sqlite
from kgdb.embed.base import Embedder


class EmbeddingCache:
    """SQLite file of float32 vectors. Safe for several processes (SQLite locking, WAL)."""

    def __init__(self, path: Path) -> None:
        # Every entity name and text of the graph is in here: owner-only, like the database.
        self.path = path
        self._lock = threading.Lock()
        self._db = private_sqlite(path, (
            "CREATE TABLE IF NOT EXISTS embedding ("
            " model TEXT NOT NULL, text TEXT NOT NULL, vector BLOB NOT NULL,"
            " PRIMARY KEY (model, text)) WITHOUT ROWID"))

    def get_many(self, model: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(texts))
        with self._lock:
            for start in range(0, len(unique), 500):
                chunk = unique[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for text, blob in self._db.execute(
                    f"SELECT text, vector FROM embedding WHERE model = ? AND text IN ({marks})",
                    (model, *chunk),
                ):
                    found[text] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None:
        with self._lock, self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO embedding (model, text, vector) VALUES (?, ?, ?)",
                [(model, t, np.asarray(v, dtype=np.float32).tobytes()) for t, v in items.items()],
            )

    def count(self, model: str | None = None) -> int:
        with self._lock:
            if model is None:
                return int(self._db.execute("SELECT count(*) FROM embedding").fetchone()[0])
            return int(self._db.execute("SELECT count(*) FROM embedding WHERE model = ?",
                                        (model,)).fetchone()[0])


class CachedEmbedder(Embedder):
    """Wraps an embedder; computes only texts the cache has not seen for this model."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model_id = inner.model_id
        self.hits = 0
        self.misses = 0
        self.compute_seconds = 0.0

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        known = self.cache.get_many(self.model_id, texts)
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        self.hits += len(texts) - len(missing)
        if missing:
            started = time.perf_counter()
            computed = self.inner.embed(missing)
            self.compute_seconds += time.perf_counter() - started
            fresh = dict(zip(missing, computed, strict=True))
            self.cache.put_many(self.model_id, fresh)
            known.update(fresh)
            self.misses += len(missing)
        return np.stack([known[t] for t in texts]).astype(np.float32, copy=False)
