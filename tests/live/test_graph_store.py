"""GraphStore on the embedded FalkorDB: parameters, read-only intent, errors, timeouts, L2."""

from __future__ import annotations

import numpy as np
import pytest

from kgdb.cypher.housekeeping import nearest_nodes
from kgdb.errors import QueryTimeoutError, ReadOnlyViolationError, StatementError
from kgdb.statement import Statement
from tests.support.graphs import indexed_entities
from tests.unit.test_dialects import HOSTILE

pytestmark = pytest.mark.live


def test_parameters_round_trip_exactly(store) -> None:
    values = {"s": "O'Brien \"quoted\" \\ back\nline ünï", "f": 0.1234567890123456,
              "tiny": 1e-12, "big": 2**62, "b": True, "n": None, "l": [1, "x", 2.5],
              "m": {"a b": 1, "c": [1, 2]}}
    row = store.run("RETURN $s AS s, $f AS f, $tiny AS tiny, $big AS big, $b AS b, $n AS n, "
                    "$l AS l, $m AS m", values).single()
    assert row is not None
    # FalkorDB's reply prints doubles with 15 significant digits; the value it holds is exact:
    assert row.pop("f") == pytest.approx(values["f"], rel=1e-14)
    assert store.run("RETURN $f = 0.1234567890123456 AS same", {"f": values["f"]}).value() is True
    assert row == {k: v for k, v in values.items() if k != "f"}


def test_float32_vectors_are_stored_exactly(store) -> None:
    vector = np.random.default_rng(3).normal(size=384).astype(np.float32)
    store.run(Statement(f"CREATE (:V {{e: {store.dialect.vector_value('$v')}}})", {"v": vector},
                        write=True))
    stored = np.asarray(store.run("MATCH (n:V) RETURN n.e").value(), dtype=np.float32)
    assert np.array_equal(stored, vector)


@pytest.mark.parametrize("name", [h for h in HOSTILE if "`" not in h])
def test_hostile_identifiers_are_data_not_code(store, name: str) -> None:
    d = store.dialect
    store.run(f"CREATE (n:{d.ident(name)} {{{d.ident(name)}: $v}})-[:{d.ident(name)}]->(:Other)",
              {"v": name}, write=True)
    row = store.run(f"MATCH (n:{d.ident(name)})-[r:{d.ident(name)}]->() "
                    f"RETURN labels(n) AS l, type(r) AS t, n[$k] AS v", {"k": name}).single()
    assert row == {"l": [name], "t": name, "v": name}
    assert store.run("MATCH (n) RETURN count(n)").value() == 2


def test_reads_cannot_write(store) -> None:
    with pytest.raises(ReadOnlyViolationError, match="--write"):
        store.run("CREATE (:Nope)")
    assert store.run("MATCH (n:Nope) RETURN count(n)").value() == 0


def test_statement_errors_carry_the_engine_message(store) -> None:
    with pytest.raises(StatementError, match="Invalid input"):
        store.run("RETURN foo(")


def test_timeout(store) -> None:
    # 400M rows from small lists: far longer than Neo4j's transaction monitor interval (it
    # stops a timed-out query at its next check, up to seconds later), little memory.
    with pytest.raises(QueryTimeoutError):
        store.run("UNWIND range(1, 20000) AS x UNWIND range(1, 20000) AS y "
                  "WITH x, y WHERE (x + y) % 7 = 0 RETURN count(*)", timeout_s=0.05)


def test_vector_search_distances_are_exact_l2(store) -> None:
    d = store.dialect
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(200, 16)).astype(np.float32)
    indexed_entities(store, vectors)
    query = rng.normal(size=16).astype(np.float32)
    rows = store.run(nearest_nodes(d, "Entity", "embedding", query, 10)).rows
    expected = np.linalg.norm(vectors - query, axis=1)
    order = np.argsort(expected)[:10]
    assert [r[0] for r in rows] == [str(i) for i in order]
    for row in rows:
        assert row[2] == pytest.approx(float(expected[int(row[0])]), rel=1e-5, abs=1e-6)
    # and the function form used inside matching statements
    got = store.run(f"MATCH (n:Entity {{id: '0'}}) RETURN "
                    f"{d.l2_distance('n.embedding', '$q')} AS d", {"q": query}).value()
    assert got == pytest.approx(float(expected[0]), rel=1e-5)


def test_vector_search_stays_complete_after_updates(store) -> None:
    """FalkorDB 4.16.3 leaves stale HNSW entries on updates; kgdb over-fetches (see
    FalkorDBDialect.VECTOR_OVERFETCH) and reindex rebuilds."""
    from kgdb.schema.apply import rebuild_vector_indexes

    d = store.dialect
    vectors = np.random.default_rng(2).normal(size=(300, 8)).astype(np.float32)
    indexed_entities(store, vectors)
    store.run("MATCH (n:Entity) SET n.touched = true", write=True)
    store.run("MATCH (n:Entity) SET n.touched = false", write=True)
    statement = nearest_nodes(d, "Entity", "embedding", vectors[0], 16)
    assert len(store.run(statement).rows) == 16
    assert rebuild_vector_indexes(store) == [":Entity(embedding)"]
    assert len(store.run(statement).rows) == 16
