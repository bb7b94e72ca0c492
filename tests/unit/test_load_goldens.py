"""Golden table of the loaders' statements: kgdb/cypher/load.py, the schema catalog
(kgdb/cypher/catalog.py) and the schema's DDL (kgdb/schema/apply.py through the dialects),
both dialects side by side in tests/unit/goldens/load.json; every Neo4j text linted.

Regenerate with ``KGDB_UPDATE_GOLDENS=1 pytest tests/unit/test_load_goldens.py`` and review
the diff."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kgdb.cypher import catalog, load
from kgdb.dialects import Dialect
from kgdb.load.records import merge_records, read_spec
from kgdb.schema import Schema, parse_schema_file
from kgdb.schema.apply import desired_indexes, index_operations
from kgdb.statement import Operation
from tests.support.goldens import Case, assert_neo4j_lints_clean, validate_all

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = sorted((ROOT / "loaders" / "schemas").glob("*.schema"))
SPECS = sorted((ROOT / "loaders" / "specs").glob("*.toml"))
HOSTILE = "x`]->() DELETE n //"
VECTOR = [0.25, 0.5]
TYPE_ROW = {"name": "Movie", "kind": "EntityType", "alias": "film", "description": "a film",
            "parent": "Work", "text": "Movie (film)", "embedding": VECTOR}
RELATION_ROW = {"name": "directed_by", "text": "directed by", "source": "Movie",
                "target": "Person", "description": "", "embedding": VECTOR}


def schema_ddl(schema: Schema) -> Case:
    def build(dialect: Dialect) -> list[Operation]:
        needs_range = dialect.UNIQUE_NEEDS_RANGE_INDEX
        return [op for spec in desired_indexes(schema, 384, unique_needs_range=needs_range)
                for op in index_operations(dialect, spec)]
    return Case(f"schema_ddl[{Path(schema.source).name}]", {"schema": Path(schema.source).name,
                                                            "dimension": 384}, build)


CASES = [
    Case("match_embedded_entities", {"ids": ["Kismet"]},
         lambda d: load.match_embedded_entities(["Kismet"])),
    Case("merge_entities", {"ids": ["Kismet"], "vectors": [VECTOR]},
         lambda d: load.merge_entities(d, ["Kismet"], ["Kismet"], np.array([VECTOR]))),
    Case("create_entities", {"ids": ["Kismet"], "vectors": [VECTOR]},
         lambda d: load.create_entities(d, ["Kismet"], ["Kismet"], np.array([VECTOR]))),
    Case("create_facts", {"predicate": "directed_by", "pairs": [["Kismet", "William Dieterle"]]},
         lambda d: load.create_facts(d, "directed_by", [("Kismet", "William Dieterle")])),
    Case("create_facts[hostile]", {"predicate": HOSTILE},
         lambda d: load.create_facts(d, HOSTILE, [])),
    Case("bulk_entity_at", {"node": 7}, lambda d: d.bulk_entity_at(7)),
    Case("bulk_lists_to_vectors", {"first": 0, "last": 4999},
         lambda d: d.bulk_lists_to_vectors(0, 4999)),
    Case("merge_facts", {"predicate": "directed_by", "pairs": [["Kismet", "William Dieterle"]]},
         lambda d: load.merge_facts(d, "directed_by", [("Kismet", "William Dieterle")])),
    Case("merge_facts[hostile]", {"predicate": HOSTILE},
         lambda d: load.merge_facts(d, HOSTILE, [])),
    Case("merge_facts[empty]", {"predicate": ""}, lambda d: load.merge_facts(d, "", [])),
    Case("drop_repeated_facts", {"predicate": "directed_by",
                                 "pairs": [["Kismet", "William Dieterle"]]},
         lambda d: load.drop_repeated_facts(d, "directed_by", [("Kismet", "William Dieterle")])),
    Case("drop_repeated_facts[hostile]", {"predicate": HOSTILE},
         lambda d: load.drop_repeated_facts(d, HOSTILE, [])),
    Case("merge_records", {"label": "Patient", "properties": ["age", "blood pressure"],
                           "records": [["p1", [61, "150/95"]]]},
         lambda d: load.merge_records(d, "Patient", ["age", "blood pressure"],
                                      [("p1", [61, "150/95"])])),
    *[Case(f"merge_records[{p.name}]", {"spec": p.name},
           lambda d, p=p: merge_records(d, read_spec(p))) for p in SPECS],
    Case("merge_entity_types", {"rows": [TYPE_ROW]},
         lambda d: catalog.merge_entity_types(d, [TYPE_ROW])),
    Case("merge_relation_types", {"types": [["directed_by", "directed by", VECTOR]]},
         lambda d: catalog.merge_relation_types(d, [("directed_by", "directed by", VECTOR)])),
    Case("describe_relation_types", {"rows": [RELATION_ROW]},
         lambda d: catalog.describe_relation_types(d, [RELATION_ROW])),
    Case("merge_concepts", {"concept_type": "Disease Severity",
                            "concepts": [["Disease Severity/Mild", "Mild", VECTOR]]},
         lambda d: catalog.merge_concepts(d, "Disease Severity",
                                          [("Disease Severity/Mild", "Mild", VECTOR)])),
    Case("merge_hierarchy[EntityType]", {"label": "EntityType", "key": "name", "predicate": "isA",
                                         "links": [["Movie", "Work"]]},
         lambda d: catalog.merge_hierarchy(d, "EntityType", "name", "isA", [("Movie", "Work")])),
    Case("merge_hierarchy[Concept]", {"label": "Concept", "key": "id", "predicate": "locateAt",
                                      "links": [["Place/Paris", "Place/France"]]},
         lambda d: catalog.merge_hierarchy(d, "Concept", "id", "locateAt",
                                           [("Place/Paris", "Place/France")])),
    Case("merge_hierarchy[hostile]", {"predicate": HOSTILE},
         lambda d: catalog.merge_hierarchy(d, "Concept", "id", HOSTILE, [])),
    Case("merge_setting", {"key": "embedding", "model": "all-MiniLM-L6-v2", "dimension": 384},
         lambda d: catalog.merge_setting("embedding", "all-MiniLM-L6-v2", 384)),
    Case("read_setting", {"key": "embedding"}, lambda d: catalog.read_setting("embedding")),
    Case("create_range_index", {"label": "Film", "property": "year"},
         lambda d: d.create_range_index("Film", "year")),
    Case("create_unique_constraint", {"label": "Film", "property": "id"},
         lambda d: d.create_unique_constraint("Film", "id")),
    Case("create_existence_constraint", {"label": "Film", "property": "title"},
         lambda d: d.create_existence_constraint("Film", "title")),
    Case("create_fulltext_index", {"label": "Film", "properties": ["title", "plot"]},
         lambda d: d.create_fulltext_index("Film", ["title", "plot"])),
    Case("create_vector_index", {"label": "Entity", "property": "embedding", "dimension": 384},
         lambda d: d.create_vector_index("Entity", "embedding", 384)),
    schema_ddl(Schema(source="<built-in>")),
    *[schema_ddl(parse_schema_file(p)) for p in SCHEMAS],
]


def test_load_goldens() -> None:
    table = validate_all("load", CASES)
    # merge_facts[empty] is an expected error (no statement); every other case has text.
    assert next(c for c in table["cases"] if c["case"] == "merge_facts[empty]")["neo4j"]["error"]
    assert_neo4j_lints_clean(table)
