"""SimGRAG pattern-to-subgraph retrieval (paper sections 4.2-4.3 and 5) inside the graph database.

Flow for one pattern: embed the pattern's texts; find candidates through the database's
vector indexes (top-k(n) entities per known node, top-k(r) relation types per known
relation, the entities of the top-k(t) entity types per typed unknown node when the graph has
an entity-type catalog); then find the top-k subgraphs isomorphic to each connected
component of the pattern, by Graph Semantic Distance (equation 3), with one of two engines:

``cypher``
    One generated statement per component (:func:`kgdb.cypher.pattern.match_topk`): the
    paper's top-k retrieval (section 5.1) as a set-oriented query, anchored on the node with
    the fewest candidates and expanded in DFS order. With ``prune`` (the default) it also
    applies the paper's lower bound (equation 11) set-wise: rows whose partial GSD plus the
    remaining minimum distances exceed a bound tau are cut, and tau grows until k subgraphs
    with GSD <= tau are found (then no better one can have been cut). Each run asks only
    for the matches above the previous tau (those below are all found) and only for as many
    as are still wanted; its first runs take one achievable GSD each, unordered, so the
    database stops reading at the k-th however many paths tie there; then larger steps
    (:func:`_next_tau`), whose rows are ranked by GSD.

``optimized``
    The paper's Algorithm 1 with pruning and greedy order (section 5.2), driven from Python:
    a best-first search over partial mappings ordered by their lower bound, where each
    expansion is one small Cypher statement (:func:`kgdb.cypher.pattern.expand_edge`) run in
    the database. Partial mappings whose bound exceeds the k-th best GSD are never expanded.
    Python drives because the search order depends on every result so far, which one
    Cypher statement cannot express on FalkorDB (no procedures, no loops). A component
    without any known node has no candidates to start from (the paper's start set would
    be every entity, one expansion each); it runs on the ``cypher`` engine.

``native``
    Algorithm 1 inside the database, one call per component
    (:func:`kgdb.cypher.pattern.match_native`: ``kgdb.simgrag.match`` of kgdb's Neo4j plugin).
    The ``cypher`` engine uses it by itself wherever the store has it (a Neo4j with the
    plugin; components with a known node and no property constraints); asking for ``native``
    on a store without it is an error. :attr:`Retrieval.paths` says what ran. Where every
    component suits it, the whole retrieval is one call (``kgdb.simgrag.search``: the
    linker's searches and every component's ``kgdb.simgrag.match`` in one statement and one
    round trip, :func:`_one_call`).

All return the same top-k GSDs: they sum the same candidate distances in the same canonical
order, so every engine returns bit-identical values, those of a brute-force search. Among
subgraphs of exactly equal GSD each engine returns the ones it finds first, so that it can
stop early (a pattern through a hub can have tens of thousands of paths at one GSD): the
``cypher`` engine in the database's reading order, ``optimized`` and ``native`` depth first
in the order of the candidates and of the store's relationships. Every engine is
deterministic (the same store and pattern give the same subgraphs), but two engines may
return different subgraphs of a tied GSD.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from kgdb import vocabulary
from kgdb.cypher import link as link_cy
from kgdb.cypher import pattern as cy
from kgdb.dsl.pattern import pattern_triples
from kgdb.embed import Embedder
from kgdb.engine import GraphStore
from kgdb.errors import KgdbError, StatementError
from kgdb.ir import Candidate, LinkedEdge, LinkedNode, LinkedPattern, Pattern
from kgdb.link import Linker, LinkError, LinkSettings
from kgdb.link.linker import (
    ENTITY_TYPE_LABEL,
    KGDB_LABELS,
    RELATION_TYPE_LABEL,
    collect_candidates,
)
from kgdb.statement import Statement, shown_params, statement_lines

EngineName = Literal["cypher", "optimized", "native"]
"""``cypher``: one generated statement per component (on a Neo4j with kgdb's plugin: one
``kgdb.simgrag.match`` call); ``optimized``: the paper's pruned greedy search, one Cypher step
per expansion; ``native``: the plugin's procedure, required."""
Engine = EngineName
Distinctness = Literal["all", "known"]
"""``all``: isomorphic subgraphs (the paper); ``known``: see :data:`kgdb.cypher.pattern.Distinct`."""
ENGINES: tuple[str, ...] = get_args(EngineName)
DISTINCT: tuple[str, ...] = get_args(Distinctness)

