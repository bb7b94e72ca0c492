"""Cypher for SimGRAG retrieval (paper section 5): candidate search and isomorphic top-k matching.

Every builder returns a :class:`~kgdb.statement.Statement`; engine differences come from the
dialect (vector-index calls, exact L2, identifier quoting). Values are always parameters:

- candidate entities of a pattern node ``i``: ``$n<i>`` = list of ``{id, d}`` (``d`` the exact L2
  distance between the node's stored embedding and the pattern text's embedding) and
  ``$n<i>_ids`` = the same ids as a plain list (for ``IN``);
- typed unknown nodes: ``$n<i>_labels`` = entity-type labels any of which the node must carry;
- candidate relation types of a pattern edge ``j``: ``$r<j>`` = list of ``{type, d}`` and
  ``$r<j>_types`` = the type names;
- ``$k``: how many subgraphs; ``$tau`` (optional): a GSD bound, partial matches whose lower
  bound exceeds it are cut (the paper's pruning, equation 11, applied set-wise).

Isomorphism: nodes pairwise distinct and relationships pairwise distinct, both stated
explicitly (neither engine makes nodes distinct; FalkorDB does not even keep relationships
distinct in fixed patterns, shared/dialects.md section 4.3). Direction is ignored
(``-[r]-``), as the paper does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from kgdb.dialects.base import Dialect
from kgdb.statement import Statement

NodeMode = Literal["ids", "labels", "any"]
EdgeMode = Literal["types", "any"]
Distinct = Literal["all", "known"]
"""Which pattern nodes must map to distinct entities: ``all`` (isomorphism, the paper), or
``known``: known nodes differ from every node and adjacent nodes differ, but two unknown
nodes that are not neighbours may map to the same entity (a homomorphic image, as MetaQA's
answers allow: the writer of a movie may be the director of the next one)."""


@dataclass(frozen=True)
class NodeSlot:
    """How pattern node ``index`` is matched: among candidate ids, by type labels, or anything."""

    index: int
    mode: NodeMode


@dataclass(frozen=True)
class EdgeSlot:
    """Pattern edge ``index`` between node indexes ``source`` and ``target``."""

    index: int
    source: int
    target: int
    mode: EdgeMode


def must_differ(plan: MatchPlan, a: int, b: int, distinct: Distinct) -> bool:
    """Whether pattern nodes ``a`` and ``b`` must map to different entities."""
    if distinct == "all":
        return True
    nodes = {slot.index: slot for slot in plan.nodes}
    if nodes[a].mode == "ids" or nodes[b].mode == "ids":
        return True
    return any({e.source, e.target} == {a, b} for e in plan.edges)


@dataclass(frozen=True)
class MatchPlan:
    """A connected pattern with its matching order: ``anchor`` first, then ``order`` (DFS)."""

    nodes: tuple[NodeSlot, ...]
    edges: tuple[EdgeSlot, ...]
    anchor: int
    order: tuple[int, ...]
    """Edge indexes in expansion order; each edge's one end is already bound when it comes."""


# ---------------------------------------------------------------------- candidates
def search_candidates(dialect: Dialect, branches: Sequence[tuple[str, str, str, str]], *,
                      with_labels: bool = False) -> Statement:
    """Candidates of several kinds in one round trip: a ``UNION ALL`` of nearest-node searches.

    Each branch ``(kind, label, key, shown)`` searches ``label``'s vector index for every
    ``{key, vector}`` in ``$<kind>_queries`` and returns its ``$<kind>_k`` nearest nodes as
    ``key, id (node.<key>), name (node.<shown>), distance``, with the exact L2 distance; keys
    are unique across branches. The top-k is cut per query inside the database: the index may
    yield more rows than asked (FalkorDB over-fetches), and the client parses every cell.
    ``with_labels`` adds one row, key -1, whose ``id`` lists the node labels in use.
    """
    parts = []
    for kind, label, key, shown in branches:
        if not kind.isidentifier():
            raise ValueError(f"invalid candidate kind {kind!r}")
        call = dialect.vector_search_call(label, "embedding", f"${kind}_k", "q.vector")
        # Recomputed, not taken from the score: Neo4j's score loses small distances, and
        # FalkorDB 4.16's index can yield a stale entry of an updated node with its old score.
        distance = dialect.exact_l2_prepared("node.embedding", "qv")
        body = (f"WITH q, {dialect.vector_value('q.vector')} AS qv\n"
                f"{call}\n"
                f"WITH node.{dialect.ident(key)} AS id, node.{dialect.ident(shown)} AS name, "
                f"{distance} AS distance\n"
                "ORDER BY distance ASC, id ASC\n"
                f"LIMIT ${kind}_k\n"
                "RETURN id, name, distance")
        parts.append(f"UNWIND ${kind}_queries AS q\n{dialect.subquery(['q'], body)}\n"
                     "RETURN q.key AS key, id, name, distance")
    if with_labels:
        parts.append("CALL db.labels() YIELD label\n"
                     "RETURN -1 AS key, collect(label) AS id, null AS name, 0.0 AS distance")
    return Statement("\nUNION ALL\n".join(parts))


