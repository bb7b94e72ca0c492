"""Statements of the loaders. Each batch is one statement: written wholly or not at all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgdb.dialects.base import Dialect
from kgdb.statement import Statement


def match_embedded_entities(ids: Sequence[str]) -> Statement:
    """Which of ``ids`` exist already with an embedding (so reloads skip them): rows ``id``."""
    return Statement(
        "UNWIND $ids AS id\n"
        "MATCH (e:Entity {id: id})\n"
        "WHERE e.embedding IS NOT NULL\n"
        "RETURN e.id AS id", {"ids": list(ids)})


def merge_entities(d: Dialect, entities: Sequence[tuple[str, str, Sequence[float]]]
                   ) -> Statement:
    """``entities``: (id, name, embedding), for entities that have no embedding yet.

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
        {"rows": [{"id": i, "name": n, "embedding": v} for i, n, v in entities]},
        write=True, idempotent=True)


def merge_facts(d: Dialect, predicate: str, pairs: Sequence[tuple[str, str]]) -> Statement:
    """``pairs``: (head id, tail id); one relationship typed by ``predicate`` per pair. A fact
    that document extraction created is marked ``asserted``: deleting the document keeps it
    (kgdb/cypher/documents.py)."""
    return Statement(
        "UNWIND $rows AS row\n"
        "MATCH (h:Entity {id: row.h})\n"
        "MATCH (t:Entity {id: row.t})\n"
        f"MERGE (h)-[r:{d.ident(predicate)}]->(t)\n"
        "FOREACH (_ IN CASE WHEN r.extracted = true THEN [1] ELSE [] END | SET r.asserted = true)",
        {"rows": [{"h": h, "t": t} for h, t in pairs]},
        write=True, idempotent=True)


def merge_records(d: Dialect, label: str, properties: Sequence[str],
                  records: Sequence[tuple[str, Sequence[Any]]]) -> Statement:
    """``records``: (id, one value per property): MERGE ``(:label {id})`` and set the
    properties (a null value removes the property)."""
    sets = [f"n.{d.ident(p)} = row.v[{i}]" for i, p in enumerate(properties)]
    return Statement(
        "UNWIND $rows AS row\n"
        f"MERGE (n:{d.ident(label)} {{id: row.id}})\n"
        f"SET n.name = row.id, {', '.join(sets)}",
        {"rows": [{"id": i, "v": list(v)} for i, v in records]}, write=True, idempotent=True)