ENTITY_LABEL = vocabulary.ENTITY
PRUNE_SLACKS = (0.0, 0.25, 0.75, 1.75, 3.75)
"""How far above the lower bound the pruned Cypher engine looks, in turn, before giving up
pruning (GSD units: MiniLM L2 distances lie in [0, 2]); a slack below the next achievable
sum of candidate distances is skipped."""
SMALL_ANCHOR = 64
"""A one-edge component anchored on at most this many candidates runs unpruned."""
EXACT_RUNS = 2
"""The pruned Cypher engine's first runs that each take one achievable GSD: every row ties,
so the engine stops reading after the rows still wanted, however many subgraphs tie there
(see :func:`_next_tau`)."""
ANCHOR_GROWTH = 4
"""After them, each run admits at most this many times the anchor candidates of the last."""


class RetrievalError(KgdbError):
    """A pattern cannot be retrieved (bad parameters, no vector index...)."""


@dataclass(frozen=True)
class Subgraph:
    """One retrieved subgraph: which entity each pattern node maps to, the matched triples."""

    gsd: float
    component: int
    node_ids: tuple[str, ...]
    """Matched entity ids, in the order of the component's pattern nodes."""
    node_names: tuple[str, ...]
    pattern_vars: tuple[str, ...]
    triples: tuple[tuple[str, str, str], ...]
    """``(head id, relationship type, tail id)`` per pattern edge, in the stored direction."""

    def name_of(self, entity_id: str) -> str:
        return dict(zip(self.node_ids, self.node_names, strict=True)).get(entity_id, entity_id)

    def verbal_triples(self) -> list[tuple[str, str, str]]:
        """The triples with names, as the paper verbalises evidence (section 4.4)."""
        return [(self.name_of(h), r, self.name_of(t)) for h, r, t in self.triples]

    def value_of(self, var: str) -> str:
        """The name of the entity that pattern node ``var`` maps to."""
        return self.node_names[self.pattern_vars.index(var)]

    def to_json(self) -> dict[str, Any]:
        return {
            "gsd": self.gsd, "component": self.component,
            "nodes": {v: {"id": i, "name": n} for v, i, n in
                      zip(self.pattern_vars, self.node_ids, self.node_names, strict=True)},
            "triples": [list(t) for t in self.verbal_triples()],
        }


@dataclass
class Retrieval:
    """Everything one retrieval did: the subgraphs, the statements that ran, phase timings."""

    pattern: Pattern
    subgraphs: list[Subgraph]
    statements: list[Statement] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    """``embed``, ``vector`` (candidate search), ``match`` (subgraph matching); with
    ``kgdb.simgrag.search`` (one call for both) ``match`` is the server's matching time,
    ``vector`` the rest of the call, and ``vector_in_server`` the searches' time in the
    server."""
    engine: str = "cypher"
    candidates: dict[str, list[Candidate]] = field(default_factory=dict)
    expansions: int = 0
    """Statements the matching ran (optimized engine: expansion steps)."""
    linked: LinkedPattern | None = None
    paths: dict[str, str] = field(default_factory=dict)
    """What ran each phase: ``vector`` (``kgdb.nearestNodes`` or ``cypher``), ``match``
    (``kgdb.simgrag.match``, ``cypher`` or ``optimized``; joined with ``+`` when components
    took different paths)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "paths": self.paths,
            "subgraphs": [s.to_json() for s in self.subgraphs],
            "timings_ms": self.timings_ms,
            "statements": [{"cypher": s.text, "params": shown_params(s.params)}
                           for s in self.statements],
            "candidates": {k: [vars(c) for c in v] for k, v in self.candidates.items()},
        }


@dataclass(frozen=True)
class RetrievalSettings:
    k: int = 3
    k_nodes: int = 16
    k_relations: int = 16
    k_types: int = 16
    engine: str = "cypher"
    prune: bool = True
    label: str = ENTITY_LABEL
    distinct: str = "all"
    """``all``: isomorphism (the paper); ``known``: see :data:`kgdb.cypher.pattern.Distinct`."""

    def link_settings(self) -> LinkSettings:
        """How the one linker finds this retrieval's candidates (checked)."""
        if self.distinct not in DISTINCT:
            raise RetrievalError(f"unknown node distinctness {self.distinct!r}; choose one of "
                                 f"{', '.join(DISTINCT)}")
        settings = LinkSettings("meaning", self.k_nodes, self.k_relations, self.k_types,
                                label=self.label,
                                distinct="known" if self.distinct == "known" else "all")
        try:
            settings.check()
        except LinkError as exc:
            raise RetrievalError(str(exc)) from exc
        return settings

    def check(self) -> None:
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
            raise RetrievalError(f"k must be a positive integer, not {self.k!r}")
        if self.engine not in ENGINES:
            raise RetrievalError(f"unknown retrieval engine {self.engine!r}; choose one of "
                                 f"{', '.join(ENGINES)}")
        self.link_settings()