# ---------------------------------------------------------------------- top-k matching
def _node_filter(var: str, slot: NodeSlot) -> list[str]:
    if slot.mode == "ids":
        return [f"{var}.id IN $n{slot.index}_ids"]
    if slot.mode == "labels":
        return [f"any(l IN labels({var}) WHERE l IN $n{slot.index}_labels)"]
    return []


def _node_distance(var: str, slot: NodeSlot) -> str | None:
    if slot.mode != "ids":
        return None
    return f"[c IN $n{slot.index} WHERE c.id = {var}.id | c.d][0]"


def _edge_distance(var: str, slot: EdgeSlot) -> str | None:
    if slot.mode != "types":
        return None
    return f"[c IN $r{slot.index} WHERE c.type = type({var}) | c.d][0]"


def match_topk(dialect: Dialect, plan: MatchPlan, *, label: str = "Entity",
               prune: bool = False, distinct: Distinct = "all") -> Statement:
    """The top-``$k`` subgraphs isomorphic to the plan's pattern, by Graph Semantic Distance.

    GSD is the paper's equation (3): the sum of the candidates' distances for known nodes
    and relations (unknowns add nothing), added in canonical order (nodes by index, then
    edges by index) so that every engine computes bit-identical sums. Ties are broken by
    the matched node ids (in node order), then by each edge's type and start node id.

    With ``prune``, after every expansion step the partial GSD plus the lower bound of what
    is still unmatched (``$lb<s>``: the sum of the remaining minimum distances) must not
    exceed ``$tau``; the caller raises ``$tau`` until ``$k`` rows come back.
    """
    nodes = {slot.index: slot for slot in plan.nodes}
    edges = {slot.index: slot for slot in plan.edges}
    node_label = dialect.labels([label])
    lines: list[str] = []
    bound_nodes: list[int] = []
    bound_edges: list[int] = []
    dist_vars: dict[str, str] = {}  # canonical key ("n3", "r1") -> Cypher variable

    def carried() -> str:
        names = [f"n{i}" for i in bound_nodes] + [f"r{j}" for j in bound_edges]
        names += list(dist_vars.values())
        return ", ".join(names)

    def prune_clause(step: int) -> str:
        if not prune:
            return ""
        terms = [dist_vars[key] for key in _canonical_keys(plan) if key in dist_vars]
        terms.append(f"$lb{step}")
        return f"\nWHERE {' + '.join(terms)} <= $tau"

    anchor = nodes[plan.anchor]
    a = f"n{anchor.index}"
    if anchor.mode == "ids":
        lines.append(f"UNWIND $n{anchor.index} AS c{anchor.index}")
        lines.append(f"MATCH ({a}{node_label} {{id: c{anchor.index}.id}})")
        bound_nodes.append(anchor.index)
        dist_vars[f"n{anchor.index}"] = f"dn{anchor.index}"
        lines.append(f"WITH {a}, c{anchor.index}.d AS dn{anchor.index}" + prune_clause(0))
    else:
        lines.append(f"MATCH ({a}{node_label})")
        where = _node_filter(a, anchor)
        if where:
            lines.append("WHERE " + " AND ".join(where))
        bound_nodes.append(anchor.index)

    for step, j in enumerate(plan.order, start=1):
        edge = edges[j]
        if edge.source in bound_nodes:
            u, w = edge.source, edge.target
        else:
            u, w = edge.target, edge.source
        r = f"r{j}"
        conditions: list[str] = []
        if edge.mode == "types":
            conditions.append(f"type({r}) IN $r{j}_types")
        if w in bound_nodes:
            lines.append(f"MATCH (n{u})-[{r}]-(n{w})")
        else:
            lines.append(f"MATCH (n{u})-[{r}]-(n{w}{node_label})")
            conditions += _node_filter(f"n{w}", nodes[w])
            conditions += [f"n{w} <> n{b}" for b in bound_nodes
                           if must_differ(plan, w, b, distinct)]
            bound_nodes.append(w)
        conditions += [f"{r} <> r{b}" for b in bound_edges]
        bound_edges.append(j)
        if conditions:
            lines.append("WHERE " + " AND ".join(conditions))
        existing = carried()
        new_dists = []
        node_d = _node_distance(f"n{w}", nodes[w])
        if node_d and f"n{w}" not in dist_vars:
            dist_vars[f"n{w}"] = f"dn{w}"
            new_dists.append(f"{node_d} AS dn{w}")
        edge_d = _edge_distance(r, edge)
        if edge_d:
            dist_vars[f"r{j}"] = f"dr{j}"
            new_dists.append(f"{edge_d} AS dr{j}")
        if new_dists or prune:
            lines.append("WITH " + ", ".join([existing, *new_dists]) + prune_clause(step))

    terms = [dist_vars[key] for key in _canonical_keys(plan) if key in dist_vars]
    gsd = " + ".join(terms) if terms else "0.0"
    node_vars = [f"n{slot.index}" for slot in sorted(plan.nodes, key=lambda s: s.index)]
    edge_vars = [f"r{slot.index}" for slot in sorted(plan.edges, key=lambda s: s.index)]
    order_keys = ["gsd ASC"] + [f"{v}.id ASC" for v in node_vars]
    for r in edge_vars:
        order_keys += [f"type({r}) ASC", f"startNode({r}).id ASC"]
    lines.append(f"WITH {', '.join(node_vars + edge_vars)}, {gsd} AS gsd")
    lines.append("ORDER BY " + ", ".join(order_keys))
    lines.append("LIMIT $k")
    triples = ", ".join(f"[startNode({r}).id, type({r}), endNode({r}).id]" for r in edge_vars)
    lines.append(
        f"RETURN gsd, [{', '.join(v + '.id' for v in node_vars)}] AS ids, "
        f"[{', '.join(v + '.name' for v in node_vars)}] AS names, [{triples}] AS triples"
    )
    return Statement("\n".join(lines))


