"""The dialect-free intermediate representation shared by every front-end.

A SimGRAG pattern graph and a logical-form Retrieval step are the same thing: typed
variables, known or UNKNOWN names, relation phrases, property constraints. Front-ends build
a :class:`Pattern`; linking attaches candidates from the database's indexes; a dialect turns
it into Cypher.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgdb.errors import KgdbError

COMPARISON_OPERATORS = ("=", "<>", "<", ">", "<=", ">=")


class PatternError(KgdbError):
    """A pattern that is not a well-formed graph (dangling edge, duplicate variable...)."""


@dataclass(frozen=True)
class Constraint:
    """``<var>.<prop> <op> <value>``: a condition on a node's or relation's property."""

    prop: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        if self.op == "!=":
            object.__setattr__(self, "op", "<>")
        if self.op not in COMPARISON_OPERATORS:
            raise PatternError(f"unknown comparison operator {self.op!r}")


@dataclass(frozen=True)
class NodeRef:
    """A pattern node: a known entity (``name``) or an UNKNOWN one (``name is None``)."""

    var: str
    name: str | None = None
    types: tuple[str, ...] = ()
    """Type hints (``Movie``, ``director``); linked to entity types by meaning."""
    constraints: tuple[Constraint, ...] = ()
    label: str | None = None
    """The text the front-end wrote for this node (``UNKNOWN director 1``), for display."""

    @property
    def known(self) -> bool:
        return self.name is not None

    @property
    def display(self) -> str:
        """How to show the node: its written text, its name, or ``UNKNOWN <type> <var>``."""
        if self.label:
            return self.label
        if self.name is not None:
            return self.name
        return " ".join([UNKNOWN_PREFIX, *self.types[:1], self.var])


@dataclass(frozen=True)
class EdgeRef:
    """A pattern edge between two node variables, with a relation phrase or UNKNOWN (None)."""

    var: str
    source: str
    target: str
    relation: str | None = None
    alternatives: tuple[str, ...] = ()
    """Further relation phrases any of which may match (``p1:`acted in`|`directed```)."""
    constraints: tuple[Constraint, ...] = ()
    directed: bool = False
    """SimGRAG ignores direction; logical forms may ask for it."""
    label: str | None = None
    """The text the front-end wrote for this relation (``UNKNOWN relation 1``), for display."""

    @property
    def known(self) -> bool:
        return self.relation is not None

    @property
    def display(self) -> str:
        if self.label:
            return self.label
        return self.relation if self.relation is not None else f"{UNKNOWN_PREFIX} {self.var}"

    @property
    def phrases(self) -> tuple[str, ...]:
        return ((self.relation,) if self.relation else ()) + self.alternatives


@dataclass(frozen=True)
class Pattern:
    """A small pattern graph. Disconnected components are retrieved separately."""

    nodes: tuple[NodeRef, ...]
    edges: tuple[EdgeRef, ...] = field(default=())

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for var in [n.var for n in self.nodes] + [e.var for e in self.edges]:
            if var in seen:
                raise PatternError(f"variable {var!r} is defined twice")
            seen.add(var)
        node_vars = {n.var for n in self.nodes}
        for edge in self.edges:
            for end in (edge.source, edge.target):
                if end not in node_vars:
                    raise PatternError(f"edge {edge.var!r} refers to unknown node {end!r}")
            if edge.source == edge.target:
                raise PatternError(f"edge {edge.var!r} is a self-loop, which isomorphic "
                                   "matching cannot map onto distinct nodes")

    def node(self, var: str) -> NodeRef:
        for n in self.nodes:
            if n.var == var:
                return n
        raise PatternError(f"no node {var!r} in the pattern")

    def components(self) -> list[Pattern]:
        """Connected components, each a pattern of its own (in order of first node)."""
        parent = {n.var: n.var for n in self.nodes}

        def find(v: str) -> str:
            while parent[v] != v:
                parent[v] = parent[parent[v]]
                v = parent[v]
            return v

        for e in self.edges:
            parent[find(e.source)] = find(e.target)
        groups: dict[str, list[NodeRef]] = {}
        for n in self.nodes:
            groups.setdefault(find(n.var), []).append(n)
        return [
            Pattern(tuple(ns), tuple(e for e in self.edges if find(e.source) == root))
            for root, ns in groups.items()
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [{"var": n.var, "name": n.name, "types": list(n.types),
                       "constraints": [vars(c) for c in n.constraints]} for n in self.nodes],
            "edges": [{"var": e.var, "source": e.source, "target": e.target,
                       "relation": e.relation, "alternatives": list(e.alternatives),
                       "directed": e.directed,
                       "constraints": [vars(c) for c in e.constraints]} for e in self.edges],
        }


UNKNOWN_PREFIX = "UNKNOWN"
"""How a pattern writes an unknown node or relation (``UNKNOWN director 1``; SimGRAG 4.3)."""