# ---------------------------------------------------------------------- engines
def canonical_sum(distances: Sequence[float | None]) -> float:
    """Sum the known terms in canonical order (nodes, then edges); the engines' one GSD sum."""
    total: float | None = None
    for d in distances:
        if d is None:
            continue
        total = d if total is None else total + d
    return 0.0 if total is None else total


def _distances(linked: LinkedPattern) -> tuple[list[dict[str, float] | None],
                                                list[dict[str, float] | None]]:
    """Per node and per edge: candidate id -> distance, or None where nothing is known."""
    return ([{c.id: c.distance for c in n.candidates} if n.candidates is not None else None
             for n in linked.nodes],
            [{c.id: c.distance for c in e.types} if e.types is not None else None
             for e in linked.edges])


def _minima(linked: LinkedPattern) -> list[float | None]:
    """The smallest distance of every known item, nodes then edges (equations 9-10)."""
    node_d, edge_d = _distances(linked)
    return [min(d.values(), default=math.inf) if d is not None else None
            for d in [*node_d, *edge_d]]


def _rows_to_subgraphs(rows: list[dict[str, Any]], component: int,
                       linked: LinkedPattern) -> list[Subgraph]:
    # The engine's own GSD comes back printed to 15 significant digits (FalkorDB), so the
    # reported GSD is recomputed from the same candidate distances, in the same order.
    node_d, edge_d = _distances(linked)
    out = []
    for row in rows:
        ids = tuple(str(i) for i in row["ids"])
        triples = tuple((str(h), str(r), str(t)) for h, r, t in row["triples"])
        gsd = canonical_sum([d[i] if d is not None else None
                             for d, i in zip(node_d, ids, strict=True)]
                            + [d[t[1]] if d is not None else None
                               for d, t in zip(edge_d, triples, strict=True)])
        out.append(Subgraph(
            gsd=gsd, component=component, node_ids=ids,
            node_names=tuple(str(n) for n in row["names"]),
            pattern_vars=tuple(n.var for n in linked.nodes), triples=triples))
    return out


