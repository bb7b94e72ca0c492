"""Read-only statements for looking around the graph (demo, CLI, the service's web page)."""

from __future__ import annotations

from kgdb.statement import Statement
from kgdb.vocabulary import CHUNK, ENTITY, SUPPORTING_CHUNKS


def count_nodes() -> Statement:
    return Statement("MATCH (n) RETURN count(n) AS nodes")


def entity_node(entity_id: str) -> Statement:
    """The entity ``entity_id``: its labels and properties."""
    return Statement(f"MATCH (n:{ENTITY} {{id: $id}})\n"
                     "RETURN n.id AS id, n.name AS name, labels(n) AS labels, "
                     "properties(n) AS properties\nLIMIT 1", {"id": entity_id})


def neighbours(entity_id: str, limit: int) -> Statement:
    """At most ``limit`` relationships of the entity ``entity_id`` with the node at their other
    end (its id, name, labels and properties) and their direction; ask for one more than you
    show to know whether there were more."""
    return Statement(f"MATCH (n:{ENTITY} {{id: $id}})-[r]-(m)\n"
                     "WHERE m.id IS NOT NULL\n"
                     "RETURN type(r) AS relation, startNode(r).id = $id AS outgoing, "
                     "m.id AS id, m.name AS name, labels(m) AS labels, "
                     "properties(m) AS properties\n"
                     "ORDER BY relation, id\nLIMIT $limit", {"id": entity_id, "limit": limit})


def chunk_mentions(chunk_ids: list[str], limit: int) -> Statement:
    """The names of at most ``limit`` entities each chunk of ``chunk_ids`` supports (the
    mutual index: ``(:Entity)-[:supporting_chunks]->(:Chunk)``)."""
    return Statement(f"MATCH (e:{ENTITY})-[:{SUPPORTING_CHUNKS}]->(c:{CHUNK})\n"
                     "WHERE c.id IN $ids\n"
                     "WITH c.id AS chunk, e.name AS name ORDER BY chunk, name\n"
                     "RETURN chunk, collect(name)[0..$limit] AS names",
                     {"ids": chunk_ids, "limit": limit})
