"""Statements of triple text representations (KG-CQR's TTRs, ``kgdb index triples``): the
text and embedding of every fact relationship, and the search for the facts nearest a
question through the relationship vector indexes (one per relation type)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kgdb.cypher.link import ENTITY_LABEL, STRUCTURAL_RELATIONS
from kgdb.cypher.params import Params
from kgdb.dialects.base import Dialect
from kgdb.statement import Statement

TEXT = "ttr"
"""The fact's text representation."""
EMBEDDING = "embedding"
"""The embedding of :data:`TEXT`, under the relation type's vector index."""


def fact_types(dialect: Dialect) -> Statement:
    """Rows ``type, facts, embedded``: every relationship type between two entities that is a
    fact (not one of the knowledge layer's structural relations), with its number of facts and
    how many of them have a TTR embedding."""
    p = Params()
    e = dialect.ident(ENTITY_LABEL)
    return Statement(
        f"MATCH (:{e})-[r]->(:{e})\n"
        f"WHERE NOT type(r) IN {p.add('structural', list(STRUCTURAL_RELATIONS))}\n"
        f"RETURN type(r) AS type, count(r) AS facts, count(r.{dialect.ident(EMBEDDING)}) AS embedded\n"
        "ORDER BY type", p.values)


def facts_of_type(dialect: Dialect, rel_type: str) -> Statement:
    """Rows ``h, t, head, tail, ttr, embedded`` of every ``rel_type`` fact: the ids and names of
    its ends, its stored text and whether it has an embedding."""
    e = dialect.ident(ENTITY_LABEL)
    return Statement(
        f"MATCH (h:{e})-[r:{dialect.ident(rel_type)}]->(t:{e})\n"
        f"RETURN h.id AS h, t.id AS t, h.name AS head, t.name AS tail, r.{dialect.ident(TEXT)} AS ttr,\n"
        f"       r.{dialect.ident(EMBEDDING)} IS NOT NULL AS embedded")


def set_fact_texts(dialect: Dialect, rel_type: str, rows: Sequence[Mapping[str, Any]]) -> Statement:
    """``rows``: {h, t, text, embedding}: the ``rel_type`` fact from ``h`` to ``t`` gets the text
    and its embedding. The old embedding is removed first: FalkorDB 4.16.3 skips a SET of a
    vector property that compares equal to the stored one, and its vector equality compares
    truncated values (see kgdb/documents/knn.py)."""
    e = dialect.ident(ENTITY_LABEL)
    emb = dialect.ident(EMBEDDING)
    p = Params()
    return Statement(
        f"UNWIND {p.add('rows', [dict(r) for r in rows])} AS row\n"
        f"MATCH (h:{e} {{id: row.h}})-[r:{dialect.ident(rel_type)}]->(t:{e} {{id: row.t}})\n"
        f"REMOVE r.{emb}\n"
        f"SET r.{dialect.ident(TEXT)} = row.text, r.{emb} = {dialect.vector_value('row.embedding')}\n"
        "RETURN count(r) AS written",
        p.values, write=True, idempotent=True)


def nearest_facts(dialect: Dialect, rel_types: Sequence[str], vector: Sequence[float], k: int
                  ) -> Statement:
    """The ``k`` facts of each of ``rel_types`` whose TTR embedding is nearest ``vector``
    (each type's vector index), in one statement: rows ``h, type, t, head, tail, ttr, chunks,
    cosine`` (the exact cosine similarity, recomputed from the stored vector), each type's
    best first. The caller merges the types' rows (a stale FalkorDB index entry can repeat a
    fact)."""
    p = Params()
    k_ = p.add("k", int(k))
    q = p.add("vector", list(map(float, vector)))
    emb = dialect.ident(EMBEDDING)
    parts = []
    for rel_type in rel_types:
        call = dialect.relationship_vector_search_call(rel_type, EMBEDDING, k_, q)
        parts.append(
            f"{call}\n"
            # FalkorDB 4.16.3 and a relationship the vector procedure yields: MATCH (h)-[r]->(t)
            # re-matches it as any relationship, and type(r) names another type; startNode,
            # endNode and its properties are right, and the type is this branch's
            "WITH relationship AS r, startNode(relationship) AS h, endNode(relationship) AS t\n"
            f"WITH h, r, t, {dialect.cosine_similarity(f'r.{emb}', dialect.vector_value(q))} AS cosine\n"
            f"RETURN h.id AS h, {p.add('type', rel_type)} AS type, t.id AS t, h.name AS head,\n"
            "       t.name AS tail,\n"
            f"       r.{dialect.ident(TEXT)} AS ttr, r.chunks AS chunks, cosine\n"
            f"ORDER BY cosine DESC, h, t\nLIMIT {k_}")
    return Statement("\nUNION ALL\n".join(parts), p.values)
