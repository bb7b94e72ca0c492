"""Read-only statements for looking around the graph (demo, CLI)."""

from __future__ import annotations

from kgdb.statement import Statement


def count_nodes() -> Statement:
    return Statement("MATCH (n) RETURN count(n) AS nodes")