def _cypher_engine(store: GraphStore, linked: LinkedPattern, component: int,
                   settings: RetrievalSettings, statements: list[Statement]) -> list[Subgraph]:
    plan = cy.plan_match(linked)

    def run(statement: Statement) -> list[dict[str, Any]]:
        statements.append(statement)
        return store.run(statement).records()

    if not settings.prune:
        return _by_gsd(_rows_to_subgraphs(run(cy.match_topk(
            store.dialect, linked, plan, k=settings.k, label=settings.label)), component, linked))
    # Lower bounds of what is still unmatched after each step (equations 9 and 10).
    minima = _minima(linked)
    n_nodes = len(linked.nodes)
    bound = {plan.anchor}
    edges = [(linked.index(e.ref.source), linked.index(e.ref.target)) for e in linked.edges]
    remaining = []
    for step in range(len(plan.order) + 1):
        if step:
            j = plan.order[step - 1]
            bound |= {*edges[j], n_nodes + j}
        remaining.append(math.fsum(d for i, d in enumerate(minima)
                                   if i not in bound and d is not None))
    lower = canonical_sum(minima)
    # Every complete match has GSD <= upper (each known item at its worst candidate): a tau
    # at or above it cuts nothing, so its rows are complete even when fewer than k.
    node_d, edge_d = _distances(linked)
    upper = canonical_sum([max(d.values(), default=0.0) if d is not None else None
                           for d in [*node_d, *edge_d]])
    anchor = linked.nodes[plan.anchor].candidates
    if len(linked.edges) == 1 and anchor is not None and len(anchor) <= SMALL_ANCHOR:
        # One edge from a few anchors: the whole expansion costs about one pruned run, and
        # the tau loop often needed two to four (docs/design/neo4j-latency.md).
        return _by_gsd(_rows_to_subgraphs(run(cy.match_topk(
            store.dialect, linked, plan, k=settings.k, label=settings.label)), component, linked))
    pruned = cy.match_topk_pruned(store.dialect, linked, plan, k=settings.k,
                                  remaining=remaining, label=settings.label)
    levels = [sorted(set(d.values())) for d in [*node_d, *edge_d] if d]
    anchor_bounds = sorted(c.distance + remaining[0] for c in anchor or ())
    found: list[dict[str, Any]] = []  # every match with a GSD up to ``done``
    done = -1.0
    tau, exact, runs = min(lower, upper), True, 0  # nothing is achievable below ``lower``
    while True:
        # The in-query sum adds the bound last, not in canonical order: a relative 1e-9
        # of slack covers the rounding, and completeness is only claimed up to tau.
        cut = tau + 1e-9 * (1.0 + abs(tau))
        want = settings.k - len(found)
        rows = run(pruned.at(cut, above=done, limit=want, ordered=not exact))
        runs += 1
        if len(rows) >= want or tau >= upper:
            return _by_gsd(_rows_to_subgraphs(found + rows, component, linked))
        # Fewer than wanted: every match with a GSD in (done, cut] has been read.
        found += rows
        done = cut
        tau, exact = _next_tau(tau, done, runs, lower, upper, levels, anchor_bounds)


def _next_tau(tau: float, done: float, runs: int, lower: float, upper: float,
              levels: Sequence[Sequence[float]], anchor_bounds: Sequence[float]
              ) -> tuple[float, bool]:
    """The pruned engine's next tau after ``runs`` runs found every match up to ``done``, and
    whether it admits a single achievable GSD above ``done`` (an unordered run suffices).

    No match has a GSD strictly between two sums of candidate distances, so tau is at least
    the next such sum. The first :data:`EXACT_RUNS` runs take one sum each (a plateau of tied
    paths through a hub costs only the rows still wanted). Then tau jumps as the slack
    schedule says, but admits at most :data:`ANCHOR_GROWTH` times as many anchor candidates
    as the last run (``anchor_bounds``: each anchor candidate's bound, ascending), since a
    run's work grows with the anchors it expands.
    """
    nearest = _next_level(levels, done)
    if nearest is not None and runs < EXACT_RUNS:
        return min(nearest, upper), True
    slacks = [lower + slack for slack in PRUNE_SLACKS if lower + slack > tau]
    target = slacks[0] if slacks else upper
    admitted = bisect.bisect_right(anchor_bounds, done)
    wider = ANCHOR_GROWTH * max(admitted, 1)
    if wider < len(anchor_bounds):
        target = min(target, anchor_bounds[wider - 1])
    if nearest is not None:
        target = max(target, nearest)
    tau = min(target, upper)
    return tau, tau == nearest


def _by_gsd(subgraphs: list[Subgraph]) -> list[Subgraph]:
    """Ascending GSD; subgraphs of equal GSD keep the order the engine gave them."""
    return sorted(subgraphs, key=lambda s: s.gsd)


