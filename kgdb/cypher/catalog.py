"""Statements for the schema catalog: type and relation-type nodes, concept trees, settings."""

from __future__ import annotations

from kgdb.dialects.base import Dialect
from kgdb.statement import Statement


def merge_entity_types(d: Dialect) -> Statement:
    """``$rows``: {name, kind, alias, description, parent, text, embedding}."""
    return Statement(
        "UNWIND $rows AS row\n"
        "MERGE (t:EntityType {name: row.name})\n"
        "SET t.kind = row.kind, t.alias = row.alias, t.description = row.description,\n"
        f"    t.parent = row.parent, t.text = row.text, t.embedding = {d.vector_value('row.embedding')}",
        write=True)


def merge_type_hierarchy() -> Statement:
    """``$rows``: {child, parent} type names."""
    return Statement(
        "UNWIND $rows AS row\n"
        "MATCH (c:EntityType {name: row.child})\n"
        "MATCH (p:EntityType {name: row.parent})\n"
        "MERGE (c)-[:isA]->(p)", write=True)


def merge_relation_types(d: Dialect) -> Statement:
    """``$rows``: {name, text, embedding}; one catalog node per predicate."""
    return Statement(
        "UNWIND $rows AS row\n"
        "MERGE (t:RelationType {name: row.name})\n"
        f"SET t.text = row.text, t.embedding = {d.vector_value('row.embedding')}", write=True)


def describe_relation_types() -> Statement:
    """``$rows``: {name, source, target, description} from a schema file."""
    return Statement(
        "UNWIND $rows AS row\n"
        "MATCH (t:RelationType {name: row.name})\n"
        "SET t.source = row.source, t.target = row.target, t.description = row.description",
        write=True)


def merge_concepts(d: Dialect, concept_type: str) -> Statement:
    """``$rows``: {id, name, embedding}; concepts carry :Concept and their type's label."""
    return Statement(
        "UNWIND $rows AS row\n"
        "MERGE (c:Concept {id: row.id})\n"
        f"SET c:{d.ident(concept_type)}, c.name = row.name, "
        f"c.embedding = {d.vector_value('row.embedding')}", write=True)


def merge_concept_links() -> Statement:
    """``$rows``: {child, parent} concept ids; the isA tree."""
    return Statement(
        "UNWIND $rows AS row\n"
        "MATCH (c:Concept {id: row.child})\n"
        "MATCH (p:Concept {id: row.parent})\n"
        "MERGE (c)-[:isA]->(p)", write=True)


def merge_setting() -> Statement:
    """Record a graph-wide setting (``$key``, ``$model``, ``$dimension``)."""
    return Statement(
        "MERGE (m:KgdbMeta {key: $key})\n"
        "SET m.model = $model, m.dimension = $dimension", write=True)


def read_setting() -> Statement:
    return Statement(
        "MATCH (m:KgdbMeta {key: $key}) RETURN m.model AS model, m.dimension AS dimension")
