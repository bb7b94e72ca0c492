"""Cypher builders for logical forms: one statement per Retrieval pattern, plus the
aggregations (Sort, Count, Sum, Filter) compiled onto the same pattern, and the look-ups the
linker and the hybrid (chunk) fallback need.

Input is the shared IR (:class:`kgdb.ir.Pattern`) plus what linking found for each variable
(:class:`VarLinks`). Variables in the Cypher text are generated (``n0``, ``r0``...), never the
plan's aliases; labels, relationship types and property keys go through ``dialect.ident``;
every value is a parameter. Portability rules from shared/dialects.md section 4.3: pairwise
``<>`` between relationship variables (relationship isomorphism), and every relationship
variable is projected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgdb.dialects.base import Dialect
from kgdb.errors import DslError
from kgdb.ir import COMPARISON_OPERATORS, Pattern
from kgdb.statement import Statement

ENTITY_LABEL = "Entity"
"""Label every pattern node carries (the base schema's ``(:Entity {id, name, embedding})``)."""

STRUCTURAL_RELATIONS = ("supporting_chunks", "belongTo", "isA", "contains", "synonym",
                        "isPartOf", "causes")
"""Relationship types of the knowledge layer, excluded when a plan asks for any relation."""

MAX_ROWS = 10_000
"""Upper bound on the rows one Retrieval pattern returns (a runaway plan cannot flood memory)."""


@dataclass(frozen=True)
class VarLinks:
    """What linking decided for one pattern variable."""

    ids: tuple[str, ...] | None = None
    """Entity ids the node must be one of (linked names)."""
    name: str | None = None
    """Match the node by exact name (compiled without a database)."""
    labels: tuple[str, ...] = ()
    """Labels any of which the node must carry (linked types; empty = no type condition)."""
    relation_types: tuple[str, ...] | None = None
    """Relationship types any of which the edge may have (None = any relation)."""
    bound: bool = False
    """The variable is bound by an earlier step: its current ids come as ``$bound_<var>``."""


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


def bound_param(alias_index: int) -> str:
    return f"bound_{alias_index}"


def match_pattern(dialect: Dialect, pattern: Pattern, links: dict[str, VarLinks],
                  tail: Tail | None = None) -> PatternQuery:
    """One MATCH for a whole pattern, with WHERE conditions, then ``tail``."""
    tail = tail or Tail()
    node_var = {n.var: f"n{i}" for i, n in enumerate(pattern.nodes)}
    edge_var = {e.var: f"r{i}" for i, e in enumerate(pattern.edges)}
    params: dict[str, Any] = {}
    where: list[str] = []
    entity = dialect.ident(ENTITY_LABEL)

    def add_param(name: str, value: Any) -> str:
        params[name] = value
        return f"${name}"

    parts = []
    used_nodes: set[str] = set()
    for edge in pattern.edges:
        s, t, r = node_var[edge.source], node_var[edge.target], edge_var[edge.var]
        types = (links.get(edge.var) or VarLinks()).relation_types
        rel = r + ("".join([":" + "|".join(dialect.ident(x) for x in types)]) if types else "")
        src = f"({s}:{entity})" if s not in used_nodes else f"({s})"
        used_nodes.add(s)
        dst = f"({t}:{entity})" if t not in used_nodes else f"({t})"
        used_nodes.add(t)
        arrow = f"-[{rel}]->" if edge.directed else f"-[{rel}]-"
        parts.append(f"{src}{arrow}{dst}")
        if not types:
            where.append(f"NOT type({r}) IN {add_param('structural', list(STRUCTURAL_RELATIONS))}")
        for i, c in enumerate(edge.constraints):
            where.append(_condition(dialect, r, c.prop, c.op, c.value,
                                    lambda v, i=i, r=r: add_param(f"{r}_c{i}", v)))
    for node in pattern.nodes:
        v = node_var[node.var]
        if v not in used_nodes:
            parts.append(f"({v}:{entity})")
            used_nodes.add(v)
        link = links.get(node.var) or VarLinks()
        if link.bound:
            where.append(f"{v}.id IN {add_param(f'bound_{v}', [])}")
        if link.ids is not None:
            where.append(f"{v}.id IN {add_param(f'{v}_ids', list(link.ids))}")
        elif link.name is not None:
            where.append(f"{v}.name = {add_param(f'{v}_name', link.name)}")
        if link.labels:
            where.append("(" + " OR ".join(f"{v}:{dialect.ident(lb)}" for lb in link.labels) + ")")
        for i, c in enumerate(node.constraints):
            where.append(_condition(dialect, v, c.prop, c.op, c.value,
                                    lambda val, i=i, v=v: add_param(f"{v}_c{i}", val)))
    # Relationship isomorphism (Neo4j's own semantics, stated so FalkorDB does the same):
    # two edges of one pattern are two different relationships, so "the other films of
    # Kismet's director" cannot come back as Kismet. Node variables may coincide.
    where += dialect.all_distinct(list(edge_var.values()))
    if tail.kind == "filter" and tail.var:
        fv = node_var[tail.var]
        where.append(_condition(dialect, fv, tail.prop or "name", tail.op, tail.value,
                                lambda val: add_param("filter_value", val)))
    lines = ["MATCH " + ", ".join(parts)]
    if where:
        lines.append("WHERE " + "\n  AND ".join(where))
    node_cols = {alias: (f"{v}_id", f"{v}_name") for alias, v in node_var.items()}
    edge_cols = {alias: f"{r}_type" for alias, r in edge_var.items()}
    all_vars = list(node_var.values()) + list(edge_var.values())
    if tail.kind in ("rows", "filter"):
        lines.append(f"WITH DISTINCT {', '.join(all_vars)}")
        lines.append(f"LIMIT {add_param('max_rows', MAX_ROWS)}")
        returns = [f"{v}.id AS {v}_id, {v}.name AS {v}_name" for v in node_var.values()]
        returns += [f"type({r}) AS {r}_type" for r in edge_var.values()]
        lines.append("RETURN " + ", ".join(returns))
        return PatternQuery(Statement("\n".join(lines), params), node_cols, edge_cols)
    assert tail.var is not None
    tv = node_var[tail.var]
    # Relationship variables are projected (dialects.md 4.3) before the aggregate.
    lines.append(f"WITH DISTINCT {', '.join(all_vars)}")
    if tail.kind == "count":
        lines.append(f"RETURN count(DISTINCT {tv}) AS value")
        return PatternQuery(Statement("\n".join(lines), params), value_column="value")
    if tail.kind == "sum":
        lines.append(f"WITH DISTINCT {tv}")
        lines.append(f"RETURN sum(toFloat({_prop(dialect, tv, tail.prop)})) AS value")
        return PatternQuery(Statement("\n".join(lines), params), value_column="value")
    if tail.kind == "sort":
        key_node = node_var[tail.key_var] if tail.key_var else tv
        key = _prop(dialect, key_node, tail.key_prop)
        agg = "max" if tail.descending else "min"
        order = "DESC" if tail.descending else "ASC"
        lines.append(f"WITH {tv}, {agg}(toFloat({key})) AS num_key, {agg}({key}) AS text_key")
        # Numbers first, then text (nulls sort differently on the engines, so say it).
        lines.append("ORDER BY CASE WHEN num_key IS NULL THEN 1 ELSE 0 END ASC, "
                     f"num_key {order}, text_key {order}, {tv}.id ASC")
        if tail.limit is not None:
            lines.append(f"LIMIT {add_param('limit', int(tail.limit))}")
        lines.append(f"RETURN {tv}.id AS {tv}_id, {tv}.name AS {tv}_name, "
                     "coalesce(num_key, text_key) AS sort_key")
        return PatternQuery(Statement("\n".join(lines), params),
                            {tail.var: (f"{tv}_id", f"{tv}_name")}, key_column="sort_key")
    raise ValueError(f"unknown tail {tail.kind!r}")  # pragma: no cover - internal


def _prop(dialect: Dialect, var: str, prop: str | None) -> str:
    return f"{var}.{dialect.ident(prop or 'name')}"


def _condition(dialect: Dialect, var: str, prop: str, op: str, value: Any, param: Any) -> str:
    """``var.prop op $value``; numbers compare numerically (values may be stored as text).

    ``op`` is a comparison of :data:`kgdb.ir.COMPARISON_OPERATORS` or, for Filter,
    ``contains`` (case-insensitive substring).
    """
    if op != "contains" and op not in COMPARISON_OPERATORS:
        # op is pasted into the text: only the language's own operators may get there
        raise DslError(f"unknown comparison operator {op!r}")
    expr = _prop(dialect, var, prop)
    if op == "contains":
        return f"toLower(toString({expr})) CONTAINS toLower({param(str(value))})"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{expr} {op} {param(value)}"
    return f"toFloat({expr}) {op} {param(value)}"


# ------------------------------------------------------------------ linking look-ups

def find_entities_by_name(dialect: Dialect) -> Statement:
    """Entities whose name equals one of ``$names`` exactly, or ignoring case."""
    entity = dialect.ident(ENTITY_LABEL)
    return Statement(
        f"UNWIND $names AS wanted\n"
        f"MATCH (n:{entity})\n"
        "WHERE n.name = wanted OR toLower(n.name) = toLower(wanted)\n"
        "RETURN wanted, n.id AS id, n.name AS name, n.name = wanted AS exact\n"
        "ORDER BY wanted, exact DESC, id\n"
        "LIMIT $limit"
    )


def find_entities_exact(dialect: Dialect) -> Statement:
    """Entities whose name is one of ``$names`` (uses the name index when there is one)."""
    entity = dialect.ident(ENTITY_LABEL)
    return Statement(
        f"MATCH (n:{entity}) WHERE n.name IN $names\n"
        "RETURN n.name AS wanted, n.id AS id, n.name AS name\nORDER BY wanted, id"
    )


def list_relationship_types() -> Statement:
    return Statement("CALL db.relationshipTypes() YIELD relationshipType\n"
                     "RETURN relationshipType AS type ORDER BY type")


def list_entity_types() -> Statement:
    """The EntityType catalog with narrower types reached through isA / contains."""
    return Statement(
        "MATCH (t:EntityType)\n"
        "OPTIONAL MATCH (narrow:EntityType)-[:isA]->(t)\n"
        "OPTIONAL MATCH (t)-[:contains]->(part:EntityType)\n"
        "RETURN t.name AS name, collect(DISTINCT narrow.name) AS narrower, "
        "collect(DISTINCT part.name) AS contained\nORDER BY name"
    )


def count_labelled_entities(dialect: Dialect, label: str) -> Statement:
    """How many entities carry ``label`` (a type hint only applies when some do)."""
    return Statement(f"MATCH (n:{dialect.ident(ENTITY_LABEL)}:{dialect.ident(label)}) "
                     "RETURN count(n) AS entities")


# ------------------------------------------------------------------ hybrid retrieval

def count_chunks(dialect: Dialect) -> Statement:
    return Statement(f"MATCH (c:{dialect.ident('Chunk')}) RETURN count(c) AS chunks")


def chunks_of_entities(dialect: Dialect) -> Statement:
    """Chunks that support the entities ``$ids`` (KAG's mutual index)."""
    entity, chunk = dialect.ident(ENTITY_LABEL), dialect.ident("Chunk")
    return Statement(
        f"MATCH (e:{entity})-[:{dialect.ident('supporting_chunks')}]->(c:{chunk})\n"
        "WHERE e.id IN $ids\n"
        "RETURN DISTINCT c.id AS id, c.text AS text\nORDER BY id\nLIMIT $k"
    )


def nearest_chunks(dialect: Dialect) -> Statement:
    """The ``$k`` chunks nearest to ``$vector`` by L2 (the chunk vector index)."""
    return dialect.nearest_nodes("Chunk", "embedding", returns=("id", "text"))