def _canonical_keys(plan: MatchPlan) -> list[str]:
    return ([f"n{s.index}" for s in sorted(plan.nodes, key=lambda s: s.index)]
            + [f"r{s.index}" for s in sorted(plan.edges, key=lambda s: s.index)])


# ---------------------------------------------------------------------- optimized engine step
def expand_edge(dialect: Dialect, *, target: NodeMode | Literal["bound"], edge: EdgeMode,
                label: str = "Entity") -> Statement:
    """One expansion step of the optimized search (paper Algorithm 1, line 13).

    From the node ``$head`` (an id), every relationship of a candidate type (``$types``) to
    a node that may take the pattern node's place: a candidate (``$ids``), a typed entity
    (``$labels``), any entity, or the node already bound (``$target``). Returns each
    relationship as a triple so the caller can keep relationships distinct.
    """
    node_label = dialect.labels([label])
    conditions = []
    if edge == "types":
        conditions.append("type(r) IN $types")
    if target == "ids":
        conditions.append("t.id IN $ids")
    elif target == "labels":
        conditions.append("any(l IN labels(t) WHERE l IN $labels)")
    elif target == "bound":
        conditions.append("t.id = $target")
    conditions.append("t <> h")
    text = (
        f"MATCH (h{node_label} {{id: $head}})-[r]-(t{node_label})\n"
        f"WHERE {' AND '.join(conditions)}\n"
        "RETURN t.id AS id, t.name AS name, type(r) AS type, startNode(r).id AS src, "
        "endNode(r).id AS dst"
    )
    return Statement(text)
