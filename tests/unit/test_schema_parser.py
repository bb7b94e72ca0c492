from __future__ import annotations

from pathlib import Path

import pytest

from kgdb.errors import SchemaError
from kgdb.schema import parse_schema, parse_schema_file
from kgdb.schema.apply import desired_indexes
from kgdb.schema.export import schema_ddl

ROOT = Path(__file__).resolve().parents[2]


def test_bundled_schemas_parse() -> None:
    metaqa = parse_schema_file(ROOT / "loaders/schemas/metaqa.schema")
    movie = metaqa.type("Movie")
    assert movie is not None and movie.kind == "entity"
    assert {r.name for r in movie.relations} >= {"directed_by", "starred_actors"}
    assert next(r for r in movie.relations if r.name == "starred_actors").text == "starred"
    medical = parse_schema_file(ROOT / "loaders/schemas/medical.schema")
    severity = medical.type("DiseaseSeverity")
    assert severity is not None and severity.kind == "concept"
    assert [c.name for c in severity.concepts] == ["Grade 1 Hypertension", "Grade 2 Hypertension"]


def test_inheritance_and_concept_trees() -> None:
    schema = parse_schema(
        "Person: EntityType\n"
        "Director(film director): Person\n"
        "    desc: directs films\n"
        "Taxonomy: ConceptType\n"
        "    concepts:\n"
        "        Animal\n"
        "            Mammal\n"
        "                Cat\n")
    director = schema.type("Director")
    assert director is not None and director.kind == "entity" and director.parent == "Person"
    assert "film director" in director.text
    tax = schema.type("Taxonomy")
    assert tax is not None
    assert tax.concepts[0].walk() == [("Animal", None), ("Mammal", "Animal"), ("Cat", "Mammal")]


@pytest.mark.parametrize(("text", "message"), [
    ("Movie: Thing\n", "unknown meta-type or parent 'Thing'"),
    ("Movie: EntityType\n    properties:\n        year: Decade\n", "unknown type 'Decade'"),
    ("Movie: EntityType\n    relations:\n        directed_by: Nobody\n", "unknown target type"),
    ("Movie: EntityType\nMovie: EntityType\n", "defined twice"),
    ("Movie: EntityType\n    colour: red\n", "unknown key 'colour'"),
    ("Movie: EntityType\n\tproperties:\n", "tabs"),
    ("  Movie: EntityType\n", "unexpected indentation"),
    ("A: B\nB: A\n", "cycle"),
    ("Movie: EntityType\n    properties:\n        name: Text\n", "built in"),
    ("Movie: EntityType\n    properties:\n        plot: Text\n            index: Vector\n",
     "unsupported index 'Vector'"),
])
def test_errors_name_file_and_line(text: str, message: str) -> None:
    with pytest.raises(SchemaError) as info:
        parse_schema(text, source="bad.schema")
    assert str(info.value).startswith("bad.schema:")
    assert message in str(info.value)


def _property_schema(constraint: str) -> str:
    return ("Movie: EntityType\n"
            "    properties:\n"
            "        tag(film tag): Text\n"
            f"            constraint: {constraint}\n")


@pytest.mark.parametrize(("constraint", "named"), [
    ("MultiValue", "constraint MultiValue"),
    ("Regular=^[A-Z]{2}$", "constraint Regular=..."),
    ("NotNull, MultiValue", "constraint MultiValue"),
    ("Unique, Regular = [a-z]+", "constraint Regular=..."),
])
def test_unenforced_constraints_are_errors(constraint: str, named: str) -> None:
    """SPG's MultiValue and Regular are not enforced by kgdb: refused, never dropped."""
    with pytest.raises(SchemaError) as info:
        parse_schema(_property_schema(constraint), source="bad.schema")
    message = str(info.value)
    assert message.startswith("bad.schema:4: "), message
    assert named in message and "on property tag" in message
    assert "kgdb does not enforce it" in message and "remove it" in message


