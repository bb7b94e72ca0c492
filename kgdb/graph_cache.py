"""Per-graph caches with an owner: what a retrieval reads from a graph once and keeps between
questions (the retrieval graph's phrase names, the entity names a solver links).

Every cache here is

- **keyed by the graph** (:func:`graph_key`: the engine, its address, the graph or database,
  and on Neo4j the user, whose roles may hide part of it), so two tenants never share or
  evict each other's entry by asking;
- **versioned by that graph's own state** (its retrieval graph's build time, its entity
  count): a lookup with another version replaces that graph's entry and no other, so only
  that graph's writes invalidate it;
- **bounded**: at most ``entries`` graphs, the least recently used one dropped first;
- **safe under concurrent requests**: one lock guards the table (never held while a value is
  built), a value is handed out by reference (a concurrent replacement cannot take it away
  from a caller), and one build runs per graph and version at a time (the others wait for it
  instead of reading the same 13,413 names in parallel).

Hits, misses and evictions are counted per cache (:func:`stats`; the service exports them as
``kgdb_cache_*`` metrics, docs/operations.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

V = TypeVar("V")

GraphKey = tuple[Hashable, ...]


def graph_key(store: Any) -> GraphKey:
    """Who a cached value belongs to: the store's engine and graph (its ``address`` names the
    server and the graph or database), and the database user where the engine has one (on
    Neo4j a user's roles decide what is visible, so two users' reads are not shared)."""
    return (type(store).__name__, str(store.address), str(getattr(store, "username", "") or ""))


@dataclass
class CacheStats:
    """What a cache did since the process started."""

    name: str
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    entries: int = 0
    capacity: int = 0

    def plus(self, other: CacheStats) -> CacheStats:
        return CacheStats(self.name, self.hits + other.hits, self.misses + other.misses,
                          self.evictions + other.evictions, self.entries + other.entries,
                          self.capacity + other.capacity)


class _Building:
    """A build in progress: waiters block on ``done`` and read ``value`` or ``error``."""

    def __init__(self, version: Hashable) -> None:
        self.version = version
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class GraphCache(Generic[V]):
    """One value per graph, for one version of it (see the module docstring)."""

    def __init__(self, name: str, entries: int) -> None:
        if entries < 1:
            raise ValueError("a graph cache holds at least one graph")
        self.name = name
        self.entries = entries
        self._lock = threading.Lock()
        self._table: OrderedDict[GraphKey, tuple[Hashable, V]] = OrderedDict()
        self._building: dict[GraphKey, _Building] = {}
        self._stats = CacheStats(name, capacity=entries)
        _CACHES[name] = self

    def peek(self, store: Any) -> tuple[Hashable, V] | None:
        """The graph's kept version and value, unchecked (the caller checks the version
        some cheaper way, e.g. inside a statement it runs anyway); not counted."""
        key = graph_key(store)
        with self._lock:
            kept = self._table.get(key)
            if kept is not None:
                self._table.move_to_end(key)
            return kept

    def get(self, store: Any, version: Hashable, build: Callable[[], V]) -> V:
        """The graph's value for ``version``: kept, or built by ``build`` (outside the lock;
        one build per graph at a time, the other callers wait for it). A build's error goes to
        every caller waiting for it, and nothing is kept."""
        key = graph_key(store)
        while True:
            with self._lock:
                kept = self._table.get(key)
                if kept is not None and kept[0] == version:
                    self._table.move_to_end(key)
                    self._stats.hits += 1
                    return kept[1]
                building = self._building.get(key)
                if building is None:
                    building = self._building[key] = _Building(version)
                    self._stats.misses += 1
                    owner = True
                else:
                    owner = False
            if not owner:
                building.done.wait()
                if building.version == version:
                    if building.error is not None:
                        raise building.error
                    with self._lock:
                        self._stats.hits += 1
                    return building.value
                continue  # another version was built: look again
            try:
                value = build()
            except BaseException as exc:
                building.error = exc
                with self._lock:
                    del self._building[key]
                building.done.set()
                raise
            building.value = value
            with self._lock:
                self._table[key] = (version, value)
                self._table.move_to_end(key)
                while len(self._table) > self.entries:
                    self._table.popitem(last=False)
                    self._stats.evictions += 1
                del self._building[key]
            building.done.set()
            return value

    def forget(self, store: Any) -> None:
        """Drop the graph's entry (its data is gone)."""
        with self._lock:
            self._table.pop(graph_key(store), None)

    def clear(self) -> None:
        with self._lock:
            self._table.clear()

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self.name, self._stats.hits, self._stats.misses,
                              self._stats.evictions, len(self._table), self.entries)


_CACHES: dict[str, GraphCache[Any]] = {}


def stats() -> list[CacheStats]:
    """Every graph cache's counts (the service's ``kgdb_cache_*`` metrics)."""
    return [cache.stats() for cache in list(_CACHES.values())]
