"""Cypher builders for logical forms: one statement per Retrieval pattern, plus the
aggregations (Sort, Count, Sum, Filter) compiled onto the same pattern, and the look-ups
the hybrid (chunk) fallback needs.

Input is the one linked pattern (:class:`kgdb.ir.LinkedPattern`). Variables in the Cypher
text are generated (``n0``, ``r0``...), never the plan's aliases; labels, relationship types
and property keys go through ``dialect.ident``; every value is a parameter. Portability rules
from shared/dialects.md section 4.3: pairwise ``<>`` between relationship variables
(relationship isomorphism), and every relationship variable is projected.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgdb.cypher.conditions import comparison, constraints, node_conditions, prop
from kgdb.cypher.housekeeping import nearest_nodes
from kgdb.cypher.link import ENTITY_LABEL, STRUCTURAL_RELATIONS
from kgdb.cypher.params import Params
from kgdb.dialects.base import Dialect
from kgdb.ir import LinkedPattern
from kgdb.statement import Statement

MAX_ROWS = 10_000
"""Upper bound on the rows one Retrieval pattern returns (a runaway plan cannot flood memory)."""


@dataclass(frozen=True)
class Tail:
    """What to do with the matches: return rows, or aggregate onto them."""

    kind: str = "rows"
    """``rows``, ``sort``, ``count``, ``sum`` or ``filter``."""
    var: str | None = None
    """The pattern variable the aggregate applies to (Sort's set, Count's argument...)."""
    key_var: str | None = None
    key_prop: str | None = None
    """Sort key: a node variable (its value is its name) or one of its properties."""
    prop: str | None = None
    """Property of ``var`` that Count/Sum/Filter read (default: the name)."""
    descending: bool = True
    limit: int | None = None
    op: str = "="
    value: Any = None


@dataclass(frozen=True)
class PatternQuery:
    """A statement and where each plan alias comes back in its rows."""

    statement: Statement
    node_columns: dict[str, tuple[str, str]] = field(default_factory=dict)
    """alias -> (id column, name column)."""
    edge_columns: dict[str, str] = field(default_factory=dict)
    """alias -> relationship-type column."""
    value_column: str | None = None
    """For count/sum: the one column holding the aggregate."""
    key_column: str | None = None
    bound_params: dict[str, str] = field(default_factory=dict)
    """Parameter -> the alias whose current values (entity ids) it takes at run time."""

    def bind(self, values: Mapping[str, Sequence[str]]) -> Statement:
        """The statement with the bound aliases' current entity ids filled in."""
        return self.statement.with_params(**{
            param: list(values.get(alias, ())) for param, alias in self.bound_params.items()})