def _next_level(levels: Sequence[Sequence[float]], above: float,
                budget: int = 256) -> float | None:
    """The smallest sum of one value from each of ``levels`` (ascending lists) that exceeds
    ``above``: every GSD of a complete match is such a sum. None when more than ``budget``
    sums lie at or below ``above`` (the caller's slack schedule is used instead). The budget
    bounds the cost per failed run (docs/design/neo4j-latency.md)."""
    if not levels:
        return None
    start = (0,) * len(levels)
    heap = [(math.fsum(values[0] for values in levels), start)]
    seen = {start}
    for _ in range(budget):
        if not heap:
            return None
        total, index = heapq.heappop(heap)
        if total > above:
            return total
        for i, values in enumerate(levels):
            if index[i] + 1 < len(values):
                step = (*index[:i], index[i] + 1, *index[i + 1:])
                if step not in seen:
                    seen.add(step)
                    heapq.heappush(heap, (math.fsum(v[j] for v, j in zip(levels, step,
                                                                          strict=True)), step))
    return None


@dataclass(order=True)
class _State:
    """A partial or complete mapping, ordered by (lower bound, deepest first, first pushed).

    Within a plateau of equal bounds the search runs depth first (a complete mapping before
    any partial one, a deeper partial one before a shallower), so it stops as soon as k
    mappings are complete however many tie: a complete mapping pops only after every mapping
    with a smaller bound, so its GSD is among the k smallest. Equal (bound, depth) pop in
    the order they were pushed, which follows the candidates' order and the rows' order of
    the expansion statements: deterministic for the same store.
    """

    bound: float
    depth: int
    seq: int
    nodes: tuple[str | None, ...] = field(compare=False)
    names: tuple[str | None, ...] = field(compare=False)
    node_d: tuple[float | None, ...] = field(compare=False)
    edges: tuple[tuple[str, str, str] | None, ...] = field(compare=False)
    edge_d: tuple[float | None, ...] = field(compare=False)
    step: int = field(compare=False)


