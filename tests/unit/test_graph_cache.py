"""kgdb.graph_cache: per-graph, versioned, bounded, thread-safe (issue 35, item 2)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pytest

from kgdb.graph_cache import GraphCache, graph_key


@dataclass
class FakeStore:
    address: str
    username: str = ""


def test_two_graphs_never_evict_each_other_and_versions_are_per_graph() -> None:
    cache: GraphCache[str] = GraphCache("test_two_graphs", 4)
    a, b = FakeStore("falkordb graph 'a'"), FakeStore("falkordb graph 'b'")
    builds: list[str] = []

    def build(name: str):
        return lambda: builds.append(name) or name

    for _ in range(50):  # alternating tenants: each read once
        assert cache.get(a, 1.0, build("a1")) == "a1"
        assert cache.get(b, 7.0, build("b7")) == "b7"
    assert builds == ["a1", "b7"]
    assert cache.get(a, 2.0, build("a2")) == "a2"  # a's write (a new version) ...
    assert cache.get(b, 7.0, build("b7'")) == "b7"  # ... leaves b's entry alone
    assert builds == ["a1", "b7", "a2"]
    assert cache.peek(a) == (2.0, "a2") and cache.peek(FakeStore("other")) is None
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.entries) == (99, 3, 2)


def test_the_user_is_part_of_the_key() -> None:
    """On Neo4j a user's roles decide what is visible: two users never share an entry."""
    assert graph_key(FakeStore("neo4j db", "alice")) != graph_key(FakeStore("neo4j db", "bob"))


def test_bounded_least_recently_used_out() -> None:
    cache: GraphCache[int] = GraphCache("test_bounded", 3)
    stores = [FakeStore(f"g{i}") for i in range(5)]
    for i in range(3):
        cache.get(stores[i], 0, lambda i=i: i)
    cache.get(stores[0], 0, lambda: -1)  # g0 used: g1 is now the oldest
    cache.get(stores[3], 0, lambda: 3)
    assert cache.peek(stores[1]) is None and cache.peek(stores[0]) == (0, 0)
    stats = cache.stats()
    assert stats.entries == 3 and stats.evictions == 1


def test_concurrent_lookups_on_two_graphs_build_once_and_never_fail() -> None:
    """Eight threads on two graphs, one graph's version changing under them: every lookup
    returns its own graph's value of the version it asked for, each (graph, version) is built
    once, and no lookup raises (the old module-global dict raised KeyError here)."""
    cache: GraphCache[tuple[str, int]] = GraphCache("test_concurrent", 4)
    stores = {"a": FakeStore("graph a"), "b": FakeStore("graph b")}
    builds: list[tuple[str, int]] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def build(name: str, version: int):
        def run() -> tuple[str, int]:
            time.sleep(0.01)  # a slow read: other threads arrive meanwhile
            with lock:
                builds.append((name, version))
            return (name, version)
        return run

    def worker(seed: int) -> None:
        try:
            for i in range(200):
                name = "ab"[(seed + i) % 2]
                version = (i // 50) if name == "a" else 0  # a is rewritten 3 times
                value = cache.get(stores[name], version, build(name, version))
                assert value == (name, version), (value, name, version)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert builds.count(("b", 0)) == 1
    # a's versions may interleave between threads (one thread at version 1, another at 2),
    # but a version is never built twice while it is kept
    assert sorted(set(builds)) == [("a", 0), ("a", 1), ("a", 2), ("a", 3), ("b", 0)]


def test_a_failed_build_reaches_its_waiters_and_keeps_nothing() -> None:
    cache: GraphCache[int] = GraphCache("test_failure", 2)
    store = FakeStore("graph f")
    started = threading.Event()

    def failing() -> int:
        started.set()
        time.sleep(0.05)
        raise RuntimeError("the graph went away")

    seen: list[str] = []

    def waiter() -> None:
        started.wait()
        try:
            cache.get(store, 1, lambda: 99)
            seen.append("value")
        except RuntimeError as exc:
            seen.append(str(exc))

    t = threading.Thread(target=waiter)
    t.start()
    with pytest.raises(RuntimeError, match="went away"):
        cache.get(store, 1, failing)
    t.join()
    assert seen == ["the graph went away"]
    assert cache.peek(store) is None
    assert cache.get(store, 1, lambda: 5) == 5
