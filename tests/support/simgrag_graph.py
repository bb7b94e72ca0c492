"""Small knowledge graphs in kgdb's shape for SimGRAG tests, and a brute-force GSD reference.

Shape (as kgdb's loaders write it): ``(:Entity {id, name, embedding})`` with a vector index on
``Entity.embedding``, facts as relationships typed by predicate, and a catalog
``(:RelationType {name, text, embedding})`` (and optionally ``(:EntityType {name,
embedding})`` with entities carrying the type as a label).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from kgdb.ir import Pattern


@dataclass
class SmallGraph:
    entities: dict[str, str]
    """id -> name"""
    triples: list[tuple[str, str, str]]
    """(head id, predicate, tail id)"""
    relation_texts: dict[str, str]
    entity_types: dict[str, list[str]] = field(default_factory=dict)
    """entity id -> type labels"""
    type_names: list[str] = field(default_factory=list)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    """entity id -> stored embedding (float32)"""
    rel_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    type_vectors: dict[str, np.ndarray] = field(default_factory=dict)


def build_graph(store, embedder, graph: SmallGraph) -> SmallGraph:
    d = store.dialect
    dim = embedder.dimension
    for label in ("Entity", "RelationType", "EntityType"):
        for op in d.create_vector_index(label, "embedding", dim):
            store.execute(op)
    for op in d.create_range_index("Entity", "id"):
        store.execute(op)
    ids = sorted(graph.entities)
    vecs = embedder.embed([graph.entities[i] for i in ids])
    graph.vectors = {i: vecs[n] for n, i in enumerate(ids)}
    rows = [{"id": i, "name": graph.entities[i], "e": vecs[n]} for n, i in enumerate(ids)]
    store.run(f"UNWIND $rows AS r CREATE (n:Entity {{id: r.id, name: r.name, "
              f"embedding: {d.vector_value('r.e')}}})", {"rows": rows}, write=True)
    for ident, types in graph.entity_types.items():
        for t in types:
            store.run(f"MATCH (n:Entity {{id: $id}}) SET n{d.labels([t])}", {"id": ident},
                      write=True)
    preds = sorted(graph.relation_texts)
    if preds:
        rv = embedder.embed([graph.relation_texts[p] for p in preds])
        graph.rel_vectors = {p: rv[n] for n, p in enumerate(preds)}
        store.run(f"UNWIND $rows AS r CREATE (:RelationType {{name: r.name, text: r.text, "
                  f"embedding: {d.vector_value('r.e')}}})",
                  {"rows": [{"name": p, "text": graph.relation_texts[p], "e": rv[n]}
                            for n, p in enumerate(preds)]}, write=True)
    if graph.type_names:
        tv = embedder.embed(graph.type_names)
        graph.type_vectors = {t: tv[n] for n, t in enumerate(graph.type_names)}
        store.run(f"UNWIND $rows AS r CREATE (:EntityType {{name: r.name, "
                  f"embedding: {d.vector_value('r.e')}}})",
                  {"rows": [{"name": t, "e": tv[n]} for n, t in enumerate(graph.type_names)]},
                  write=True)
    for h, p, t in graph.triples:
        store.run(f"MATCH (a:Entity {{id: $h}}), (b:Entity {{id: $t}}) "
                  f"CREATE (a)-[:{d.ident(p)}]->(b)", {"h": h, "t": t}, write=True)
    wait = d.await_indexes()  # Neo4j populates vector indexes asynchronously
    if wait is not None:
        store.run(wait)
    return graph


def _topk(query: np.ndarray, items: dict[str, np.ndarray], k: int) -> dict[str, float]:
    dists = sorted(((float(np.linalg.norm(v.astype(np.float64) - query.astype(np.float64))), i)
                    for i, v in items.items()))
    return {i: d for d, i in dists[:k]}


def brute_force(graph: SmallGraph, embedder, pattern: Pattern, *, k: int, k_nodes: int,
                k_relations: int, k_types: int = 16,
                distinct: str = "all") -> list[list[tuple[float, tuple, tuple]]]:
    """Per connected component with edges: the top-k (gsd, node ids, triples), plain Python.

    Enumerates every injective mapping of the pattern's nodes and every choice of distinct
    triples for its edges (direction ignored), exactly as the paper defines the search space.
    """
    out = []
    for component in pattern.components():
        if not component.edges:
            continue
        node_cands: list[dict[str, float] | None] = []
        for n in component.nodes:
            if n.name is not None:
                node_cands.append(_topk(embedder.embed_one(n.name), graph.vectors, k_nodes))
            elif n.types and graph.type_names:
                types = set()
                for t in n.types:
                    types |= set(_topk(embedder.embed_one(t), graph.type_vectors, k_types))
                node_cands.append({i: 0.0 for i, ts in graph.entity_types.items()
                                   if types & set(ts)} or None)
                if node_cands[-1] is None:
                    node_cands[-1] = {}
            else:
                node_cands.append(None)
        edge_cands: list[dict[str, float] | None] = []
        for e in component.edges:
            if e.relation is None:
                edge_cands.append(None)
            else:
                edge_cands.append(_topk(embedder.embed_one(e.relation), graph.rel_vectors,
                                        k_relations))
        index = {n.var: i for i, n in enumerate(component.nodes)}
        ids = sorted(graph.entities)
        results = []
        pools = [sorted(c) if c is not None else ids for c in node_cands]
        adjacent = {frozenset((index[e.source], index[e.target])) for e in component.edges}
        differ = [(a, b) for a in range(len(component.nodes)) for b in range(a)
                  if distinct == "all" or component.nodes[a].name is not None
                  or component.nodes[b].name is not None or frozenset((a, b)) in adjacent]
        for mapping in itertools.product(*pools):
            if any(mapping[a] == mapping[b] for a, b in differ):
                continue
            choices = []
            for j, e in enumerate(component.edges):
                a, b = mapping[index[e.source]], mapping[index[e.target]]
                opts = [t for t in graph.triples if {t[0], t[2]} == {a, b} and
                        (edge_cands[j] is None or t[1] in edge_cands[j])]
                choices.append(opts)
            for chosen in itertools.product(*choices):
                if len(set(chosen)) != len(chosen):
                    continue
                gsd = sum(c[mapping[i]] for i, c in enumerate(node_cands)
                          if c is not None and component.nodes[i].name is not None)
                gsd += sum(c[chosen[j][1]] for j, c in enumerate(edge_cands) if c is not None)
                results.append((gsd, tuple(mapping), tuple(chosen)))
        results.sort(key=lambda r: (r[0], r[1]))
        out.append(results[:k])
    return out
