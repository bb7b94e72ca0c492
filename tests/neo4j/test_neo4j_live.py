"""The same behaviour as the embedded engine, on a live Neo4j 5.26."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kgdb.errors import ReadOnlyViolationError
from kgdb.link import link_entities
from kgdb.load.triples import load_triples
from kgdb.schema import apply_schema, parse_schema_file
from tests.support.graphs import indexed_entities
from tests.unit.test_dialects import HOSTILE

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]


def test_server_is_neo4j_5(neo4j_store) -> None:
    info = neo4j_store.server_info()
    assert info["engine"] == "neo4j" and info["version"].split(".")[0] in {"5", "2025", "2026"}


def test_schema_apply_is_idempotent(neo4j_store, embedder) -> None:
    schema = parse_schema_file(ROOT / "loaders/schemas/metaqa.schema")
    first = apply_schema(neo4j_store, schema, embedder)
    assert first.created
    assert apply_schema(neo4j_store, schema, embedder).created == []
    assert all(i.state == "ONLINE" for i in neo4j_store.indexes())


def test_sample_load_and_reload(neo4j_store, embedder) -> None:
    sample = ROOT / "loaders/samples/movies.txt"
    load_triples(neo4j_store, embedder, sample, progress=False)
    expected_facts = sum(1 for line in sample.read_text().splitlines() if line.strip())
    entities = neo4j_store.run("MATCH (n:Entity) RETURN count(n)").value()
    facts = neo4j_store.run("MATCH (:Entity)-[r]->(:Entity) RETURN count(r)").value()
    assert facts == expected_facts
    load_triples(neo4j_store, embedder, sample, progress=False)
    assert neo4j_store.run("MATCH (n:Entity) RETURN count(n)").value() == entities
    found = link_entities(neo4j_store, embedder, ["Kismet"], k=3)["Kismet"]
    assert found[0].id == "Kismet" and found[0].distance == pytest.approx(0, abs=1e-4)


def test_vector_distances_are_exact_l2(neo4j_store) -> None:
    d = neo4j_store.dialect
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(100, 16)).astype(np.float32)
    indexed_entities(neo4j_store, vectors)
    query = rng.normal(size=16).astype(np.float32)
    rows = neo4j_store.run(d.nearest_nodes("Entity", "embedding"), {"k": 5, "vector": query}).rows
    expected = np.linalg.norm(vectors - query, axis=1)
    for row in rows:
        assert row[2] == pytest.approx(float(expected[int(row[0])]), rel=1e-4)


def test_reads_cannot_write(neo4j_store) -> None:
    with pytest.raises(ReadOnlyViolationError):
        neo4j_store.run("CREATE (:Nope)")


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_identifiers(neo4j_store, name: str) -> None:
    d = neo4j_store.dialect
    neo4j_store.run(f"CREATE (n:{d.ident(name)} {{{d.ident(name)}: $v}})", {"v": name},
                    write=True)
    assert neo4j_store.run(f"MATCH (n:{d.ident(name)}) RETURN n[$k]", {"k": name}).value() == name
    assert neo4j_store.run("MATCH (n) RETURN count(n)").value() == 1