def _optimized_engine(store: GraphStore, linked: LinkedPattern, component: int,
                      settings: RetrievalSettings, statements: list[Statement]) -> tuple[
                          list[Subgraph], int]:
    plan = cy.plan_match(linked)
    minima = _minima(linked)
    n_nodes, n_edges = len(linked.nodes), len(linked.edges)
    node_min, edge_min = minima[:n_nodes], minima[n_nodes:]
    ends = [(linked.index(e.ref.source), linked.index(e.ref.target)) for e in linked.edges]
    node_cands, edge_cands = _distances(linked)
    counter = itertools.count()
    heap: list[_State] = []
    seen_texts: set[str] = set()
    runs = 0

    def run(statement: Statement) -> list[dict[str, Any]]:
        nonlocal runs
        runs += 1
        if statement.text not in seen_texts:
            seen_texts.add(statement.text)
            statements.append(statement)
        return store.run(statement).records()

    def bound_of(node_d: Sequence[float | None], edge_d: Sequence[float | None]) -> float:
        # Unmapped known items count with their minimum (equations 9-11); canonical order
        # keeps the bound of a complete mapping bit-identical to its GSD.
        nd = [d if d is not None else node_min[i] for i, d in enumerate(node_d)]
        ed = [d if d is not None else edge_min[j] for j, d in enumerate(edge_d)]
        return canonical_sum([*nd, *ed])

    def push(nodes: tuple[str | None, ...], names: tuple[str | None, ...],
             node_d: tuple[float | None, ...], edges_: tuple[tuple[str, str, str] | None, ...],
             edge_d: tuple[float | None, ...], step: int) -> None:
        heapq.heappush(heap, _State(bound_of(node_d, edge_d), -step, next(counter), nodes,
                                    names, node_d, edges_, edge_d, step))

    # Start: the anchor's candidates, best first (the greedy order of lines 4-5).
    anchor = plan.anchor
    empty_edges: tuple[Any, ...] = (None,) * n_edges
    anchor_cands = linked.nodes[anchor].candidates
    assert anchor_cands is not None  # the caller runs components with a known node only
    starts = [(c.id, c.name, c.distance) for c in anchor_cands]
    for ident, name, d in starts:
        push(tuple(ident if i == anchor else None for i in range(n_nodes)),
             tuple(name if i == anchor else None for i in range(n_nodes)),
             tuple(d if i == anchor else None for i in range(n_nodes)),
             empty_edges, empty_edges, 0)

    results: list[Subgraph] = []
    cache: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    while heap and len(results) < settings.k:
        state = heapq.heappop(heap)
        if state.step == len(plan.order):
            results.append(Subgraph(
                gsd=state.bound, component=component,
                node_ids=tuple(str(x) for x in state.nodes),
                node_names=tuple(str(x) for x in state.names),
                pattern_vars=tuple(n.var for n in linked.nodes),
                triples=tuple(e for e in state.edges if e is not None)))
            continue
        j = plan.order[state.step]
        s_, t_ = ends[j]
        u, w = (s_, t_) if state.nodes[s_] is not None else (t_, s_)
        head = state.nodes[u]
        assert head is not None
        target_bound = state.nodes[w] is not None
        cache_key = (head, j, state.nodes[w] if target_bound else None)
        rows = cache.get(cache_key)
        if rows is None:
            rows = run(cy.expand_edge(store.dialect, linked, j, u, head,
                                      target_id=state.nodes[w], label=settings.label))
            cache[cache_key] = rows
        used = {e for e in state.edges if e is not None}
        taken = {x: i for i, x in enumerate(state.nodes) if x is not None and
                 linked.must_differ(i, w)}
        # Greedy order (line 13: smaller added distance first) comes from the heap, which
        # orders every new partial mapping by its bound.
        for row in rows:
            triple = (str(row["src"]), str(row["type"]), str(row["dst"]))
            if triple in used:
                continue
            tid = str(row["id"])
            if not target_bound and tid in taken:
                continue
            new_nodes = list(state.nodes)
            new_names = list(state.names)
            new_node_d = list(state.node_d)
            if not target_bound:
                new_nodes[w], new_names[w] = tid, str(row["name"])
                cands = node_cands[w]
                new_node_d[w] = cands[tid] if cands is not None else None
            edge_list = list(state.edges)
            edge_d = list(state.edge_d)
            edge_list[j] = triple
            ecands = edge_cands[j]
            edge_d[j] = ecands[triple[1]] if ecands is not None else None
            push(tuple(new_nodes), tuple(new_names), tuple(new_node_d), tuple(edge_list),
                 tuple(edge_d), state.step + 1)
    return results, runs


def _native_engine(store: GraphStore, linked: LinkedPattern, component: int,
                   settings: RetrievalSettings,
                   statements: list[Statement]) -> list[Subgraph] | None:
    """The component matched by the database's native procedure, or None where it has none
    (or the component does not suit it: see :func:`kgdb.cypher.pattern.match_native`)."""
    statement = cy.match_native(store.dialect, linked, cy.plan_match(linked), k=settings.k,
                                label=settings.label)
    if statement is None:
        return None
    statements.append(statement)
    return _rows_to_subgraphs(store.run(statement).records(), component, linked)


