"""The service's embedding model, shared by every request and tenant without letting one
request starve the others or one tenant learn what another asked.

- **Per-tenant caches.** Each tenant has its own bounded in-memory cache; the service never
  reads the persistent cache of the loaders (it holds every tenant's names, so a fast answer
  would say a name exists elsewhere) and never writes it (a read request adds nothing to disk).
- **Fairness.** Texts are embedded in small batches; between batches the model goes to the
  request that has waited longest (a FIFO lock), so a large request slows but never blocks
  a small one.
- **The request's deadline** (``--timeout``, set per request by the service) holds while
  waiting for the model: past it the request ends with a timeout instead of waiting on.
"""

from __future__ import annotations

import contextvars
import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from kgdb.embed.base import Embedder
from kgdb.embed.cache import CachedEmbedder
from kgdb.errors import QueryTimeoutError
from kgdb.graph_cache import CacheStats

BATCH = 16
"""Texts per turn at the model."""
CACHE_ENTRIES = 4096
"""Vectors kept per tenant (1.5 KB each for MiniLM)."""
CACHED_CHARS = 512
"""Longer texts are embedded but not kept (the cache holds names and questions)."""

_SURROGATE = re.compile("[\ud800-\udfff]")

DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "kgdb_serve_deadline", default=None)
"""``time.monotonic()`` by which the current request must end (None: no deadline)."""


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    token = DEADLINE.set(None if seconds is None else time.monotonic() + seconds)
    try:
        yield
    finally:
        DEADLINE.reset(token)


def remaining() -> float | None:
    """Seconds left to the current request (None: no deadline); raises once past it."""
    end = DEADLINE.get()
    if end is None:
        return None
    left = end - time.monotonic()
    if left <= 0:
        raise QueryTimeoutError("the request ran longer than the server's timeout")
    return left


class FairLock:
    """A lock handed out in arrival order; :meth:`acquire` gives up at the request's
    deadline."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()
        self._held = False

    @contextmanager
    def hold(self) -> Iterator[None]:
        me = object()
        with self._cond:
            self._queue.append(me)
            try:
                while self._held or self._queue[0] is not me:
                    left = remaining()
                    self._cond.wait(timeout=min(left, 1.0) if left is not None else 1.0)
            except BaseException:
                self._queue.remove(me)
                self._cond.notify_all()
                raise
            self._queue.popleft()
            self._held = True
        try:
            yield
        finally:
            with self._cond:
                self._held = False
                self._cond.notify_all()


class SharedModel:
    """The one model of the service, taken in turns of :data:`BATCH` texts."""

    def __init__(self, model: Embedder) -> None:
        while isinstance(model, CachedEmbedder):  # the loaders' shared cache: not here
            model = model.inner
        self.model = model
        self.model_id = model.model_id
        self._lock = FairLock()
        self._tenants: dict[str, TenantEmbedder] = {}
        self._tenants_lock = threading.Lock()
        self._gone = CacheStats("embeddings")
        """The counts of the tenants' caches dropped since the start (entries 0)."""

    @property
    def dimension(self) -> int:
        return self.model.dimension

    def compute(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` (lone surrogates read as U+FFFD: whatever a request or a
        model's reply carried, the tokenizer gets text)."""
        texts = [_SURROGATE.sub("\ufffd", t) for t in texts]
        parts = []
        for start in range(0, len(texts), BATCH):
            remaining()
            with self._lock.hold():
                parts.append(self.model.embed(texts[start:start + BATCH]))
        if not parts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.concatenate(parts).astype(np.float32, copy=False)

    def for_tenant(self, name: str) -> TenantEmbedder:
        with self._tenants_lock:
            embedder = self._tenants.get(name)
            if embedder is None:
                embedder = self._tenants[name] = TenantEmbedder(self, name)
            return embedder

    def forget(self, name: str) -> None:
        """Drop a tenant's cache (its store was closed)."""
        with self._tenants_lock:
            gone = self._tenants.pop(name, None)
            if gone is not None:
                self._gone = self._gone.plus(gone.stats())

    def stats(self) -> CacheStats:
        """Every tenant's cache counted together (the ``embeddings`` cache's metrics): hits,
        misses and evictions since the start, entries now."""
        with self._tenants_lock:
            total, tenants = self._gone, list(self._tenants.values())
        for tenant in tenants:
            total = total.plus(tenant.stats())
        return total


class TenantEmbedder(Embedder):
    """The shared model with one tenant's own bounded cache (least recently used out)."""

    def __init__(self, shared: SharedModel, tenant: str,
                 entries: int = CACHE_ENTRIES) -> None:
        self.shared = shared
        self.tenant = tenant
        self.model_id = shared.model_id
        self.entries = entries
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = self._misses = self._evictions = 0

    @property
    def dimension(self) -> int:
        return self.shared.dimension

    def cached(self) -> int:
        with self._lock:
            return len(self._cache)

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats("embeddings", self._hits, self._misses, self._evictions,
                              len(self._cache), self.entries)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        known: dict[str, np.ndarray] = {}
        with self._lock:
            for text in dict.fromkeys(texts):
                vector = self._cache.get(text)
                if vector is not None:
                    self._cache.move_to_end(text)
                    known[text] = vector
            missing = [t for t in dict.fromkeys(texts) if t not in known]
            self._hits += len(known)
            self._misses += len(missing)
        if missing:
            fresh = dict(zip(missing, self.shared.compute(missing), strict=True))
            known.update(fresh)
            with self._lock:
                self._cache.update((t, v) for t, v in fresh.items() if len(t) <= CACHED_CHARS)
                while len(self._cache) > self.entries:
                    self._cache.popitem(last=False)
                    self._evictions += 1
        return np.stack([known[t] for t in texts]).astype(np.float32, copy=False)
