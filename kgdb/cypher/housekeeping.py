"""Statements that read or clear a whole graph and probe a server: the same Cypher on every
engine (what differs between engines stays in :mod:`kgdb.dialects`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgdb.dialects.base import Dialect, Plugin
from kgdb.statement import Statement

_QUALIFIED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")


def ping() -> Statement:
    """One row, ``ok = 1``: the server answers (a write on FalkorDB creates the graph)."""
    return Statement("RETURN 1 AS ok")


def delete_some_nodes(limit: int) -> Statement:
    """Delete up to ``limit`` nodes with their relationships; returns how many."""
    return Statement("MATCH (n) WITH n LIMIT $limit DETACH DELETE n RETURN count(*) AS deleted",
                     {"limit": int(limit)}, write=True)


def label_counts() -> Statement:
    """Rows ``label, count``: nodes per label."""
    return Statement(
        "MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS count ORDER BY label")


def relationship_type_counts() -> Statement:
    """Rows ``type, count``: relationships per type."""
    return Statement("MATCH ()-[r]->() RETURN type(r) AS type, count(*) AS count ORDER BY type")


def version_function_call(plugin: Plugin) -> Statement:
    """``RETURN apoc.version() AS version`` for a plugin whose probe is a function."""
    if not plugin.function or not _QUALIFIED_NAME.fullmatch(plugin.probe):
        raise ValueError(f"not a version function: {plugin.probe!r}")
    return Statement(f"RETURN {plugin.probe}() AS version")


def nearest_nodes(dialect: Dialect, label: str, prop: str, vector: Sequence[float], k: int, *,
                  returns: Sequence[str] = ("id", "name")) -> Statement:
    """The ``k`` nodes of ``label`` whose ``prop`` is closest to ``vector``, by the L2 the
    vector index reports (``returns``: the properties given back, then ``distance``)."""
    call = dialect.vector_search_call(label, prop, "$k", "$vector")
    projections = ", ".join(f"node.{dialect.ident(p)} AS {dialect.ident(p)}" for p in returns)
    text = (
        f"{call}\n"
        f"WITH node, {dialect.score_to_l2('score')} AS distance\n"
        f"RETURN {projections}, distance\n"
        "ORDER BY distance ASC\n"
        "LIMIT $k"
    )
    return Statement(text, {"k": int(k), "vector": vector})