def match_pattern(dialect: Dialect, linked: LinkedPattern, tail: Tail | None = None,
                  bound: Collection[str] = ()) -> PatternQuery:
    """One MATCH for a whole linked pattern, with WHERE conditions, then ``tail``.

    ``bound``: node aliases an earlier step bound; their current entity ids are given at run
    time (:meth:`PatternQuery.bind`).
    """
    tail = tail or Tail()
    pattern = linked.pattern
    node_var = {n.var: f"n{i}" for i, n in enumerate(pattern.nodes)}
    edge_var = {e.var: f"r{i}" for i, e in enumerate(pattern.edges)}
    p = Params()
    where: list[str] = []
    entity = dialect.ident(ENTITY_LABEL)
    parts = []
    used_nodes: set[str] = set()
    for edge in linked.edges:
        ref = edge.ref
        s, t, r = node_var[ref.source], node_var[ref.target], edge_var[ref.var]
        # A relation that linked to nothing keeps its phrases as written: the statement
        # then finds nothing (and the solver reads chunks), rather than any relation.
        types = edge.type_names or (ref.phrases if edge.types is not None else ())
        rel = r + (":" + "|".join(dialect.ident(x) for x in types) if types else "")
        src = f"({s}:{entity})" if s not in used_nodes else f"({s})"
        used_nodes.add(s)
        dst = f"({t}:{entity})" if t not in used_nodes else f"({t})"
        used_nodes.add(t)
        arrow = f"-[{rel}]->" if ref.directed else f"-[{rel}]-"
        parts.append(f"{src}{arrow}{dst}")
        if not types:
            where.append(f"NOT type({r}) IN {p.add('structural', list(STRUCTURAL_RELATIONS))}")
        where += constraints(dialect, r, ref.constraints, p)
    bound_params: dict[str, str] = {}
    for node in linked.nodes:
        v = node_var[node.var]
        if v not in used_nodes:
            parts.append(f"({v}:{entity})")
            used_nodes.add(v)
        if node.var in bound:
            param = p.add(f"bound_{v}", [])
            bound_params[param[1:]] = node.var
            where.append(f"{v}.id IN {param}")
        where += node_conditions(dialect, v, node, p)
    # Relationship isomorphism (Neo4j's own semantics, stated so FalkorDB does the same):
    # two edges of one pattern are two different relationships, so "the other films of
    # Kismet's director" cannot come back as Kismet. Nodes differ as the pattern says.
    where += dialect.all_distinct(list(edge_var.values()))
    nodes = [n.var for n in linked.nodes]
    where += [f"{node_var[a]} <> {node_var[b]}" for i, a in enumerate(nodes)
              for j, b in enumerate(nodes) if i < j and linked.must_differ(i, j)]
    if tail.kind == "filter" and tail.var:
        fv = node_var[tail.var]
        where.append(comparison(dialect, fv, tail.prop or "name", tail.op, tail.value, p,
                                "filter_value"))
    lines = ["MATCH " + ", ".join(parts)]
    if where:
        lines.append("WHERE " + "\n  AND ".join(where))
    node_cols = {alias: (f"{v}_id", f"{v}_name") for alias, v in node_var.items()}
    edge_cols = {alias: f"{r}_type" for alias, r in edge_var.items()}
    all_vars = list(node_var.values()) + list(edge_var.values())

    def query(**columns: Any) -> PatternQuery:
        return PatternQuery(Statement("\n".join(lines), p.values), bound_params=bound_params,
                            **columns)

    if tail.kind in ("rows", "filter"):
        lines.append(f"WITH DISTINCT {', '.join(all_vars)}")
        lines.append(f"LIMIT {p.add('max_rows', MAX_ROWS)}")
        returns = [f"{v}.id AS {v}_id, {v}.name AS {v}_name" for v in node_var.values()]
        returns += [f"type({r}) AS {r}_type" for r in edge_var.values()]
        lines.append("RETURN " + ", ".join(returns))
        return query(node_columns=node_cols, edge_columns=edge_cols)
    assert tail.var is not None
    tv = node_var[tail.var]
    # Relationship variables are projected (dialects.md 4.3) before the aggregate.
    lines.append(f"WITH DISTINCT {', '.join(all_vars)}")
    if tail.kind == "count":
        lines.append(f"RETURN count(DISTINCT {tv}) AS value")
        return query(value_column="value")
    if tail.kind == "sum":
        lines.append(f"WITH DISTINCT {tv}")
        lines.append(f"RETURN sum(toFloat({prop(dialect, tv, tail.prop)})) AS value")
        return query(value_column="value")
    if tail.kind == "sort":
        key_node = node_var[tail.key_var] if tail.key_var else tv
        key = prop(dialect, key_node, tail.key_prop)
        agg = "max" if tail.descending else "min"
        order = "DESC" if tail.descending else "ASC"
        lines.append(f"WITH {tv}, {agg}(toFloat({key})) AS num_key, {agg}({key}) AS text_key")
        # Numbers first, then text (nulls sort differently on the engines, so say it).
        lines.append("ORDER BY CASE WHEN num_key IS NULL THEN 1 ELSE 0 END ASC, "
                     f"num_key {order}, text_key {order}, {tv}.id ASC")
        if tail.limit is not None:
            lines.append(f"LIMIT {p.add('limit', int(tail.limit))}")
        lines.append(f"RETURN {tv}.id AS {tv}_id, {tv}.name AS {tv}_name, "
                     "coalesce(num_key, text_key) AS sort_key")
        return query(node_columns={tail.var: (f"{tv}_id", f"{tv}_name")},
                     key_column="sort_key")
    raise ValueError(f"unknown tail {tail.kind!r}")  # pragma: no cover - internal


# ------------------------------------------------------------------ hybrid retrieval

def count_chunks(dialect: Dialect) -> Statement:
    return Statement(f"MATCH (c:{dialect.ident('Chunk')}) RETURN count(c) AS chunks")


def chunks_of_entities(dialect: Dialect, ids: Sequence[str], k: int) -> Statement:
    """Up to ``k`` chunks that support the entities ``ids`` (KAG's mutual index)."""
    p = Params()
    entity, chunk = dialect.ident(ENTITY_LABEL), dialect.ident("Chunk")
    return Statement(
        f"MATCH (e:{entity})-[:{dialect.ident('supporting_chunks')}]->(c:{chunk})\n"
        f"WHERE e.id IN {p.add('ids', list(ids))}\n"
        f"RETURN DISTINCT c.id AS id, c.text AS text\nORDER BY id\nLIMIT {p.add('k', int(k))}",
        p.values)


def nearest_chunks(dialect: Dialect, vector: Sequence[float], k: int) -> Statement:
    """The ``k`` chunks nearest to ``vector`` by L2 (the chunk vector index)."""
    return nearest_nodes(dialect, "Chunk", "embedding", vector, k, returns=("id", "text"))
