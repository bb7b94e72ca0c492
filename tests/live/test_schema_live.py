"""Applying schemas: idempotent, catalog by meaning, concept trees, dimension checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kgdb.embed.base import Embedder
from kgdb.errors import EmbeddingDimensionError
from kgdb.link import link_relations, link_types
from kgdb.schema import apply_schema, parse_schema_file

pytestmark = pytest.mark.live
ROOT = Path(__file__).resolve().parents[2]


def snapshot(store) -> tuple:
    labels = store.run("MATCH (n) UNWIND labels(n) AS l RETURN l, count(*) ORDER BY l").rows
    rels = store.run("MATCH ()-[r]->() RETURN type(r), count(*) ORDER BY type(r)").rows
    indexes = sorted((i.kind, i.label, i.properties, i.dimension) for i in store.indexes())
    props = store.run("MATCH (n:EntityType) RETURN n.name, n.text, n.kind ORDER BY n.name").rows
    return labels, rels, indexes, props


def test_apply_twice_changes_nothing(store, embedder) -> None:
    schema = parse_schema_file(ROOT / "loaders/schemas/metaqa.schema")
    first = apply_schema(store, schema, embedder)
    assert first.created and first.relation_types == 9 and first.entity_types == 8
    before = snapshot(store)
    second = apply_schema(store, schema, embedder)
    assert second.created == []
    assert snapshot(store) == before
    kinds = {(i.kind, i.label) for i in store.indexes()}
    for label in ("Entity", "Concept", "Chunk", "RelationType", "EntityType"):
        assert ("vector", label) in kinds
    assert ("unique", "Entity") in kinds and ("fulltext", "Entity") in kinds


def test_catalog_is_searchable_by_meaning(store, embedder) -> None:
    apply_schema(store, parse_schema_file(ROOT / "loaders/schemas/metaqa.schema"), embedder)
    rel = link_relations(store, embedder, ["who directed it", "which actors starred"], k=3)
    assert rel["who directed it"][0].id == "directed_by"
    assert rel["which actors starred"][0].id == "starred_actors"
    types = link_types(store, embedder, ["film"], k=2)
    assert types["film"][0].id == "Movie"
    exact = link_relations(store, embedder, ["directed by"], k=1)["directed by"][0]
    assert exact.distance == pytest.approx(0.0, abs=1e-5)


def test_concept_trees(store, embedder, tmp_path: Path) -> None:
    path = tmp_path / "t.schema"
    path.write_text("Severity: ConceptType\n    concepts:\n        Hypertension\n"
                    "            Grade 1 Hypertension\n            Grade 2 Hypertension\n")
    report = apply_schema(store, parse_schema_file(path), embedder)
    assert report.concepts == 3
    rows = store.run("MATCH (c:Concept:Severity)-[:isA]->(p:Concept) "
                     "RETURN c.id AS c, p.id AS p ORDER BY c").records()
    assert rows == [{"c": "Severity/Grade 1 Hypertension", "p": "Severity/Hypertension"},
                    {"c": "Severity/Grade 2 Hypertension", "p": "Severity/Hypertension"}]
    apply_schema(store, parse_schema_file(path), embedder)
    assert store.run("MATCH (c:Concept) RETURN count(c)").value() == 3
    assert store.run("MATCH ()-[r:isA]->() RETURN count(r)").value() == 2


def test_concept_tree_uses_its_hypernym_predicate(store, embedder, tmp_path: Path) -> None:
    """``hypernymPredicate: locateAt`` links that type's concepts with locateAt, not isA; another
    concept type in the same schema keeps isA."""
    path = tmp_path / "places.schema"
    path.write_text("Place: ConceptType\n"
                    "    hypernymPredicate: locateAt\n"
                    "    concepts:\n"
                    "        Zhejiang\n"
                    "            Hangzhou\n"
                    "                West Lake District\n"
                    "            Ningbo\n"
                    "Severity: ConceptType\n"
                    "    concepts:\n"
                    "        Hypertension\n"
                    "            Grade 1 Hypertension\n")
    report = apply_schema(store, parse_schema_file(path), embedder)
    assert report.concepts == 6
    located = ("MATCH (c:Concept:Place)-[:locateAt]->(p:Concept:Place) "
               "RETURN c.id AS c, p.id AS p ORDER BY c")
    expected = [{"c": "Place/Hangzhou", "p": "Place/Zhejiang"},
                {"c": "Place/Ningbo", "p": "Place/Zhejiang"},
                {"c": "Place/West Lake District", "p": "Place/Hangzhou"}]
    assert store.run(located).records() == expected
    assert store.run("MATCH (:Place)-[r:isA]-() RETURN count(r)").value() == 0
    assert store.run("MATCH (c:Concept:Severity)-[:isA]->(p:Concept:Severity) "
                     "RETURN c.id AS c, p.id AS p").records() == [
        {"c": "Severity/Grade 1 Hypertension", "p": "Severity/Hypertension"}]
    assert store.run("MATCH (:Severity)-[r:locateAt]-() RETURN count(r)").value() == 0
    apply_schema(store, parse_schema_file(path), embedder)
    assert store.run(located).records() == expected
    assert store.run("MATCH ()-[r:locateAt]->() RETURN count(r)").value() == 3


class Wide(Embedder):
    model_id = "test/wide-768"

    @property
    def dimension(self) -> int:
        return 768

    def embed(self, texts):  # type: ignore[no-untyped-def]
        return np.zeros((len(texts), 768), dtype=np.float32)


def test_other_dimension_is_refused_naming_both(store, embedder) -> None:
    schema = parse_schema_file(ROOT / "loaders/schemas/metaqa.schema")
    apply_schema(store, schema, embedder)
    with pytest.raises(EmbeddingDimensionError) as info:
        apply_schema(store, schema, Wide())
    message = str(info.value)
    assert "384 dimensions" in message and "gives 768" in message
    assert "KGDB_EMBED_MODEL" in message and "kgdb db reset" in message
