"""The dialect-free intermediate representation shared by every front-end.

A SimGRAG pattern graph and a logical-form Retrieval step are the same thing: typed
variables, known or UNKNOWN names, relation phrases, property constraints. Front-ends build
a :class:`Pattern`; linking attaches candidates from the database's indexes; a dialect turns
it into Cypher.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

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
    """Match only in this direction (source to target); SimGRAG's own patterns are undirected."""
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
        groups = connected_groups([n.var for n in self.nodes],
                                  [(e.source, e.target) for e in self.edges])
        out = []
        for group in groups:
            members = set(group)
            out.append(Pattern(tuple(n for n in self.nodes if n.var in members),
                               tuple(e for e in self.edges if e.source in members)))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [{"var": n.var, "name": n.name, "types": list(n.types),
                       "constraints": [vars(c) for c in n.constraints]} for n in self.nodes],
            "edges": [{"var": e.var, "source": e.source, "target": e.target,
                       "relation": e.relation, "alternatives": list(e.alternatives),
                       "directed": e.directed,
                       "constraints": [vars(c) for c in e.constraints]} for e in self.edges],
        }


def connected_groups(items: Iterable[Hashable],
                     links: Iterable[tuple[Hashable, Hashable]]) -> list[list[Any]]:
    """Group ``items`` by the ``links`` between them (union-find), groups and members in order
    of first appearance. kgdb's one union-find: pattern components, logical-form step groups."""
    parent: dict[Hashable, Hashable] = {}
    order: list[Hashable] = []

    def find(x: Hashable) -> Hashable:
        if x not in parent:
            parent[x] = x
            order.append(x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for item in items:
        find(item)
    for a, b in links:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra
    groups: dict[Hashable, list[Any]] = {}
    for x in order:
        groups.setdefault(find(x), []).append(x)
    return list(groups.values())


# ---------------------------------------------------------------------- the linked pattern
Distinctness = Literal["all", "known", "edges"]
"""Which pattern nodes must map to different entities:

``all``
    every pair (subgraph isomorphism: SimGRAG's paper);
``known``
    a known node differs from every node and neighbours differ, but two unknown nodes that
    are not neighbours may coincide (MetaQA's answers allow it: the writer of one film may
    direct the next);
``edges``
    nodes may coincide; only relationships are pairwise distinct (Cypher's own semantics,
    used by logical forms).

Relationships are pairwise distinct under every choice."""

DISTINCTNESS: tuple[str, ...] = ("all", "known", "edges")


@dataclass(frozen=True)
class Candidate:
    """A graph node that a pattern text links to: an entity, a relation type or an entity
    type, with the exact L2 distance between the text's embedding and the node's (0.0 when it
    was linked by its name)."""

    id: str
    """The node's key: ``Entity.id``, or the relationship type / label it stands for."""
    name: str
    """Its human text: the entity's name, the relation type's text."""
    distance: float = 0.0


@dataclass(frozen=True)
class LinkedNode:
    """A pattern node and what linking decided for it."""

    ref: NodeRef
    candidates: tuple[Candidate, ...] | None = None
    """Entities the node may map to, closest first (an empty tuple: its name linked to
    nothing, so nothing matches); None: not restricted to candidates (an unknown node, or a
    name matched exactly as written, see ``name``)."""
    labels: tuple[str, ...] = ()
    """Entity-type labels any of which the node must carry (empty: no type condition)."""
    name: str | None = None
    """Match the node by exactly this name (a pattern compiled without a database)."""

    @property
    def var(self) -> str:
        return self.ref.var


@dataclass(frozen=True)
class LinkedEdge:
    """A pattern edge and the relationship types it may have."""

    ref: EdgeRef
    types: tuple[Candidate, ...] | None = None
    """Relationship types (``Candidate.id``), closest first; None: any relationship that is
    not one of the knowledge layer's structural ones."""

    @property
    def var(self) -> str:
        return self.ref.var

    @property
    def type_names(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.types or ())


@dataclass(frozen=True)
class LinkedPattern:
    """The one linked representation every solver consumes: the pattern, per variable its
    candidates, labels and relation types, and explicit direction (on each edge),
    distinctness and constraints (on each node and edge)."""

    pattern: Pattern
    nodes: tuple[LinkedNode, ...]
    edges: tuple[LinkedEdge, ...]
    distinct: Distinctness = "all"
    notes: tuple[str, ...] = ()
    """What linking could not do (a name that matched nothing, a type that labels nothing)."""

    def __post_init__(self) -> None:
        if [n.var for n in self.nodes] != [n.var for n in self.pattern.nodes] or \
                [e.var for e in self.edges] != [e.var for e in self.pattern.edges]:
            raise PatternError("a linked pattern must link every node and edge, in order")
        if self.distinct not in DISTINCTNESS:
            raise PatternError(f"unknown node distinctness {self.distinct!r}; choose one of "
                               f"{', '.join(DISTINCTNESS)}")

    def node(self, var: str) -> LinkedNode:
        for n in self.nodes:
            if n.var == var:
                return n
        raise PatternError(f"no node {var!r} in the pattern")

    def edge(self, var: str) -> LinkedEdge:
        for e in self.edges:
            if e.var == var:
                return e
        raise PatternError(f"no edge {var!r} in the pattern")

    def index(self, var: str) -> int:
        return [n.var for n in self.nodes].index(var)

    def components(self) -> list[LinkedPattern]:
        """Connected components, each linked as here (in order of first node)."""
        return [self.restrict(c) for c in self.pattern.components()]

    def restrict(self, part: Pattern) -> LinkedPattern:
        """This pattern's links for ``part``, a sub-pattern of its pattern."""
        nodes = {n.var: n for n in self.nodes}
        edges = {e.var: e for e in self.edges}
        return LinkedPattern(part, tuple(nodes[n.var] for n in part.nodes),
                             tuple(edges[e.var] for e in part.edges), self.distinct,
                             self.notes)

    @property
    def unmatchable(self) -> bool:
        """Some name or relation linked to nothing, so no subgraph can match."""
        return any(n.candidates == () for n in self.nodes) or any(
            e.types == () for e in self.edges)

    def must_differ(self, a: int, b: int) -> bool:
        """Whether nodes ``a`` and ``b`` (indexes) must map to different entities."""
        if self.distinct == "all":
            return True
        if self.distinct == "edges":
            return False
        if self.nodes[a].ref.known or self.nodes[b].ref.known:
            return True
        va, vb = self.nodes[a].var, self.nodes[b].var
        return any({e.source, e.target} == {va, vb} for e in self.pattern.edges)

    def linked_ids(self) -> list[str]:
        """Every candidate entity id, in node order (the entities the pattern names)."""
        return list(dict.fromkeys(c.id for n in self.nodes for c in n.candidates or ()))

    def to_json(self) -> dict[str, Any]:
        return {
            "pattern": self.pattern.to_json(), "distinct": self.distinct,
            "nodes": {n.var: {"candidates": None if n.candidates is None else
                              [vars(c) for c in n.candidates],
                              "labels": list(n.labels), "name": n.name} for n in self.nodes},
            "edges": {e.var: None if e.types is None else [vars(c) for c in e.types]
                      for e in self.edges},
            "notes": list(self.notes),
        }


def unlinked(pattern: Pattern, distinct: Distinctness = "all",
             notes: Sequence[str] = ()) -> LinkedPattern:
    """A pattern linked without a database: names match exactly as written, relation phrases
    are relationship types as written, type hints add no condition."""
    return LinkedPattern(
        pattern,
        tuple(LinkedNode(n, name=n.name) for n in pattern.nodes),
        tuple(LinkedEdge(e, tuple(Candidate(p, p) for p in e.phrases) if e.phrases else None)
              for e in pattern.edges),
        distinct, tuple(notes))


UNKNOWN_PREFIX = "UNKNOWN"
"""How a pattern writes an unknown node or relation (``UNKNOWN director 1``; SimGRAG 4.3)."""
