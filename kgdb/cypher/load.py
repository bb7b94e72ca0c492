"""Statements of the loaders. Each batch is one statement: written wholly or not at all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kgdb.dialects.base import Dialect
from kgdb.statement import Statement


def match_embedded_entities(ids: Sequence[str]) -> Statement:
    """Which of ``ids`` exist already with an embedding (so reloads skip them): rows ``id``."""
    return Statement(
        "UNWIND $ids AS id\n"
        "MATCH (e:Entity {id: id})\n"
        "WHERE e.embedding IS NOT NULL\n"
        "RETURN e.id AS id", {"ids": list(ids)})


def merge_entities(dialect: Dialect, ids: Sequence[str], names: Sequence[str],
                   vectors: np.ndarray) -> Statement:
    """Entities ``ids[i]`` named ``names[i]`` with embedding ``vectors[i]``, for entities that
    have no embedding yet. Columns, not one map per row: the vectors are one float32 matrix
    (FalkorDB renders it with one format per row; the Neo4j store sends it as lists it shows
    by size, kgdb/engine/neo4j.py).

    An entity that already has one is never rewritten (see kgdb/cypher/catalog.py on
    FalkorDB's stale vector entries): the loader asks :func:`match_embedded_entities` first.
    """
    return Statement(
        "UNWIND range(0, size($ids) - 1) AS i\n"
        "WITH $ids[i] AS id, $names[i] AS name, $vectors[i] AS vector\n"
        "MERGE (e:Entity {id: id})\n"
        f"ON CREATE SET e.name = name, e.embedding = {dialect.vector_value('vector')}\n"
        "WITH e, name, vector\n"
        "WHERE e.embedding IS NULL\n"
        f"SET e.name = name, e.embedding = {dialect.vector_value('vector')}",
        {"ids": list(ids), "names": list(names), "vectors": _matrix(vectors, len(ids))},
        write=True, idempotent=True)


def create_entities(dialect: Dialect, ids: Sequence[str], names: Sequence[str],
                    vectors: np.ndarray) -> Statement:
    """New entities (a bulk load into an empty graph, which knows none of ``ids`` exists):
    CREATE, with no lookup per row. Parameters as in :func:`merge_entities`."""
    return Statement(
        "UNWIND range(0, size($ids) - 1) AS i\n"
        "CREATE (e:Entity {id: $ids[i], name: $names[i]})\n"
        f"SET e.embedding = {dialect.vector_value('$vectors[i]')}",
        {"ids": list(ids), "names": list(names), "vectors": _matrix(vectors, len(ids))},
        write=True)


def _matrix(vectors: np.ndarray, rows: int) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != rows:
        raise ValueError(f"expected {rows} vectors, got an array of shape {matrix.shape}")
    return matrix


def merge_facts(dialect: Dialect, predicate: str, pairs: Sequence[tuple[str, str]]) -> Statement:
    """``pairs``: (head id, tail id); one relationship typed by ``predicate`` per pair. A fact
    that document extraction created is marked ``asserted``: deleting the document keeps it
    (kgdb/cypher/documents.py)."""
    return Statement(
        "UNWIND $rows AS row\n"
        "MATCH (h:Entity {id: row.h})\n"
        "MATCH (t:Entity {id: row.t})\n"
        f"MERGE (h)-[r:{dialect.ident(predicate)}]->(t)\n"
        "FOREACH (_ IN CASE WHEN r.extracted = true THEN [1] ELSE [] END | SET r.asserted = true)",
        {"rows": [{"h": h, "t": t} for h, t in pairs]},
        write=True, idempotent=True)


def drop_repeated_facts(dialect: Dialect, predicate: str, pairs: Sequence[tuple[str, str]]) -> Statement:
    """Keep one ``predicate`` relationship per (head id, tail id) pair of ``pairs``.

    Run after the first :func:`merge_facts` of a predicate a writer has not written before:
    FalkorDB 4.16 plans a query before it takes the write lock, so a MERGE planned while the
    relationship type did not exist yet, and run after another writer created it, finds no
    relationship and creates a second one (eight concurrent loaders on an empty graph left
    20 of 60 facts doubled, tests/live/test_hostile_concurrency.py). A writer only plans a
    MERGE before the type exists for its first batch, so this is needed once per predicate."""
    return Statement(
        "UNWIND $rows AS row\n"
        f"MATCH (h:Entity {{id: row.h}})-[r:{dialect.ident(predicate)}]->(t:Entity {{id: row.t}})\n"
        "WITH h, t, collect(DISTINCT r) AS rs\n"
        "WHERE size(rs) > 1\n"
        "UNWIND tail(rs) AS extra\n"
        "DELETE extra",
        {"rows": [{"h": h, "t": t} for h, t in dict.fromkeys(pairs)]},
        write=True, idempotent=True)


def create_facts(dialect: Dialect, predicate: str, pairs: Sequence[tuple[str, str]]) -> Statement:
    """New facts (a bulk load, which has dropped repeated pairs itself): one relationship typed
    by ``predicate`` per (head id, tail id) pair, CREATEd without looking for an existing one."""
    return Statement(
        "UNWIND range(0, size($heads) - 1) AS i\n"
        "MATCH (h:Entity {id: $heads[i]})\n"
        "MATCH (t:Entity {id: $tails[i]})\n"
        f"CREATE (h)-[:{dialect.ident(predicate)}]->(t)",
        {"heads": [h for h, _ in pairs], "tails": [t for _, t in pairs]}, write=True)


def merge_records(dialect: Dialect, label: str, properties: Sequence[str],
                  records: Sequence[tuple[str, Sequence[Any]]]) -> Statement:
    """``records``: (id, one value per property): MERGE ``(:label {id})`` and set the
    properties (a null value removes the property)."""
    sets = [f"n.{dialect.ident(p)} = row.v[{i}]" for i, p in enumerate(properties)]
    return Statement(
        "UNWIND $rows AS row\n"
        f"MERGE (n:{dialect.ident(label)} {{id: row.id}})\n"
        f"SET n.name = row.id, {', '.join(sets)}",
        {"rows": [{"id": i, "v": list(v)} for i, v in records]}, write=True, idempotent=True)