# ---------------------------------------------------------------------- entry points
def search(store: GraphStore, embedder: Embedder, pattern: Pattern, *, k: int = 3,
           k_nodes: int = 16, k_relations: int = 16, k_types: int = 16,
           engine: str = "cypher", prune: bool = True, label: str = ENTITY_LABEL,
           distinct: str = "all") -> Retrieval:
    """Retrieve the top-``k`` subgraphs of every connected component of ``pattern``.

    ``k_nodes``, ``k_relations``, ``k_types``: candidates per known node, per known relation,
    per type of a typed unknown node. ``distinct``: ``all`` (isomorphic subgraphs, the
    paper) or ``known`` (unknown nodes that are not neighbours may coincide).
    """
    settings = RetrievalSettings(k, k_nodes, k_relations, k_types, engine, prune, label,
                                 distinct)
    settings.check()
    if not pattern.nodes:
        raise RetrievalError("the pattern has no nodes")
    for part in pattern.components():
        if part.edges and not any(n.known for n in part.nodes) and not any(
                e.known for e in part.edges):
            raise RetrievalError(
                "a part of the pattern names no entity and no relation ("
                + ", ".join(f"({h!r}, {r!r}, {t!r})" for h, r, t in pattern_triples(part))
                + "): every subgraph of that shape would match at distance 0")
    if settings.engine == "native" and store.dialect.SIMGRAG_MATCH is None:
        raise RetrievalError(f"the native engine needs kgdb's plugin on a Neo4j server; "
                             f"{store.address} has none (kgdb neo4j plugin prints the jar)")
    linker = Linker(store, embedder, settings.link_settings())
    one_call = _one_call(store, linker, pattern, settings)
    if one_call is not None:
        return one_call
    try:
        linked = linker.link(pattern)
    except LinkError as exc:
        raise RetrievalError(str(exc)) from exc
    report = linker.report
    statements: list[Statement] = list(report.statements)
    timings = {**report.timings_ms, "match": 0.0}
    t0 = time.perf_counter()
    subgraphs: list[Subgraph] = []
    expansions = 0
    match_paths: list[str] = []
    for c, component in enumerate(linked.components()):
        if not component.edges or component.unmatchable:
            continue  # a lone node has no triples to show; its candidates are reported
        native = None
        if settings.engine in ("cypher", "native"):
            native = _native_engine(store, component, c, settings, statements)
        if native is not None:
            subgraphs += native
            expansions += 1
            match_paths.append(str(store.dialect.SIMGRAG_MATCH))
        elif settings.engine == "optimized" and any(n.candidates is not None
                                                    for n in component.nodes):
            found_subgraphs, runs = _optimized_engine(store, component, c, settings,
                                                      statements)
            subgraphs += found_subgraphs
            expansions += runs
            match_paths.append("optimized")
        else:
            subgraphs += _cypher_engine(store, component, c, settings, statements)
            expansions += 1
            match_paths.append("cypher")
    timings["match"] = (time.perf_counter() - t0) * 1000
    paths = {"vector": _vector_path(store, linker),
             "match": "+".join(dict.fromkeys(match_paths)) or "none"}
    return Retrieval(pattern, subgraphs, statements, timings, settings.engine,
                     dict(report.candidates), expansions, linked, paths)


def _vector_path(store: GraphStore, linker: Linker) -> str:
    """How the candidates were found: ``kgdb.nearestNodes`` (Neo4j with kgdb's plugin),
    ``cypher`` (the vector indexes), ``scan`` (FalkorDB, every label searched is small enough
    to scan exactly) or ``cypher+scan`` (some are)."""
    if store.dialect.NATIVE:
        return "kgdb.nearestNodes"
    searched = (linker.settings.label, RELATION_TYPE_LABEL, ENTITY_TYPE_LABEL)
    scanned = sum(store.dialect.exact_search(label) for label in searched)
    return "scan" if scanned == len(searched) else "cypher+scan" if scanned else "cypher"