@pytest.mark.parametrize(("constraint", "message"), [
    ("Uniqe", "unknown constraint 'Uniqe' on property tag (expected NotNull or Unique) "
              "(did you mean 'Unique'?)"),
    ("NotNull=yes", "constraint NotNull on property tag takes no value"),
    ("NotNull,", "unknown constraint '' on property tag"),
])
def test_other_constraint_mistakes_are_errors(constraint: str, message: str) -> None:
    with pytest.raises(SchemaError) as info:
        parse_schema(_property_schema(constraint), source="bad.schema")
    assert str(info.value).startswith("bad.schema:4: " + message)


def test_not_null_and_unique_still_apply() -> None:
    schema = parse_schema(_property_schema("NotNull, Unique"))
    movie = schema.type("Movie")
    assert movie is not None
    assert movie.properties[0].constraints == ("NotNull", "Unique")
    specs = {(s.kind, s.label, s.properties)
             for s in desired_indexes(schema, 384, unique_needs_range=False)}
    assert {("exists", "Movie", ("tag",)), ("unique", "Movie", ("tag",))} <= specs


def test_hypernym_predicate_is_kept_per_concept_type() -> None:
    schema = parse_schema(
        "Place: ConceptType\n"
        "    hypernymPredicate: locateAt\n"
        "    concepts:\n"
        "        Zhejiang\n"
        "            Hangzhou\n"
        "Taxonomy: ConceptType\n"
        "    concepts:\n"
        "        Animal\n")
    place, taxonomy = schema.type("Place"), schema.type("Taxonomy")
    assert place is not None and place.hypernym_predicate == "locateAt"
    assert taxonomy is not None and taxonomy.hypernym_predicate == "isA"


@pytest.mark.parametrize(("text", "message"), [
    ("Place: ConceptType\n    hypernymPredicate: locatedAt\n",
     "bad.schema:2: unknown hypernymPredicate 'locatedAt' (expected isA or locateAt) "
     "(did you mean 'locateAt'?)"),
    ("Person: EntityType\n    hypernymPredicate: locateAt\n",
     "bad.schema:2: type Person has a hypernymPredicate but is not a ConceptType"),
    ("Person: EntityType\nDoctor: Person\n    desc: heals\n    hypernymPredicate: isA\n",
     "bad.schema:4: type Doctor has a hypernymPredicate but is not a ConceptType"),
])
def test_hypernym_predicate_mistakes_are_errors(text: str, message: str) -> None:
    with pytest.raises(SchemaError) as info:
        parse_schema(text, source="bad.schema")
    assert str(info.value).startswith(message)


def test_ddl_export_covers_both_dialects() -> None:
    neo = schema_ddl(parse_schema_file(ROOT / "loaders/schemas/metaqa.schema"), "neo4j")
    falkor = schema_ddl(parse_schema_file(ROOT / "loaders/schemas/metaqa.schema"), "falkordb")
    assert "CREATE VECTOR INDEX `kgdb_entity_embedding_vector` IF NOT EXISTS" in neo
    assert "`vector.dimensions`: 384" in neo
    assert "OPTIONS {dimension: 384, similarityFunction: 'euclidean', M: 16" in falkor
    assert "GRAPH.CONSTRAINT CREATE <graph> UNIQUE NODE Entity PROPERTIES 1 id" in falkor


@pytest.mark.parametrize("dialect", ["neo4j", "falkordb"])
def test_exported_ddl_in_cypher_folder_is_current(dialect: str) -> None:
    """cypher/<dialect>/schema.cypher is what people read; it must match the generator."""
    path = ROOT / "cypher" / dialect / "schema.cypher"
    from kgdb.schema import Schema

    expected = schema_ddl(Schema(source="<built-in>"), dialect)
    assert path.read_text() == expected, f"regenerate: kgdb schema ddl --dialect {dialect} > {path}"
