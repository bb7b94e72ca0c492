"""SimGRAG pattern-to-subgraph retrieval (paper sections 4.2-4.3 and 5) inside the graph database.

Flow for one pattern: embed the pattern's texts; find candidates through the database's
vector indexes (top-k(n) entities per known node, top-k(r) relation types per known
relation, the entities of the top-k(t) entity types per typed unknown node when the graph has
an entity-type catalog); then find the top-k subgraphs isomorphic to each connected
component of the pattern, by Graph Semantic Distance (equation 3), with one of two engines:

``cypher``
    One generated statement per component (:func:`kgdb.cypher.simgrag.match_topk`): the
    paper's top-k retrieval (section 5.1) as a set-oriented query, anchored on the node with
    the fewest candidates and expanded in DFS order. With ``prune`` (the default) it also
    applies the paper's lower bound (equation 11) set-wise: rows whose partial GSD plus the
    remaining minimum distances exceed a bound tau are cut, and tau grows until k subgraphs
    with GSD <= tau are found (then no better one can have been cut).

``optimized``
    The paper's Algorithm 1 with pruning and greedy order (section 5.2), driven from Python:
    a best-first search over partial mappings ordered by their lower bound, where each
    expansion is one small Cypher statement (:func:`kgdb.cypher.simgrag.expand_edge`) run in
    the database. Partial mappings whose bound exceeds the k-th best GSD are never expanded.
    Python drives because the search order depends on every result so far, which one
    Cypher statement cannot express on FalkorDB (no procedures, no loops). A component
    without any known node has no candidates to start from (the paper's start set would
    be every entity, one expansion each); it runs on the ``cypher`` engine.

Both return the same top-k GSDs; ties are broken the same way (matched node ids in node order,
then each edge's type and start node id), and GSDs are summed in the same canonical order
from the same candidate distances, so both engines return bit-identical values.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kgdb.cypher import simgrag as cy
from kgdb.dsl.pattern import pattern_triples
from kgdb.embed import Embedder
from kgdb.engine import GraphStore
from kgdb.errors import KgdbError, StatementError
from kgdb.ir import Pattern
from kgdb.statement import Statement

Engine = Literal["cypher", "optimized"]
ENGINES: tuple[str, ...] = ("cypher", "optimized")
DISTINCT: tuple[str, ...] = ("all", "known")

ENTITY_LABEL = "Entity"
PRUNE_SLACKS = (0.0, 0.25, 0.75, 1.75, 3.75)
"""How far above the lower bound the pruned Cypher engine looks, in turn, before giving up
pruning (GSD units: MiniLM L2 distances lie in [0, 2])."""
RELATION_TYPE_LABEL = "RelationType"
ENTITY_TYPE_LABEL = "EntityType"
KGDB_LABELS = frozenset({"Entity", "Event", "Concept", "Chunk", "Document", "EntityType",
                         "RelationType", "KgdbMeta"})
"""kgdb's own structural labels: a graph using no other label has no typed entities, so
typed unknowns skip the entity-type search."""


class RetrievalError(KgdbError):
    """A pattern cannot be retrieved (bad parameters, no vector index...)."""


@dataclass(frozen=True)
class Candidate:
    """A candidate entity, relation type or entity type with its exact L2 distance."""

    id: str
    name: str
    distance: float


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
    """``embed``, ``vector`` (candidate search), ``match`` (subgraph matching)."""
    engine: str = "cypher"
    candidates: dict[str, list[Candidate]] = field(default_factory=dict)
    expansions: int = 0
    """Statements the matching ran (optimized engine: expansion steps)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "subgraphs": [s.to_json() for s in self.subgraphs],
            "timings_ms": self.timings_ms,
            "statements": [{"cypher": s.text, "params": s.params} for s in self.statements],
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
    """``all``: isomorphism (the paper); ``known``: see :data:`kgdb.cypher.simgrag.Distinct`."""

    def check(self) -> None:
        for name in ("k", "k_nodes", "k_relations", "k_types"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise RetrievalError(f"{name} must be a positive integer, not {value!r}")
        if self.distinct not in DISTINCT:
            raise RetrievalError(f"unknown node distinctness {self.distinct!r}; choose one of "
                                 f"{', '.join(DISTINCT)}")
        if self.engine not in ENGINES:
            raise RetrievalError(f"unknown retrieval engine {self.engine!r}; choose one of "
                                 f"{', '.join(ENGINES)}")


# ---------------------------------------------------------------------- candidates
@dataclass
class _ComponentInput:
    pattern: Pattern
    nodes: list[list[Candidate] | None]
    """Per node index: candidates, or None for an unknown node."""
    labels: list[list[str] | None]
    """Per node index: entity-type labels for a typed unknown node (when the graph has types)."""
    edges: list[list[Candidate] | None]
    """Per edge index: candidate relation types (``id`` = type name), or None if unknown."""


_BRANCHES = {"node": ("id", "name"), "relation": ("name", "name"), "type": ("name", "name")}


def _gather_candidates(store: GraphStore, embedder: Embedder, pattern: Pattern,
                       settings: RetrievalSettings, timings: dict[str, float],
                       statements: list[Statement],
                       found: dict[str, list[Candidate]]) -> None:
    texts = {
        "node": sorted({n.name for n in pattern.nodes if n.name is not None}),
        "relation": sorted({p for e in pattern.edges for p in e.phrases}),
        "type": sorted({t for n in pattern.nodes if n.name is None for t in n.types}),
    }
    labels = {"node": settings.label, "relation": RELATION_TYPE_LABEL,
              "type": ENTITY_TYPE_LABEL}
    ks = {"node": settings.k_nodes, "relation": settings.k_relations, "type": settings.k_types}
    t0 = time.perf_counter()
    flat = [t for kind in ("node", "relation", "type") for t in texts[kind]]
    vectors = embedder.embed(flat) if flat else None
    timings["embed"] = (time.perf_counter() - t0) * 1000
    offsets = {"node": 0, "relation": len(texts["node"]),
               "type": len(texts["node"]) + len(texts["relation"])}
    t0 = time.perf_counter()
    labels_in_use: set[str] = set()

    def run(kinds: list[str], with_labels: bool) -> None:
        kinds = [kind for kind in kinds if texts[kind]]
        if not kinds and not with_labels:
            return
        branches = [(kind, labels[kind], *_BRANCHES[kind]) for kind in kinds]
        params: dict[str, Any] = {}
        shown: dict[str, Any] = {}
        owner: dict[int, tuple[str, int]] = {}
        for kind in kinds:
            assert vectors is not None
            params[f"{kind}_k"] = shown[f"{kind}_k"] = ks[kind]
            # keys are unique across kinds: the flat index of the text
            params[f"{kind}_queries"] = [{"key": offsets[kind] + i,
                                          "vector": vectors[offsets[kind] + i]}
                                         for i in range(len(texts[kind]))]
            shown[f"{kind}_queries"] = [{"key": offsets[kind] + i, "text": t}
                                        for i, t in enumerate(texts[kind])]
            owner.update({offsets[kind] + i: (kind, i) for i in range(len(texts[kind]))})
        statement = cy.search_candidates(store.dialect, branches, with_labels=with_labels)
        try:
            rows = store.run(statement.with_params(**params)).records()
        except StatementError as exc:
            searched = ", ".join(f":{labels[kind]}(embedding)" for kind in kinds)
            raise RetrievalError(
                f"cannot search the vector indexes of {searched} on {store.address} ({exc}); "
                "load a graph first (kgdb schema apply, kgdb load triples)") from None
        # The vectors are left out of what is shown (the texts say what was embedded).
        statements.append(Statement(statement.text, shown))
        per: dict[tuple[str, int], dict[str, Candidate]] = {}
        for row in rows:
            if int(row["key"]) < 0:
                labels_in_use.update(str(label) for label in row["id"])
                continue
            ident = str(row["id"])
            kind, i = owner[int(row["key"])]
            if kind == "type" and ident not in labels_in_use:
                continue  # a catalogued type no entity carries
            per.setdefault((kind, i), {})[ident] = Candidate(ident, str(row["name"]),
                                                             float(row["distance"]))
        for kind in kinds:
            for i, text in enumerate(texts[kind]):
                # Stale index entries can repeat a node (FalkorDB 4.16): one per id.
                found[f"{kind}:{text}"] = sorted(per.get((kind, i), {}).values(),
                                                 key=lambda c: (c.distance, c.id))[:ks[kind]]

    # Types filter candidates only where the graph has a type catalog *and* entities carry
    # type labels (paper, appendix C.1); otherwise a typed unknown matches anything.
    run(["node", "relation"], with_labels=bool(texts["type"]))
    if texts["type"] and ENTITY_TYPE_LABEL in labels_in_use and labels_in_use - KGDB_LABELS:
        run(["type"], with_labels=False)
    timings["vector"] = (time.perf_counter() - t0) * 1000


def _component_input(component: Pattern, found: dict[str, list[Candidate]]) -> _ComponentInput:
    nodes: list[list[Candidate] | None] = []
    labels: list[list[str] | None] = []
    for n in component.nodes:
        if n.name is not None:
            nodes.append(found.get(f"node:{n.name}", []))
            labels.append(None)
        else:
            nodes.append(None)
            names = sorted({c.name for t in n.types for c in found.get(f"type:{t}", [])})
            labels.append(names or None)
    edges: list[list[Candidate] | None] = []
    for e in component.edges:
        if not e.phrases:
            edges.append(None)
            continue
        best: dict[str, Candidate] = {}
        for phrase in e.phrases:  # alternatives: a type matches at its best phrase's distance
            for c in found.get(f"relation:{phrase}", []):
                if c.id not in best or c.distance < best[c.id].distance:
                    best[c.id] = c
        edges.append(sorted(best.values(), key=lambda c: (c.distance, c.id)))
    return _ComponentInput(component, nodes, labels, edges)


# ---------------------------------------------------------------------- planning
def plan_component(inp: _ComponentInput) -> cy.MatchPlan:
    """Anchor on the node with the fewest candidates (Algorithm 1, line 1); DFS edge order."""
    pattern = inp.pattern
    index = {n.var: i for i, n in enumerate(pattern.nodes)}
    slots = []
    for i in range(len(pattern.nodes)):
        mode: cy.NodeMode = ("ids" if inp.nodes[i] is not None
                             else "labels" if inp.labels[i] else "any")
        slots.append(cy.NodeSlot(i, mode))
    edge_slots = tuple(
        cy.EdgeSlot(j, index[e.source], index[e.target],
                    "types" if inp.edges[j] is not None else "any")
        for j, e in enumerate(pattern.edges))

    def cost(i: int) -> tuple[int, float, int]:
        cands = inp.nodes[i]
        if cands is not None:
            return (0, len(cands), i)
        return (1 if inp.labels[i] else 2, math.inf, i)

    anchor = min(range(len(pattern.nodes)), key=cost)
    order: list[int] = []
    visited = {anchor}

    def dfs(i: int) -> None:
        for slot in edge_slots:
            if slot.index in order or i not in (slot.source, slot.target):
                continue
            order.append(slot.index)
            other = slot.target if slot.source == i else slot.source
            if other not in visited:
                visited.add(other)
                dfs(other)

    dfs(anchor)
    return cy.MatchPlan(tuple(slots), edge_slots, anchor, tuple(order))


def _known_minima(inp: _ComponentInput) -> tuple[list[float | None], list[float | None]]:
    node_min = [min((c.distance for c in cands), default=math.inf) if cands is not None else None
                for cands in inp.nodes]
    edge_min = [min((c.distance for c in cands), default=math.inf) if cands is not None else None
                for cands in inp.edges]
    return node_min, edge_min


def canonical_sum(node_d: Sequence[float | None], edge_d: Sequence[float | None]) -> float:
    """Sum the known terms in canonical order (nodes, then edges); the engines' one GSD sum."""
    total: float | None = None
    for d in [*node_d, *edge_d]:
        if d is None:
            continue
        total = d if total is None else total + d
    return 0.0 if total is None else total


# ---------------------------------------------------------------------- engines
def _match_params(inp: _ComponentInput, k: int) -> dict[str, Any]:
    params: dict[str, Any] = {"k": k}
    for i, cands in enumerate(inp.nodes):
        if cands is not None:
            params[f"n{i}"] = [{"id": c.id, "d": c.distance} for c in cands]
            params[f"n{i}_ids"] = [c.id for c in cands]
        elif inp.labels[i]:
            params[f"n{i}_labels"] = inp.labels[i]
    for j, cands in enumerate(inp.edges):
        if cands is not None:
            params[f"r{j}"] = [{"type": c.id, "d": c.distance} for c in cands]
            params[f"r{j}_types"] = [c.id for c in cands]
    return params


def _rows_to_subgraphs(rows: list[dict[str, Any]], component: int,
                       inp: _ComponentInput) -> list[Subgraph]:
    # The engine's own GSD comes back printed to 15 significant digits (FalkorDB), so the
    # reported GSD is recomputed from the same candidate distances, in the same order.
    node_d = [({c.id: c.distance for c in cands} if cands is not None else None)
              for cands in inp.nodes]
    edge_d = [({c.id: c.distance for c in cands} if cands is not None else None)
              for cands in inp.edges]
    out = []
    for row in rows:
        ids = tuple(str(i) for i in row["ids"])
        triples = tuple((str(h), str(r), str(t)) for h, r, t in row["triples"])
        gsd = canonical_sum([d[i] if d is not None else None for d, i in zip(node_d, ids,
                                                                              strict=True)],
                            [d[t[1]] if d is not None else None for d, t in zip(edge_d, triples,
                                                                                strict=True)])
        out.append(Subgraph(
            gsd=gsd, component=component, node_ids=ids,
            node_names=tuple(str(n) for n in row["names"]),
            pattern_vars=tuple(n.var for n in inp.pattern.nodes), triples=triples))
    return out


def _unmatchable(inp: _ComponentInput) -> bool:
    return any(c is not None and not c for c in inp.nodes) or any(
        c is not None and not c for c in inp.edges)


def _cypher_engine(store: GraphStore, inp: _ComponentInput, component: int,
                   settings: RetrievalSettings, statements: list[Statement]) -> list[Subgraph]:
    plan = plan_component(inp)
    params = _match_params(inp, settings.k)
    distinct: cy.Distinct = "known" if settings.distinct == "known" else "all"
    if not settings.prune:
        statement = cy.match_topk(store.dialect, plan, label=settings.label,
                                  distinct=distinct).with_params(**params)
        statements.append(statement)
        return _rows_to_subgraphs(store.run(statement).records(), component, inp)
    # Lower bounds of what is still unmatched after each step (equation 9 + 10).
    node_min, edge_min = _known_minima(inp)
    bound_nodes = {plan.anchor}
    bound_edges: set[int] = set()
    edges = {s.index: s for s in plan.edges}
    for step in range(len(plan.order) + 1):
        if step:
            j = plan.order[step - 1]
            bound_edges.add(j)
            bound_nodes |= {edges[j].source, edges[j].target}
        rest = [d for i, d in enumerate(node_min) if i not in bound_nodes and d is not None]
        rest += [d for j, d in enumerate(edge_min) if j not in bound_edges and d is not None]
        params[f"lb{step}"] = math.fsum(rest)
    lower = canonical_sum(node_min, edge_min)
    # Every complete match has GSD <= upper (each known item at its worst candidate): a tau
    # at or above it cuts nothing, so its rows are complete even when fewer than k.
    upper = canonical_sum(
        [max((c.distance for c in cands), default=0.0) if cands is not None else None
         for cands in inp.nodes],
        [max((c.distance for c in cands), default=0.0) if cands is not None else None
         for cands in inp.edges])
    statement = cy.match_topk(store.dialect, plan, label=settings.label, prune=True,
                             distinct=distinct)
    for slack in PRUNE_SLACKS:
        tau = min(lower + slack, upper)
        # The in-query sum adds the bound last, not in canonical order: a relative 1e-9
        # of slack covers the rounding, and completeness is only claimed up to tau.
        run = statement.with_params(**params, tau=tau + 1e-9 * (1.0 + abs(tau)))
        rows = store.run(run).records()
        statements.append(run)
        if tau >= upper or (len(rows) >= settings.k
                            and float(rows[settings.k - 1]["gsd"]) <= tau):
            return _rows_to_subgraphs(rows, component, inp)
    final = cy.match_topk(store.dialect, plan, label=settings.label,
                          distinct=distinct).with_params(
        **{k: v for k, v in params.items() if not k.startswith("lb")})
    statements.append(final)
    return _rows_to_subgraphs(store.run(final).records(), component, inp)


@dataclass(order=True)
class _State:
    """A partial or complete mapping, ordered by (lower bound, tie-break key, partial first).

    A complete mapping's key is its tie-break key; a partial one's is the prefix of that key
    its completions share (assigned node ids up to the first unassigned one), which sorts
    at or before every completion's key. So a complete mapping pops only after every partial
    mapping that could still complete to a smaller (GSD, key), and within a plateau of equal
    bounds the search runs depth-first in key order instead of expanding the whole plateau.
    """

    bound: float
    key: tuple[str, ...]
    complete: int
    seq: int
    nodes: tuple[str | None, ...] = field(compare=False)
    names: tuple[str | None, ...] = field(compare=False)
    node_d: tuple[float | None, ...] = field(compare=False)
    edges: tuple[tuple[str, str, str] | None, ...] = field(compare=False)
    edge_d: tuple[float | None, ...] = field(compare=False)
    step: int = field(compare=False)


def _optimized_engine(store: GraphStore, inp: _ComponentInput, component: int,
                      settings: RetrievalSettings, statements: list[Statement]) -> tuple[
                          list[Subgraph], int]:
    plan = plan_component(inp)
    dialect = store.dialect
    distinct: cy.Distinct = "known" if settings.distinct == "known" else "all"
    node_min, edge_min = _known_minima(inp)
    n_nodes, n_edges = len(inp.nodes), len(inp.edges)
    edges = {s.index: s for s in plan.edges}
    node_cands = [({c.id: c.distance for c in cands} if cands is not None else None)
                  for cands in inp.nodes]
    edge_cands = [({c.id: c.distance for c in cands} if cands is not None else None)
                  for cands in inp.edges]
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
        return canonical_sum(nd, ed)

    def push(nodes: tuple[str | None, ...], names: tuple[str | None, ...],
             node_d: tuple[float | None, ...], edges_: tuple[tuple[str, str, str] | None, ...],
             edge_d: tuple[float | None, ...], step: int) -> None:
        complete = step == len(plan.order)
        key: list[str] = []
        for x in nodes:
            if x is None:
                break
            key.append(x)
        else:
            for e in edges_:
                if e is None:
                    break
                key += [e[1], e[0]]
        heapq.heappush(heap, _State(bound_of(node_d, edge_d), tuple(key), int(complete),
                                    next(counter), nodes, names, node_d, edges_, edge_d, step))

    # Start: the anchor's candidates, best first (the greedy order of lines 4-5).
    anchor = plan.anchor
    empty_edges: tuple[Any, ...] = (None,) * n_edges
    anchor_cands = inp.nodes[anchor]
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
        if state.complete:
            results.append(Subgraph(
                gsd=state.bound, component=component,
                node_ids=tuple(str(x) for x in state.nodes),
                node_names=tuple(str(x) for x in state.names),
                pattern_vars=tuple(n.var for n in inp.pattern.nodes),
                triples=tuple(e for e in state.edges if e is not None)))
            continue
        j = plan.order[state.step]
        slot = edges[j]
        u, w = ((slot.source, slot.target) if state.nodes[slot.source] is not None
                else (slot.target, slot.source))
        head = state.nodes[u]
        target_bound = state.nodes[w] is not None
        target_mode: Any = "bound" if target_bound else _node_mode(inp, w)
        cache_key = (head, j, state.nodes[w] if target_bound else None)
        rows = cache.get(cache_key)
        if rows is None:
            statement = cy.expand_edge(dialect, target=target_mode, edge=slot.mode,
                                       label=settings.label)
            params: dict[str, Any] = {"head": head}
            if slot.mode == "types":
                params["types"] = [c.id for c in inp.edges[j] or []]
            if target_mode == "ids":
                params["ids"] = [c.id for c in inp.nodes[w] or []]
            elif target_mode == "labels":
                params["labels"] = inp.labels[w]
            elif target_mode == "bound":
                params["target"] = state.nodes[w]
            rows = run(statement.with_params(**params))
            cache[cache_key] = rows
        used = {e for e in state.edges if e is not None}
        taken = {x: i for i, x in enumerate(state.nodes) if x is not None and
                 cy.must_differ(plan, i, w, distinct)}
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


def _node_mode(inp: _ComponentInput, i: int) -> cy.NodeMode:
    if inp.nodes[i] is not None:
        return "ids"
    return "labels" if inp.labels[i] else "any"


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
    timings: dict[str, float] = {"embed": 0.0, "vector": 0.0, "match": 0.0}
    statements: list[Statement] = []
    found: dict[str, list[Candidate]] = {}
    _gather_candidates(store, embedder, pattern, settings, timings, statements, found)
    t0 = time.perf_counter()
    subgraphs: list[Subgraph] = []
    expansions = 0
    for c, component in enumerate(pattern.components()):
        if not component.edges:
            continue  # a lone node has no triples to show; its candidates are reported
        if not any(n.known for n in component.nodes) and not any(
                e.known for e in component.edges):
            raise RetrievalError(
                "a part of the pattern names no entity and no relation ("
                + ", ".join(f"({h!r}, {r!r}, {t!r})" for h, r, t in pattern_triples(component))
                + "): every subgraph of that shape would match at distance 0")
        inp = _component_input(component, found)
        if _unmatchable(inp):
            continue
        if settings.engine == "optimized" and any(c is not None for c in inp.nodes):
            found_subgraphs, runs = _optimized_engine(store, inp, c, settings, statements)
            subgraphs += found_subgraphs
            expansions += runs
        else:
            subgraphs += _cypher_engine(store, inp, c, settings, statements)
            expansions += 1
    timings["match"] = (time.perf_counter() - t0) * 1000
    return Retrieval(pattern, subgraphs, statements, timings, settings.engine, found, expansions)


def describe(result: Retrieval, *, cypher: bool = True, max_params: int = 2000) -> list[str]:
    """Lines that show a retrieval: each subgraph with its GSD, the Cypher that ran (with its
    parameters, re-runnable as is), and the time per phase."""
    lines = [] if result.subgraphs else ["No subgraph matches the pattern."]
    for i, sub in enumerate(result.subgraphs, start=1):
        lines.append(f"graph [{i}]  GSD {sub.gsd:.4f}")
        lines += [f"    ({h!r}, {r!r}, {t!r})" for h, r, t in sub.verbal_triples()]
    if cypher:
        lines += ["", "Cypher that ran:"]
        for statement in result.statements:
            params = json.dumps(statement.params, default=_plain, ensure_ascii=False)
            lines += [statement.text, "params: " + params[:max_params], ""]
    t = result.timings_ms
    lines.append(f"time: embed {t.get('embed', 0):.1f} ms, vector search "
                 f"{t.get('vector', 0):.1f} ms, subgraph matching {t.get('match', 0):.1f} ms "
                 f"({result.engine} engine)")
    return lines


def _plain(value: Any) -> Any:
    return value.tolist() if hasattr(value, "tolist") else str(value)


def retrieve(store: GraphStore, embedder: Embedder, pattern: Pattern, *, k: int = 3,
             **options: Any) -> list[Subgraph]:
    """The top-``k`` subgraphs for ``pattern`` (see :func:`search` for the options)."""
    return search(store, embedder, pattern, k=k, **options).subgraphs
