"""Golden table of the loaders' statements: kgdb/cypher/load.py, the schema catalog
(kgdb/cypher/catalog.py) and the schema's DDL (kgdb/schema/apply.py through the dialects),
both dialects side by side in tests/unit/goldens/load.json; every Neo4j text linted.

Regenerate with ``KGDB_UPDATE_GOLDENS=1 pytest tests/unit/test_load_goldens.py`` and review
the diff."""

from __future__ import annotations

from pathlib import Path

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


def schema_ddl(schema: Schema) -> Case:
    def build(d: Dialect) -> list[Operation]:
        return [op for spec in desired_indexes(schema, 384, unique_needs_range=d.UNIQUE_NEEDS_RANGE_INDEX)
                for op in index_operations(d, spec)]
    return Case(f"schema_ddl[{Path(schema.source).name}]", {"schema": Path(schema.source).name,
                                                            "dimension": 384}, build)


CASES = [
    Case("match_embedded_entities", {}, lambda d: load.match_embedded_entities()),
    Case("merge_entities", {}, load.merge_entities),
    Case("merge_facts", {"predicate": "directed_by"}, lambda d: load.merge_facts(d, "directed_by")),
    Case("merge_facts[hostile]", {"predicate": HOSTILE}, lambda d: load.merge_facts(d, HOSTILE)),
    Case("merge_facts[empty]", {"predicate": ""}, lambda d: load.merge_facts(d, "")),
    Case("merge_records", {"label": "Patient", "properties": ["age", "blood pressure"]},
         lambda d: load.merge_records(d, "Patient", ["age", "blood pressure"])),
    *[Case(f"merge_records[{p.name}]", {"spec": p.name},
           lambda d, p=p: merge_records(d, read_spec(p))) for p in SPECS],
    Case("merge_entity_types", {}, catalog.merge_entity_types),
    Case("merge_relation_types", {}, catalog.merge_relation_types),
    Case("describe_relation_types", {}, catalog.describe_relation_types),
    Case("merge_concepts", {"concept_type": "Disease Severity"},
         lambda d: catalog.merge_concepts(d, "Disease Severity")),
    Case("merge_isa[EntityType]", {"label": "EntityType", "key": "name"},
         lambda d: catalog.merge_isa(d, "EntityType", "name")),
    Case("merge_isa[Concept]", {"label": "Concept", "key": "id"},
         lambda d: catalog.merge_isa(d, "Concept", "id")),
    Case("merge_setting", {}, lambda d: catalog.merge_setting()),
    Case("read_setting", {}, lambda d: catalog.read_setting()),
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
