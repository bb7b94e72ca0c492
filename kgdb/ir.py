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


# --- SimGRAG: patterns as the triples a model writes (paper section 4.1, 4.3)
UNKNOWN_PREFIX = "UNKNOWN"


def parse_unknown(text: str) -> tuple[str, ...] | None:
    """``UNKNOWN director 1`` -> ``("director",)``; ``UNKNOWN 1`` -> ``()``; a name -> None.

    The words between the keyword and the trailing id are the type hint (paper 4.3).
    """
    words = text.strip().split()
    if not words or words[0].upper() != UNKNOWN_PREFIX:
        return None
    rest = words[1:]
    if rest and rest[-1].isdigit():
        rest = rest[:-1]
    type_text = " ".join(rest).strip()
    if type_text.lower() in ("", "entity", "node", "relation", "thing"):
        return ()
    return (type_text,)


def pattern_from_triples(triples: list[tuple[str, str, str]]) -> Pattern:
    """Build a pattern from ``(head, relation, tail)`` texts.

    The same text is the same node; ``UNKNOWN ...`` marks an unknown node or relation (the
    same ``UNKNOWN x 1`` text twice is the same unknown node). Node variables are ``n0,
    n1, ...`` in order of first mention, edge variables ``e0, e1, ...`` in triple order.
    """
    nodes: dict[str, NodeRef] = {}
    edges: list[EdgeRef] = []

    def node(text: str) -> str:
        key = " ".join(text.split())
        if key not in nodes:
            types = parse_unknown(key)
            var = f"n{len(nodes)}"
            nodes[key] = (NodeRef(var, None, types, label=key) if types is not None
                          else NodeRef(var, key, label=key))
        return nodes[key].var

    for i, (head, relation, tail) in enumerate(triples):
        source, target = node(head), node(tail)
        if source == target:
            raise PatternError(f"triple {i + 1} ({head!r}, {relation!r}, {tail!r}) links a "
                               "node to itself")
        known = parse_unknown(relation) is None
        edges.append(EdgeRef(f"e{i}", source, target, " ".join(relation.split()) if known
                             else None, label=" ".join(relation.split())))
    return Pattern(tuple(nodes.values()), tuple(edges))


def pattern_triples(pattern: Pattern) -> list[tuple[str, str, str]]:
    """The pattern as ``(head, relation, tail)`` texts (inverse of :func:`pattern_from_triples`)."""
    texts = {n.var: n.display for n in pattern.nodes}
    return [(texts[e.source], e.display, texts[e.target]) for e in pattern.edges]
