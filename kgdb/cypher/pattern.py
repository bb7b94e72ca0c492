"""Cypher for SimGRAG retrieval (paper section 5): isomorphic top-k matching of a linked pattern.

Every builder takes a :class:`~kgdb.ir.LinkedPattern` (candidates with their distances,
labels, relationship types, direction, constraints, distinctness) and the matching order,
and returns a :class:`~kgdb.statement.Statement` with its parameters. Engine differences come
from the dialect.

Isomorphism: relationships pairwise distinct, and nodes distinct as the linked pattern's
distinctness says, both stated explicitly (neither engine makes nodes distinct; FalkorDB
does not even keep relationships distinct in fixed patterns, shared/dialects.md section 4.3).
An edge is matched in either direction unless the pattern says it is directed (SimGRAG's
own patterns are undirected, as in the paper).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kgdb.cypher.conditions import constraints, node_conditions
from kgdb.cypher.params import Params
from kgdb.dialects.base import Dialect
from kgdb.ir import LinkedPattern
from kgdb.statement import Statement
from kgdb.vocabulary import ENTITY


@dataclass(frozen=True)
class MatchPlan:
    """The matching order of a connected pattern: node ``anchor`` first, then the edges in
    ``order`` (each edge's one end is already bound when it comes; DFS order)."""

    anchor: int
    order: tuple[int, ...]


@dataclass(frozen=True)
class PrunedMatch:
    """The top-k statement with the paper's lower bound (equation 11) applied set-wise: after
    expansion step ``s`` the partial GSD plus the sum of the minimum distances still unmatched
    must not exceed a bound tau; only matches with a GSD above ``above`` are returned, at most
    ``limit`` of them. Two texts, each built once: ``ranked`` orders the rows by GSD (the
    engine reads every match up to tau), ``level`` does not (for a tau that admits a single
    achievable GSD above ``above``: every row is tied, so the engine stops reading after
    ``limit`` rows, in its own deterministic order)."""

    ranked: Statement
    level: Statement

    def at(self, tau: float, *, above: float = -1.0, limit: int | None = None,
           ordered: bool = True) -> Statement:
        statement = self.ranked if ordered else self.level
        params: dict[str, float | int] = {"tau": tau, "above": above}
        if limit is not None:
            params["k"] = int(limit)
        return statement.with_params(**params)


def _arrow(linked: LinkedPattern, j: int, left: int, rel: str) -> str:
    """``-[rel]-`` or, for a directed edge, the arrow as seen from node ``left``."""
    edge = linked.edges[j].ref
    if not edge.directed:
        return f"-[{rel}]-"
    return f"-[{rel}]->" if linked.index(edge.source) == left else f"<-[{rel}]-"


def match_topk(dialect: Dialect, linked: LinkedPattern, plan: MatchPlan, *, k: int,
               label: str = ENTITY) -> Statement:
    """The top-``k`` subgraphs matching the linked pattern, by Graph Semantic Distance.

    GSD is the paper's equation (3): the sum of the candidates' distances for known nodes
    and relations (unknowns add nothing), added in canonical order (nodes by index, then
    edges by index) so that every engine computes bit-identical sums. Ties are broken by
    the engine's own (deterministic) order: among subgraphs of equal GSD any may be returned.
    Rows: ``gsd, ids, names, triples`` (``[start id, type, end id]`` per edge).
    """
    return _match(dialect, linked, plan, k, label, None)


def match_topk_pruned(dialect: Dialect, linked: LinkedPattern, plan: MatchPlan, *, k: int,
                      remaining: Sequence[float], label: str = ENTITY) -> PrunedMatch:
    """:func:`match_topk` cutting, after expansion step ``s``, every partial match whose GSD so
    far plus ``remaining[s]`` exceeds the run's tau (see :class:`PrunedMatch`)."""
    return PrunedMatch(_match(dialect, linked, plan, k, label, tuple(remaining)),
                       _match(dialect, linked, plan, k, label, tuple(remaining),
                              ordered=False))


def _match(dialect: Dialect, linked: LinkedPattern, plan: MatchPlan, k: int, label: str,
           remaining: tuple[float, ...] | None, ordered: bool = True) -> Statement:
    prune = remaining is not None
    p = Params()
    node_label = dialect.labels([label])
    cand = {i: p.add(f"n{i}", [{"id": c.id, "d": c.distance} for c in n.candidates])
            for i, n in enumerate(linked.nodes) if n.candidates is not None and i == plan.anchor}
    # Every other known item's distance is looked up per row: by key in a map (on FalkorDB
    # 4.16.3 far cheaper than a list comprehension, docs/design/neo4j-latency.md; Neo4j's
    # maps are hashed), or, where the engine cannot carry a key as a
    # map parameter (a FalkorDB id with a backtick), in the list.
    lookups = {f"n{i}": _lookup(dialect, p, f"n{i}", f"n{i}.id",
                                [(c.id, c.distance) for c in n.candidates], "id")
               for i, n in enumerate(linked.nodes)
               if n.candidates is not None and i != plan.anchor}
    lookups |= {f"r{j}": _lookup(dialect, p, f"r{j}", f"type(r{j})",
                                 [(c.id, c.distance) for c in e.types], "type")
                for j, e in enumerate(linked.edges) if e.types is not None}
    lines: list[str] = []
    bound_nodes: list[int] = []
    bound_edges: list[int] = []
    dist_vars: dict[str, str] = {}  # canonical key ("n3", "r1") -> Cypher variable
    canonical = ([f"n{i}" for i in range(len(linked.nodes))]
                 + [f"r{j}" for j in range(len(linked.edges))])

    def carried() -> str:
        names = [f"n{i}" for i in bound_nodes] + [f"r{j}" for j in bound_edges]
        return ", ".join(names + list(dist_vars.values()))

    tau = p.add("tau", None) if remaining is not None else ""
    above = p.add("above", -1.0) if remaining is not None else ""
    assert (tau, above) in (("", ""), ("$tau", "$above"))  # the names PrunedMatch.at sets

    def prune_clause(step: int) -> str:
        if remaining is None:
            return ""
        terms = [dist_vars[key] for key in canonical if key in dist_vars]
        terms.append(p.add(f"lb{step}", remaining[step]))
        return f"\nWHERE {' + '.join(terms)} <= {tau}"

    a = plan.anchor
    anchor = linked.nodes[a]
    if anchor.candidates is not None:
        lines.append(f"UNWIND {cand[a]} AS c{a}")
        if prune:  # cut before the id lookup: a candidate past tau is never looked up
            dist_vars[f"n{a}"] = f"c{a}.d"
            lines.append(f"WITH c{a}" + prune_clause(0))
        lines.append(f"MATCH (n{a}{node_label} {{id: c{a}.id}})")
        where = node_conditions(dialect, f"n{a}", anchor, p, ids=False)
        if where:
            lines.append("WHERE " + " AND ".join(where))
        bound_nodes.append(a)
        dist_vars[f"n{a}"] = f"dn{a}"
        lines.append(f"WITH n{a}, c{a}.d AS dn{a}")
    else:
        lines.append(f"MATCH (n{a}{node_label})")
        where = node_conditions(dialect, f"n{a}", anchor, p)
        if where:
            lines.append("WHERE " + " AND ".join(where))
        bound_nodes.append(a)

    for step, j in enumerate(plan.order, start=1):
        edge = linked.edges[j]
        s, t = linked.index(edge.ref.source), linked.index(edge.ref.target)
        u, w = (s, t) if s in bound_nodes else (t, s)
        r = f"r{j}"
        conditions: list[str] = []
        if edge.types is not None:
            conditions.append(f"type({r}) IN {p.add(f'r{j}_types', list(edge.type_names))}")
        conditions += constraints(dialect, r, edge.ref.constraints, p)
        if w in bound_nodes:
            lines.append(f"MATCH (n{u}){_arrow(linked, j, u, r)}(n{w})")
        else:
            lines.append(f"MATCH (n{u}){_arrow(linked, j, u, r)}(n{w}{node_label})")
            conditions += node_conditions(dialect, f"n{w}", linked.nodes[w], p)
            conditions += [f"n{w} <> n{b}" for b in bound_nodes if linked.must_differ(w, b)]
            bound_nodes.append(w)
        conditions += [f"{r} <> r{b}" for b in bound_edges]
        bound_edges.append(j)
        if conditions:
            lines.append("WHERE " + " AND ".join(conditions))
        existing = carried()
        new_dists = []
        if f"n{w}" in lookups and f"n{w}" not in dist_vars:
            dist_vars[f"n{w}"] = f"dn{w}"
            new_dists.append(f"{lookups[f'n{w}']} AS dn{w}")
        if r in lookups:
            dist_vars[r] = f"dr{j}"
            new_dists.append(f"{lookups[r]} AS dr{j}")
        if new_dists or prune:
            lines.append("WITH " + ", ".join([existing, *new_dists]) + prune_clause(step))

    terms = [dist_vars[key] for key in canonical if key in dist_vars]
    gsd = " + ".join(terms) if terms else "0.0"
    node_vars = [f"n{i}" for i in range(len(linked.nodes))]
    edge_vars = [f"r{j}" for j in range(len(linked.edges))]
    matched = ", ".join(node_vars + edge_vars)
    if prune:
        lines.append(f"WITH {matched}, {gsd} AS gsd\nWHERE gsd > {above}")
        lines.append(f"WITH {matched}, gsd")
    else:
        lines.append(f"WITH {matched}, {gsd} AS gsd")
    if ordered:  # by GSD only: ties stay in the engine's order, so its top-k sort is cheap
        lines.append("ORDER BY gsd ASC")
    limit = p.add("k", int(k))
    assert limit == "$k"
    lines.append(f"LIMIT {limit}")
    triples = ", ".join(f"[startNode({r}).id, type({r}), endNode({r}).id]" for r in edge_vars)
    lines.append(
        f"RETURN gsd, [{', '.join(v + '.id' for v in node_vars)}] AS ids, "
        f"[{', '.join(v + '.name' for v in node_vars)}] AS names, [{triples}] AS triples"
    )
    return Statement("\n".join(lines), p.values)


def match_native(dialect: Dialect, linked: LinkedPattern, plan: MatchPlan, *, k: int,
                 label: str = "Entity") -> Statement | None:
    """:func:`match_topk` as one call of the dialect's native matching procedure
    (``kgdb.simgrag.match`` of kgdb's Neo4j plugin: the pruned best-first search of paper
    section 5.2 in memory, over the store's traversal API), with the same columns and the same
    GSDs (among equal GSDs, the subgraphs its depth-first search finds first); None where the
    dialect has no such procedure, the anchor has no candidates, or the pattern has property
    constraints (those stay in Cypher)."""
    if dialect.SIMGRAG_MATCH is None or not native_ready(linked, plan):
        return None
    p = Params()
    component = p.add("component", native_component(linked, plan, label))
    return Statement(
        f"CALL {dialect.SIMGRAG_MATCH}({component}, {p.add('k', int(k))})"
        "\nYIELD gsd, ids, names, triples\nRETURN gsd, ids, names, triples", p.values)


def native_ready(linked: LinkedPattern, plan: MatchPlan) -> bool:
    """Whether the native matching takes this component: its anchor is a known node, and no
    node or edge has property constraints (those stay in Cypher)."""
    return linked.nodes[plan.anchor].candidates is not None and not any(
        n.ref.constraints for n in linked.nodes) and not any(
        e.ref.constraints for e in linked.edges)


def native_component(linked: LinkedPattern, plan: MatchPlan, label: str) -> dict[str, Any]:
    """The component map of ``kgdb.simgrag.match`` (see the plugin's SimGrag.java)."""
    n = len(linked.nodes)
    return {
        "label": label, "anchor": plan.anchor, "order": list(plan.order),
        "nodes": [{"candidates": None if node.candidates is None else
                   [{"id": c.id, "d": c.distance} for c in node.candidates],
                   "name": node.name, "labels": list(node.labels)} for node in linked.nodes],
        "edges": [{"source": linked.index(e.ref.source), "target": linked.index(e.ref.target),
                   "directed": bool(e.ref.directed),
                   "types": None if e.types is None else
                   [{"type": c.id, "d": c.distance} for c in e.types]} for e in linked.edges],
        "differ": [[linked.must_differ(a, b) for b in range(n)] for a in range(n)],
    }


def _lookup(dialect: Dialect, p: Params, name: str, key: str,
            distances: Sequence[tuple[str, float]], field: str) -> str:
    """The expression giving the candidate distance of ``key`` (null if not a candidate)."""
    if all(dialect.map_key_ok(k) for k, _ in distances):
        return f"{p.add(f'{name}_d', {k: d for k, d in distances})}[{key}]"
    listed = p.add(name, [{field: k, "d": d} for k, d in distances])
    return f"[c IN {listed} WHERE c.{field} = {key} | c.d][0]"


# ---------------------------------------------------------------------- optimized engine step
def expand_edge(dialect: Dialect, linked: LinkedPattern, edge: int, head: int, head_id: str,
                *, target_id: str | None = None, label: str = ENTITY) -> Statement:
    """One expansion step of the optimized search (paper Algorithm 1, line 13).

    From node ``head`` (a pattern node index, matched to the entity ``head_id``) along pattern
    edge ``edge``: every relationship of a candidate type to an entity that may take the
    other end's place (its candidates, labels and constraints), or to ``target_id`` when the
    other end is already matched. Rows: ``id, name, type, src, dst`` (the relationship as a
    triple, so the caller can keep relationships distinct).
    """
    p = Params()
    node_label = dialect.labels([label])
    linked_edge = linked.edges[edge]
    s, t = linked.index(linked_edge.ref.source), linked.index(linked_edge.ref.target)
    other = t if s == head else s
    conditions = node_conditions(dialect, "h", linked.nodes[head], p, ids=False)
    if linked_edge.types is not None:
        conditions.append(f"type(r) IN {p.add('types', list(linked_edge.type_names))}")
    conditions += constraints(dialect, "r", linked_edge.ref.constraints, p)
    if target_id is not None:
        conditions.append(f"t.id = {p.add('target', target_id)}")
    else:
        conditions += node_conditions(dialect, "t", linked.nodes[other], p)
    conditions.append("t <> h")
    text = (
        f"MATCH (h{node_label} {{id: {p.add('head', head_id)}}})"
        f"{_arrow(linked, edge, head, 'r')}(t{node_label})\n"
        f"WHERE {' AND '.join(conditions)}\n"
        "RETURN t.id AS id, t.name AS name, type(r) AS type, startNode(r).id AS src, "
        "endNode(r).id AS dst"
    )
    return Statement(text, p.values)


def expansion_order(linked: LinkedPattern, anchor: int) -> tuple[int, ...]:
    """Edge indexes in DFS order from ``anchor`` (Algorithm 1's expansion order)."""
    index = {n.var: i for i, n in enumerate(linked.nodes)}
    ends = [(index[e.ref.source], index[e.ref.target]) for e in linked.edges]
    order: list[int] = []
    visited = {anchor}

    def dfs(i: int) -> None:
        for j, (s, t) in enumerate(ends):
            if j in order or i not in (s, t):
                continue
            order.append(j)
            other = t if s == i else s
            if other not in visited:
                visited.add(other)
                dfs(other)

    dfs(anchor)
    return tuple(order)


def plan_match(linked: LinkedPattern) -> MatchPlan:
    """Anchor on the node with the fewest candidates (Algorithm 1, line 1); DFS edge order."""

    def cost(i: int) -> tuple[int, float, int]:
        node = linked.nodes[i]
        if node.candidates is not None:
            return (0, len(node.candidates), i)
        return (1 if node.labels or node.name else 2, float("inf"), i)

    anchor = min(range(len(linked.nodes)), key=cost)
    return MatchPlan(anchor, expansion_order(linked, anchor))
