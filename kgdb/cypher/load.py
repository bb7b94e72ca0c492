"""Statements of the loaders. Each batch is one statement: written wholly or not at all."""

from __future__ import annotations

from kgdb.dialects.base import Dialect
from kgdb.statement import Statement


def match_embedded_entities() -> Statement:
    """Which of ``$ids`` exist already with an embedding (so reloads skip them)."""
    return Statement(
        "UNWIND $ids AS id\n"
        "MATCH (e:Entity {id: id})\n"
        "WHERE e.embedding IS NOT NULL\n"
        "RETURN e.id AS id")


def merge_entities(d: Dialect) -> Statement:
    """``$rows``: {id, name, embedding}, for entities that have no embedding yet.

    An entity that already has one is never rewritten (see kgdb/cypher/catalog.py on
    FalkorDB's stale vector entries): the loader asks :func:`match_embedded_entities` first.
    """
    return Statement(
        "UNWIND $rows AS row\n"
        "MERGE (e:Entity {id: row.id})\n"
        f"ON CREATE SET e.name = row.name, e.embedding = {d.vector_value('row.embedding')}\n"
        "WITH e, row\n"
        "WHERE e.embedding IS NULL\n"
        f"SET e.name = row.name, e.embedding = {d.vector_value('row.embedding')}",
        write=True, idempotent=True)


def merge_facts(d: Dialect, predicate: str) -> Statement:
    """``$rows``: {h, t} entity ids; one relationship typed by ``predicate`` per row."""
    return Statement(
        "UNWIND $rows AS row\n"
        "MATCH (h:Entity {id: row.h})\n"
        "MATCH (t:Entity {id: row.t})\n"
        f"MERGE (h)-[:{d.ident(predicate)}]->(t)", write=True, idempotent=True)


def merge_records(d: Dialect, label: str, properties: list[str]) -> Statement:
    """``$rows`` of {id, v: [one value per property]}: MERGE ``(:label {id})`` and set the
    properties (a null value removes the property)."""
    sets = [f"n.{d.ident(p)} = row.v[{i}]" for i, p in enumerate(properties)]
    return Statement(
        "UNWIND $rows AS row\n"
        f"MERGE (n:{d.ident(label)} {{id: row.id}})\n"
        f"SET n.name = row.id, {', '.join(sets)}", write=True, idempotent=True)
