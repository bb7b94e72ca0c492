"""Personalized PageRank: the definition kgdb computes inside both engines, and its numpy
reference.

For nodes V, weighted edges E (parallel edges add up; an undirected graph counts each edge
in both directions) and seed weights ``s`` (normalised to sum 1)::

    r = (1 - d) * s + d * P^T r,    P[u][v] = w(u, v) / sum of u's outgoing weights

A node without outgoing weight (dangling) passes nothing on, as in GDS's ``gds.pageRank``
(the scores then sum to less than 1; only their order matters to retrieval). ``d`` is the
damping factor (HippoRAG 2: 0.5). GDS iterates ``r <- (1 - d) s + d P^T r``; with ``d =
0.5`` the error halves each round, so 40 rounds or a tolerance of 1e-9 reach the fixed point
within 1e-9. kgdb's UDF and plugin procedure push residuals (forward push) until each node
holds less than epsilon times its degree.

* FalkorDB (no personalized PageRank of its own): ``kgdb.pprStored`` / ``kgdb.ppr`` in kgdb's
  UDF library (kgdb/procedures/kgdb.js) over the stored projection (blocks of CSR arrays:
  kgdb/documents/ppr_graph.py, "The stored projection").
* Neo4j with kgdb's plugin: the ``kgdb.ppr`` procedure (neo4j-plugin/.../Ppr.java) over the
  same stored projection; without it ``gds.pageRank.stream`` over a per-question projection
  with a seed hub (kgdb/retrieve/ppr.py says why).
* The retrieval graph's edges are directed and weighted (kgdb/documents/ppr_graph.py: "Edge
  weights"); :func:`reference` takes ``undirected=False`` for them.
* :func:`reference`: the fixed point solved exactly (a linear system), for the tests.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

DAMPING = 0.5
ITERATIONS = 100
TOLERANCE = 1e-10


def reference(edges: Sequence[tuple[Hashable, Hashable, float]],
              seeds: Mapping[Hashable, float], *, damping: float = DAMPING,
              undirected: bool = True) -> dict[Hashable, float]:
    """Every node's personalized PageRank (the module's definition), solved exactly."""
    nodes: dict[Hashable, int] = {}
    for u, v, _ in edges:
        nodes.setdefault(u, len(nodes))
        nodes.setdefault(v, len(nodes))
    for node in seeds:
        nodes.setdefault(node, len(nodes))
    n = len(nodes)
    a = np.zeros((n, n))
    for u, v, w in edges:
        a[nodes[u], nodes[v]] += w
        if undirected:
            a[nodes[v], nodes[u]] += w
    out = a.sum(axis=1)
    p = np.divide(a, out[:, None], out=np.zeros_like(a), where=out[:, None] > 0)
    s = np.zeros(n)
    for node, weight in seeds.items():
        s[nodes[node]] += weight
    if s.sum() > 0:
        s /= s.sum()
    r = np.linalg.solve(np.eye(n) - damping * p.T, (1 - damping) * s)
    return {node: float(r[i]) for node, i in nodes.items()}


def ranked(scores: Mapping[Hashable, float], targets: Sequence[Hashable] | None = None,
           k: int | None = None) -> list[tuple[Hashable, float]]:
    """``scores`` of ``targets`` (all by default) above zero, best first, ties by node."""
    keys = scores if targets is None else dict.fromkeys(t for t in targets if t in scores)
    rows = [(node, scores[node]) for node in keys if scores[node] > 0]
    rows.sort(key=lambda x: (-x[1], str(x[0])))
    return rows if k is None else rows[:k]

