"""Statements for the schema catalog: type and relation-type nodes, concept trees, settings.

Nodes with an indexed vector are written only when new or changed: on FalkorDB 4.16.3 every
update of such a node leaves a stale HNSW entry behind, and vector queries then return fewer
distinct nodes (docs/design/falkordb-index-faults.md). So these MERGEs set
everything ON CREATE and touch an existing node only when one of its values differs.

An update removes the old vector before it sets the new one: FalkorDB 4.16.3 skips
``SET n.v = vecf32(new)`` when the stored vector compares equal, and its vector equality
compares truncated values, so a changed unit vector was silently kept (a renamed type kept
its old embedding; tests/live/test_catalog_vectors.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kgdb.dialects.base import Dialect
from kgdb.statement import Statement

Rows = Sequence[Mapping[str, Any]]


def _merge_if_changed(dialect: Dialect, label: str, key: str, fields: list[str], rows: Rows
                      ) -> Statement:
    """``rows`` of {key, *fields, embedding}: create, or update only a node whose fields
    differ."""
    var = "n"
    assignments = ", ".join(f"{var}.{dialect.ident(f)} = row.{dialect.ident(f)}" for f in fields)
    embedding = f"{var}.embedding = {dialect.vector_value('row.embedding')}"
    differs = " OR ".join(
        f"coalesce({var}.{dialect.ident(f)}, '') <> coalesce(row.{dialect.ident(f)}, '')" for f in fields)
    return Statement(
        "UNWIND $rows AS row\n"
        f"MERGE ({var}:{dialect.ident(label)} {{{dialect.ident(key)}: row.{dialect.ident(key)}}})\n"
        f"ON CREATE SET {assignments}, {embedding}\n"
        f"WITH {var}, row\n"
        f"WHERE {var}.embedding IS NULL OR {differs}\n"
        f"SET {assignments}\n"
        f"REMOVE {var}.embedding\n"  # the module docstring
        f"SET {embedding}", {"rows": [dict(r) for r in rows]},
        write=True, idempotent=True)


def merge_entity_types(dialect: Dialect, rows: Rows) -> Statement:
    """``rows``: {name, kind, alias, description, parent, text, embedding}."""
    return _merge_if_changed(dialect, "EntityType", "name",
                             ["kind", "alias", "description", "parent", "text"], rows)


def merge_relation_types(dialect: Dialect, types: Sequence[tuple[str, str, Sequence[float]]]
                         ) -> Statement:
    """``types``: (name, text, embedding); one catalog node per predicate."""
    return _merge_if_changed(dialect, "RelationType", "name", ["text"],
                             [{"name": n, "text": t, "embedding": v} for n, t, v in types])


def describe_relation_types(dialect: Dialect, rows: Rows) -> Statement:
    """``rows``: {name, source, target, description, text, embedding} from a schema file."""
    return _merge_if_changed(dialect, "RelationType", "name",
                             ["text", "source", "target", "description"], rows)


def merge_concepts(dialect: Dialect, concept_type: str,
                   concepts: Sequence[tuple[str, str, Sequence[float]]]) -> Statement:
    """``concepts``: (id, name, embedding); concepts carry :Concept and their type's label."""
    return Statement(
        "UNWIND $rows AS row\n"
        "MERGE (c:Concept {id: row.id})\n"
        f"ON CREATE SET c:{dialect.ident(concept_type)}, c.name = row.name, "
        f"c.embedding = {dialect.vector_value('row.embedding')}\n"
        "WITH c, row\n"
        f"WHERE c.embedding IS NULL OR NOT c:{dialect.ident(concept_type)} "
        "OR coalesce(c.name, '') <> row.name\n"
        f"SET c:{dialect.ident(concept_type)}, c.name = row.name\n"
        "REMOVE c.embedding\n"  # the module docstring
        f"SET c.embedding = {dialect.vector_value('row.embedding')}",
        {"rows": [{"id": i, "name": n, "embedding": v} for i, n, v in concepts]},
        write=True, idempotent=True)


def merge_hierarchy(dialect: Dialect, label: str, key: str, predicate: str,
                    links: Sequence[tuple[str, str]]) -> Statement:
    """``links``: (child, parent) keys of ``label`` nodes; ``(child)-[:predicate]->(parent)``.

    Type hierarchies use ``(EntityType, name)`` and ``isA``; concept trees use ``(Concept,
    id)`` and their type's ``hypernymPredicate`` (``isA`` or ``locateAt``). A relationship
    type cannot be a parameter, so it is quoted like a label.
    """
    label, key = dialect.ident(label), dialect.ident(key)
    return Statement(
        "UNWIND $rows AS row\n"
        f"MATCH (c:{label} {{{key}: row.child}})\n"
        f"MATCH (p:{label} {{{key}: row.parent}})\n"
        f"MERGE (c)-[:{dialect.ident(predicate)}]->(p)",
        {"rows": [{"child": c, "parent": p} for c, p in links]}, write=True, idempotent=True)


def merge_setting(key: str, model: str, dimension: int) -> Statement:
    """Record a graph-wide setting: the embedding ``model`` and its ``dimension``."""
    return Statement(
        "MERGE (m:KgdbMeta {key: $key})\n"
        "SET m.model = $model, m.dimension = $dimension",
        {"key": key, "model": model, "dimension": int(dimension)}, write=True, idempotent=True)


def read_setting(key: str) -> Statement:
    """Rows ``model, dimension`` of the setting ``key`` (none when it was never set)."""
    return Statement(
        "MATCH (m:KgdbMeta {key: $key}) RETURN m.model AS model, m.dimension AS dimension",
        {"key": key})


def vector_probe(dialect: Dialect, label: str, prop: str, dimension: int, *,
                 relationship: bool = False) -> Statement:
    """One vector query against the index of ``label.prop`` (a relationship type's with
    ``relationship``): it fails until the index serves."""
    call = (dialect.relationship_vector_search_call(label, prop, "$k", "$vector") if relationship
            else dialect.vector_search_call(label, prop, "$k", "$vector"))
    return Statement(f"{call} RETURN count(*) AS n", {"k": 1, "vector": [0.0] * dimension})
