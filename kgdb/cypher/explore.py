"""Read-only statements for looking around the graph (demo, CLI)."""

from __future__ import annotations

from kgdb.statement import Statement


def entity_facts() -> Statement:
    """Facts touching entity ``$id``: relation type, direction, the other entity; ``$limit``."""
    return Statement(
        "MATCH (e:Entity {id: $id})-[r]-(o:Entity)\n"
        "RETURN type(r) AS relation, startNode(r) = e AS outgoing, o.name AS other\n"
        "ORDER BY relation, other\n"
        "LIMIT $limit")


def count_nodes() -> Statement:
    return Statement("MATCH (n) RETURN count(n) AS nodes")
