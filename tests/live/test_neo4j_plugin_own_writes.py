"""kgdb's Neo4j plugin through kgdb on a real Neo4j (issue 35): ``kgdb.nearestNodes`` inside a
unit of work that has written sees that unit's own writes (created nodes, changed and integer
vectors, removed vectors, deleted and relabelled nodes), equal to a brute-force scan in the
same transaction; a unit that fails writes nothing and the next search sees the committed
data."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from kgdb.errors import KgdbError
from kgdb.statement import Statement
from tests.live.test_neo4j_plugin import plugin_store  # noqa: F401 (the fixture)

pytestmark = pytest.mark.live

LABEL, DIM = "OwnProbe", 4


def _vector(rng: random.Random) -> list[Any]:
    if rng.random() < 0.25:
        return [rng.randint(-3, 3) for _ in range(DIM)]  # stored as a list of integers
    return [rng.gauss(0, 1) for _ in range(DIM)]


def _search(index: str, q: list[float], k: int) -> Statement:
    return Statement("CALL kgdb.nearestNodes($index, $q, $k) YIELD node, distance "
                     "RETURN node.i AS i, distance ORDER BY distance, i LIMIT $k",
                     {"index": index, "q": q, "k": k})


def _all() -> Statement:
    return Statement(f"MATCH (n:{LABEL}) RETURN n.i AS i, n.embedding AS v")


def _brute(rows: list[dict[str, Any]], q: list[float], k: int) -> list[tuple[float, int]]:
    found = []
    for r in rows:
        v = r["v"]
        if isinstance(v, list) and len(v) == DIM and all(isinstance(x, int | float) for x in v):
            found.append((math.sqrt(sum((float(a) - b) ** 2 for a, b in zip(v, q, strict=True))),
                          int(r["i"])))
    return sorted(found)[:k]


def _same(got: list[dict[str, Any]], want: list[tuple[float, int]]) -> None:
    assert [r["i"] for r in got] == [i for _, i in want]
    for r, (d, _) in zip(got, want, strict=True):
        assert math.isclose(r["distance"], d, rel_tol=1e-12, abs_tol=1e-12)


def test_nearest_nodes_sees_the_units_own_writes(plugin_store: Any) -> None:  # noqa: F811
    store, d = plugin_store, plugin_store.dialect
    for op in d.create_vector_index(LABEL, "embedding", DIM):
        store.execute(op)
    rng = random.Random(35)
    store.run(Statement(f"UNWIND $rows AS r CREATE (n:{LABEL}) SET n = r",
                        {"rows": [{"i": i, "embedding": _vector(rng)} for i in range(400)]},
                        write=True))
    store.run(d.await_indexes())
    index = d.index_name(LABEL, "embedding", "vector")
    q = [rng.gauss(0, 1) for _ in range(DIM)]
    _same(store.run(_search(index, q, 5)).records(), _brute(store.run(_all()).records(), q, 5))
    following = 400
    for step in range(20):
        q = [rng.gauss(0, 1) for _ in range(DIM)]
        k = rng.randint(1, 8)
        writes = [
            Statement(f"CREATE (:{LABEL} {{i: $i, embedding: $v}})",
                      {"i": following, "v": [x + 1e-3 for x in q]}, write=True),
            Statement(f"MATCH (n:{LABEL} {{i: $i}}) SET n.embedding = $v",
                      {"i": rng.randrange(following), "v": _vector(rng)}, write=True),
            Statement(f"MATCH (n:{LABEL} {{i: $i}}) DETACH DELETE n",
                      {"i": rng.randrange(following)}, write=True),
            Statement(f"MATCH (n:{LABEL} {{i: $i}}) REMOVE n:{LABEL}",
                      {"i": rng.randrange(following)}, write=True),
            Statement(f"MATCH (n:{LABEL} {{i: $i}}) REMOVE n.embedding",
                      {"i": rng.randrange(following)}, write=True),
        ]
        following += 1
        if step % 4 == 3:  # a unit that fails after its writes and its search: none stays
            before = store.run(_all()).records()
            with pytest.raises(KgdbError):
                store.run_unit([*writes, _search(index, q, k),
                                Statement("UNWIND [1, 0] AS x RETURN 1 / x AS y")])
            assert sorted(map(str, store.run(_all()).records())) == \
                sorted(map(str, before))
        else:
            *_, got, rows = store.run_unit([*writes, _search(index, q, k), _all()])
            created = [r for r in rows.records() if r["i"] == following - 1]
            assert created, "the unit's own node"
            _same(got.records(), _brute(rows.records(), q, k))
            assert got.records()[0]["i"] == following - 1  # the node it just created
        _same(store.run(_search(index, q, k)).records(),
              _brute(store.run(_all()).records(), q, k))