def _one_call(store: GraphStore, linker: Linker, pattern: Pattern,
              settings: RetrievalSettings) -> Retrieval | None:
    """The whole retrieval as one call of the dialect's procedure (``kgdb.simgrag.search``:
    the linker's searches and every component's ``kgdb.simgrag.match`` in one statement and
    one round trip), or None where the dialect has none, the engine is ``optimized``, or a
    component does not suit the native matching (:func:`kgdb.cypher.pattern.native_ready`).
    The same candidates, links and subgraphs as the linker's statement followed by one
    ``kgdb.simgrag.match`` per component."""
    dialect = store.dialect
    if dialect.SIMGRAG_SEARCH is None or settings.engine == "optimized":
        return None
    # The components' shape before linking: every name a candidate list, every phrase a type
    # list (their counts only pick the anchor, which any named node may be).
    shape = LinkedPattern(
        pattern, tuple(LinkedNode(n, () if n.name is not None else None) for n in pattern.nodes),
        tuple(LinkedEdge(e, () if e.phrases else None) for e in pattern.edges),
        "known" if settings.distinct == "known" else "all")
    parts = [(c, part, cy.plan_match(part)) for c, part in enumerate(shape.components())
             if part.edges]
    if not all(cy.native_ready(part, plan) for _, part, plan in parts):
        return None
    try:
        searches = linker.meaning_searches([pattern])
    except LinkError as exc:
        raise RetrievalError(str(exc)) from exc
    names, phrases, types = (texts for _, _, texts in searches)
    components = []
    for _, part, plan in parts:
        request = cy.native_component(part, plan, settings.label)
        for node, linked_node in zip(request["nodes"], part.nodes, strict=True):
            ref = linked_node.ref
            if ref.name is not None:
                node["candidates"] = {"search": 0, "query": names.index(ref.name)}
            elif ref.types:
                node["labels"] = {"search": 2, "queries": [types.index(t) for t in ref.types]}
        for edge, linked_edge in zip(request["edges"], part.edges, strict=True):
            if linked_edge.ref.phrases:
                edge["types"] = {"search": 1, "queries": [phrases.index(ph)
                                                          for ph in linked_edge.ref.phrases]}
        components.append(request)
    statement = link_cy.simgrag_search(
        dialect, [s for _, s, _ in searches], components, k=settings.k,
        type_search=2 if types else None, require=vocabulary.ENTITY_TYPE,
        ignore=sorted(KGDB_LABELS))
    assert statement is not None
    t0 = time.perf_counter()
    try:
        row = store.run(statement).records()[0]
    except StatementError as exc:
        labels = ", ".join(f":{s.label}(embedding)" for _, s, texts in searches if texts)
        raise RetrievalError(
            f"cannot search the vector indexes of {labels} on {store.address} ({exc}); load a "
            "graph first (kgdb schema apply, kgdb load triples)") from exc
    total = (time.perf_counter() - t0) * 1000
    found, _ = collect_candidates(row["candidates"], searches)
    if not row["types_searched"]:
        found = {key: cands for key, cands in found.items() if key[0] != "type"}
    linked = linker.linked_by_meaning([pattern], found)[0]
    by_component: dict[int, list[dict[str, Any]]] = {}
    for match in row["subgraphs"]:
        by_component.setdefault(int(match["component"]), []).append(match)
    linked_parts = linked.components()
    subgraphs: list[Subgraph] = []
    for i, (c, _, _) in enumerate(parts):
        subgraphs += _rows_to_subgraphs(by_component.get(i, []), c, linked_parts[c])
    # One round trip: matching is the server's time for it, vector search the rest of the call.
    match_ms = float(row["match_ms"])
    timings = {**linker.report.timings_ms, "vector": total - match_ms, "match": match_ms,
               "vector_in_server": float(row["vector_ms"])}
    path = str(dialect.SIMGRAG_SEARCH)
    return Retrieval(pattern, subgraphs, [statement], timings, settings.engine,
                     dict(linker.report.candidates), len(parts), linked,
                     {"vector": path, "match": path})


def describe(result: Retrieval, *, cypher: bool = True, max_params: int = 2000) -> list[str]:
    """Lines that show a retrieval: each subgraph with its GSD, the Cypher that ran (with its
    parameters, re-runnable as is), and the time per phase."""
    lines = [] if result.subgraphs else ["No subgraph matches the pattern."]
    for i, sub in enumerate(result.subgraphs, start=1):
        lines.append(f"graph [{i}]  GSD {sub.gsd:.4f}")
        lines += [f"    ({h!r}, {r!r}, {t!r})" for h, r, t in sub.verbal_triples()]
    if cypher:
        lines += statement_lines(result.statements, max_params=max_params)
    t = result.timings_ms
    lines.append(f"time: embed {t.get('embed', 0):.1f} ms, vector search "
                 f"{t.get('vector', 0):.1f} ms, subgraph matching {t.get('match', 0):.1f} ms "
                 f"({result.engine} engine; matched by {result.paths.get('match', '?')}, "
                 f"vector search by {result.paths.get('vector', '?')})")
    return lines
