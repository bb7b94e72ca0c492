"""Statements of the document layer (KG-Retriever, equation 1): ``SIMILAR`` edges from each
node of a label to its K most similar nodes of that label.

The graph it writes::

    (a)-[:SIMILAR {score, knn_hash}]->(b)     a and b both :Document, or both :Chunk
    (:Document {..., embedding})              the mean of its chunks' embeddings, normalised
    (:KgdbMeta {key: 'knn/<label>', k, method, complete})

``score`` is the cosine similarity of the two embeddings, computed by the engine from the
stored vectors (never the vector index's score). ``knn_hash`` is the signature of the
source node when its neighbours were computed: the state lives on the edges, not on the
nodes, because on FalkorDB 4.16.3 any property update of a vector-indexed node leaves a
stale HNSW entry behind (docs/design/falkordb-index-faults.md).

Every builder takes values and returns the statement with its parameters: no caller knows
a parameter name. The GDS statements (Neo4j with Graph Data Science) are
:func:`gds_project`, :func:`gds_knn_similar` and :func:`gds_drop`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kgdb.cypher.params import Params
from kgdb.dialects.base import Dialect
from kgdb.errors import UnsupportedFeatureError
from kgdb.statement import Statement
from kgdb.vocabulary import CHUNK, DOCUMENT, HAS_CHUNK, SIMILAR

EMBEDDING = "embedding"
META_LABEL = "KgdbMeta"


def meta_key(label: str) -> str:
    """The ``KgdbMeta`` key of a label's layer (``knn/Document``)."""
    return f"knn/{label}"


def _similar(dialect: Dialect, a: str, b: str, label: str, rel: str = "") -> str:
    node = dialect.ident(label)
    return f"({a}:{node})-[{rel}:{dialect.ident(SIMILAR)}]->({b}:{node})"


# ------------------------------------------------------------------ layer state

def read_layer(label: str) -> Statement:
    """Rows ``k, method, complete`` of the layer's meta node (none before the first run)."""
    p = Params()
    return Statement(
        f"MATCH (m:{META_LABEL} {{key: {p.add('key', meta_key(label))}}})\n"
        "RETURN m.k AS k, m.method AS method, m.complete AS complete", p.values)


def mark_layer(label: str, k: int, method: str, complete: bool) -> Statement:
    """Record the layer's K and method; ``complete`` is false while edges are being written,
    so a run killed half-way is followed by a rebuild from scratch."""
    p = Params()
    return Statement(
        f"MERGE (m:{META_LABEL} {{key: {p.add('key', meta_key(label))}}})\n"
        f"SET m.k = {p.add('k', int(k))}, m.method = {p.add('method', method)}, "
        f"m.complete = {p.add('complete', bool(complete))}",
        p.values, write=True, idempotent=True)


def layer_state(dialect: Dialect, label: str, *, signature_from_document: bool) -> Statement:
    """One row per ``label`` node: ``id, signature, embedded, neighbours, scores, hashes``
    (its stored SIMILAR edges, in one order). The signature is the ``hash`` the document
    pipeline sets: the node's own (a Document) or its document's (a Chunk, whose
    ``document`` property names it)."""
    node = dialect.ident(label)
    if signature_from_document:
        head = (f"MATCH (n:{node})\n"
                f"OPTIONAL MATCH (doc:{dialect.ident(DOCUMENT)} {{id: n.document}})\n"
                "WITH n, doc.hash AS signature\n")
    else:
        head = f"MATCH (n:{node})\nWITH n, n.hash AS signature\n"
    return Statement(
        f"{head}OPTIONAL MATCH (n)-[r:{dialect.ident(SIMILAR)}]->(m:{node})\n"
        f"RETURN n.id AS id, signature, n.{dialect.ident(EMBEDDING)} IS NOT NULL AS embedded, "
        "collect(m.id) AS neighbours, collect(r.score) AS scores, "
        "collect(r.knn_hash) AS hashes")


def count_similar(dialect: Dialect, label: str) -> Statement:
    """Rows ``edges``: how many SIMILAR edges the layer has."""
    return Statement(f"MATCH {_similar(dialect, 'a', 'b', label, 'r')}\nRETURN count(r) AS edges")


def similar_edges(dialect: Dialect, label: str) -> Statement:
    """Rows ``source, target, score`` of the layer, by source, then best first."""
    return Statement(
        f"MATCH {_similar(dialect, 'a', 'b', label, 'r')}\n"
        "RETURN a.id AS source, b.id AS target, r.score AS score\n"
        "ORDER BY source, score DESC, target")


# ------------------------------------------------------------------ document vectors

def document_chunk_vectors(dialect: Dialect, ids: Sequence[str]) -> Statement:
    """Rows ``id, current, vectors``: each document's stored embedding and its chunks'."""
    p = Params()
    emb = dialect.ident(EMBEDDING)
    return Statement(
        f"UNWIND {p.add('ids', list(ids))} AS id\n"
        f"MATCH (n:{dialect.ident(DOCUMENT)} {{id: id}})\n"
        f"OPTIONAL MATCH (n)-[:{dialect.ident(HAS_CHUNK)}]->(c:{dialect.ident(CHUNK)})\n"
        f"WHERE c.{emb} IS NOT NULL\n"
        f"RETURN n.id AS id, n.{emb} AS current, collect(c.{emb}) AS vectors", p.values)


def set_document_vectors(dialect: Dialect, vectors: Sequence[tuple[str, Sequence[float]]]
                         ) -> Statement:
    """``vectors``: (document id, embedding). The old value is removed first: FalkorDB
    4.16.3 takes ``SET n.embedding = vecf32(new)`` for a no-op when the stored vector
    "equals" the new one, and its vecf32 equality truncates each component's difference to
    an integer (``vecf32([0.1, 0.2]) = vecf32([0.9, 0.7])`` is true), so a changed unit
    vector is silently not written; REMOVE then SET in one statement writes it (checked
    with 384-dimension vectors; shared/dialects.md, "List param vs stored vector")."""
    p = Params()
    emb = dialect.ident(EMBEDDING)
    rows = p.add("rows", [{"id": i, "embedding": np.asarray(v, dtype=np.float64)}
                          for i, v in vectors])
    return Statement(
        f"UNWIND {rows} AS row\n"
        f"MATCH (n:{dialect.ident(DOCUMENT)} {{id: row.id}})\n"
        f"REMOVE n.{emb}\n"
        "WITH n, row\n"
        f"SET n.{emb} = {dialect.vector_value('row.embedding')}",
        p.values, write=True, idempotent=True)


def remove_document_vectors(dialect: Dialect, ids: Sequence[str]) -> Statement:
    """Take documents that have no chunk embedding out of the layer: their embedding and
    their outgoing SIMILAR edges (edges pointing at them are rewritten with their sources)."""
    p = Params()
    return Statement(
        f"UNWIND {p.add('ids', list(ids))} AS id\n"
        f"MATCH (n:{dialect.ident(DOCUMENT)} {{id: id}})\n"
        f"REMOVE n.{dialect.ident(EMBEDDING)}\n"
        "WITH n\n"
        f"OPTIONAL MATCH (n)-[r:{dialect.ident(SIMILAR)}]->(:{dialect.ident(DOCUMENT)})\n"
        "DELETE r", p.values, write=True, idempotent=True)


def delete_similar_from(dialect: Dialect, label: str, ids: Sequence[str]) -> Statement:
    """Delete the outgoing SIMILAR edges of the ``label`` nodes ``ids``."""
    p = Params()
    return Statement(
        f"UNWIND {p.add('ids', list(ids))} AS id\n"
        f"MATCH (a:{dialect.ident(label)} {{id: id}})"
        f"-[r:{dialect.ident(SIMILAR)}]->(:{dialect.ident(label)})\n"
        "DELETE r", p.values, write=True, idempotent=True)


def delete_similar(dialect: Dialect, label: str, limit: int) -> Statement:
    """Delete up to ``limit`` SIMILAR edges of the layer. Rows: ``deleted`` (run until 0)."""
    p = Params()
    return Statement(
        f"MATCH {_similar(dialect, 'a', 'b', label, 'r')}\n"
        f"WITH r LIMIT {p.add('limit', int(limit))}\n"
        "DELETE r\nRETURN count(r) AS deleted", p.values, write=True, idempotent=True)


# ------------------------------------------------------------------ neighbours

def nearest_by_index(dialect: Dialect, label: str, ids: Sequence[str], k: int) -> Statement:
    """The ``k`` most similar nodes of ``label`` for each node of ``ids``, through the label's
    vector index: one query of ``k + 1`` nearest per node (itself included), then itself
    dropped. Rows ``id, neighbours, live``: ``neighbours`` is ``[[id, score], ...]`` best
    first (score = cosine, ties by id); ``live`` counts the distinct candidates whose index
    distance agrees with the exact one, so the caller can tell a complete answer from one
    that stale index entries (FalkorDB) or non-unit vectors cut short. A node without
    candidates has no row.

    The index is L2; for unit vectors d^2 = 2 - 2 cos, so its order is the cosine order.
    """
    p = Params()
    emb = dialect.ident(EMBEDDING)
    node = dialect.ident(label)
    call = dialect.vector_search_stored(label, EMBEDDING, p.add("candidates", int(k) + 1),
                                  f"a.{emb}")
    cosine = dialect.cosine_similarity(f"a.{emb}", f"node.{emb}")
    tolerance = p.add("tolerance", 1e-3)
    return Statement(
        f"UNWIND {p.add('ids', list(ids))} AS id\n"
        f"MATCH (a:{node} {{id: id}})\n"
        f"{call}\n"
        f"WITH a, node, {dialect.score_to_l2('score')} AS l2\n"
        "WHERE node <> a\n"
        f"WITH a, node, l2, {cosine} AS similarity\n"
        "WITH a, node, similarity, max(CASE WHEN abs(l2 * l2 - (2.0 - 2.0 * similarity)) <= "
        f"{tolerance} THEN 1 ELSE 0 END) AS live\n"
        "ORDER BY a.id, similarity DESC, node.id\n"
        "WITH a, collect([node.id, similarity]) AS candidates, sum(live) AS live\n"
        f"RETURN a.id AS id, candidates[..{p.add('k', int(k))}] AS neighbours, live",
        p.values)


def nearest_by_scan(dialect: Dialect, label: str, ids: Sequence[str], k: int) -> Statement:
    """Like :func:`nearest_by_index`, comparing each node with every node of the label (the
    exact fallback): rows ``id, neighbours, live`` (``live`` = nodes compared)."""
    p = Params()
    emb = dialect.ident(EMBEDDING)
    node = dialect.ident(label)
    cosine = dialect.cosine_similarity(f"a.{emb}", f"node.{emb}")
    return Statement(
        f"UNWIND {p.add('ids', list(ids))} AS id\n"
        f"MATCH (a:{node} {{id: id}})\n"
        f"MATCH (node:{node})\n"
        f"WHERE node <> a AND node.{emb} IS NOT NULL\n"
        f"WITH a, node, {cosine} AS similarity\n"
        "ORDER BY a.id, similarity DESC, node.id\n"
        "WITH a, collect([node.id, similarity]) AS candidates\n"
        f"RETURN a.id AS id, candidates[..{p.add('k', int(k))}] AS neighbours, "
        "size(candidates) AS live", p.values)


def entering_nodes(dialect: Dialect, label: str, changed: Sequence[str], margin: float
                   ) -> Statement:
    """Rows ``id``: nodes whose stored neighbours a changed node may now beat, i.e. whose
    cosine with one of ``changed`` is at least their least stored score minus ``margin``."""
    p = Params()
    emb = dialect.ident(EMBEDDING)
    node = dialect.ident(label)
    cosine = dialect.cosine_similarity(f"u.{emb}", f"c.{emb}")
    return Statement(
        f"MATCH {_similar(dialect, 'u', 'v', label, 'r')}\n"
        "WITH u, min(r.score) AS floor\n"
        f"UNWIND {p.add('changed', list(changed))} AS cid\n"
        f"MATCH (c:{node} {{id: cid}})\n"
        "WITH u, floor, c\n"
        f"WHERE u <> c AND c.{emb} IS NOT NULL AND {cosine} >= floor - "
        f"{p.add('margin', float(margin))}\n"
        "RETURN DISTINCT u.id AS id", p.values)


def replace_similar(dialect: Dialect, label: str, rows: Sequence[Mapping[str, Any]]) -> Statement:
    """``rows``: {id, hash, neighbours: [{id, score}]}: each node's outgoing SIMILAR edges
    become exactly ``neighbours``, carrying ``hash`` (one statement: all or nothing)."""
    p = Params()
    node = dialect.ident(label)
    return Statement(
        f"UNWIND {p.add('rows', [dict(r) for r in rows])} AS row\n"
        f"MATCH (a:{node} {{id: row.id}})\n"
        f"OPTIONAL MATCH (a)-[old:{dialect.ident(SIMILAR)}]->(:{node})\n"
        "DELETE old\n"
        "WITH a, row, count(old) AS removed\n"
        "UNWIND row.neighbours AS nb\n"
        f"MATCH (b:{node} {{id: nb.id}})\n"
        f"CREATE (a)-[:{dialect.ident(SIMILAR)} {{score: nb.score, knn_hash: row.hash}}]->(b)",
        p.values, write=True, idempotent=True)


def sign_similar(dialect: Dialect, label: str, signatures: Sequence[tuple[str, str]]
                 ) -> Statement:
    """``signatures``: (node id, signature): the ``knn_hash`` of the nodes' outgoing SIMILAR
    edges (after :func:`gds_knn_similar`, which does not know the signatures)."""
    p = Params()
    node = dialect.ident(label)
    rows = p.add("rows", [{"id": i, "hash": h} for i, h in signatures])
    return Statement(
        f"UNWIND {rows} AS row\n"
        f"MATCH (a:{node} {{id: row.id}})-[r:{dialect.ident(SIMILAR)}]->(:{node})\n"
        "SET r.knn_hash = row.hash", p.values, write=True, idempotent=True)


# ------------------------------------------------------------------ GDS (Neo4j)

def _require_gds(dialect: Dialect, construct: str) -> None:
    """GDS is a Neo4j plugin (Dialect.PLUGINS); FalkorDB has no kNN procedure
    (shared/dialects.md, row 7)."""
    if not any(p.name == "gds" for p in dialect.PLUGINS):
        raise UnsupportedFeatureError(construct, dialect.NAME,
                                      "it has no Graph Data Science; use the vector method")


def gds_project(dialect: Dialect, label: str, graph: str) -> Statement:
    """Project the embedded ``label`` nodes, with their embedding and no relationship, into
    the GDS graph catalog as ``graph`` (a Cypher projection, GDS 2.x:
    graph-data-science/current/management-ops/graph-creation/graph-project-cypher-projection;
    GDS 2.13 wants ``targetNodeProperties`` stated, null for a node without a target).
    Rows ``graph, nodes``."""
    _require_gds(dialect, "gds.graph.project")
    p = Params()
    emb = dialect.ident(EMBEDDING)
    return Statement(
        f"MATCH (n:{dialect.ident(label)})\n"
        f"WHERE n.{emb} IS NOT NULL\n"
        f"WITH gds.graph.project({p.add('graph', graph)}, n, null, "
        f"{{sourceNodeProperties: n {{.{emb}}}, targetNodeProperties: null}}) AS g\n"
        "RETURN g.graphName AS graph, g.nodeCount AS nodes", p.values, write=True)


def gds_knn_similar(dialect: Dialect, label: str, graph: str, k: int, candidates: int,
                    seed: int) -> Statement:
    """SIMILAR edges from each node of the projected ``graph`` to its ``k`` best of the
    ``candidates`` neighbours ``gds.knn.stream`` finds (graph-data-science/current/
    algorithms/knn), with the exact cosine as ``score``; ties by id. Rows ``relationships``.

    GDS runs with deterministic settings: one thread, a fixed seed, every candidate sampled,
    no early stop, no similarity cutoff, the COSINE metric. Its NN-descent is approximate:
    asked for the top 3 of MuSiQue's 1,764 documents it missed a true neighbour of 720 of
    them; asked for 50 and cut to 3, of none (GDS 2.13.9). So GDS looks for ``candidates``
    neighbours and this statement keeps the best ``k``: stream mode rather than
    gds.knn.write, so that only those are written, with kgdb's score instead of GDS's
    (1 + cos) / 2."""
    _require_gds(dialect, "gds.knn.stream")
    p = Params()
    emb = dialect.ident(EMBEDDING)
    config = {"nodeProperties": {EMBEDDING: "COSINE"}, "topK": int(candidates),
              "randomSeed": int(seed), "concurrency": 1, "sampleRate": 1.0,
              "deltaThreshold": 0.0, "similarityCutoff": 0.0}
    return Statement(
        f"CALL gds.knn.stream({p.add('graph', graph)}, {p.add('config', config)})\n"
        "YIELD node1, node2\n"
        "WITH gds.util.asNode(node1) AS a, gds.util.asNode(node2) AS b\n"
        f"WHERE a:{dialect.ident(label)} AND b:{dialect.ident(label)}\n"
        f"WITH a, b, {dialect.cosine_similarity(f'a.{emb}', f'b.{emb}')} AS score\n"
        "ORDER BY a.id, score DESC, b.id\n"
        f"WITH a, collect({{node: b, score: score}})[..{p.add('k', int(k))}] AS best\n"
        "UNWIND best AS pick\n"
        "WITH a, pick.node AS b, pick.score AS score\n"
        f"CREATE (a)-[:{dialect.ident(SIMILAR)} {{score: score}}]->(b)\n"
        "RETURN count(*) AS relationships", p.values, write=True)


def gds_drop(dialect: Dialect, graph: str) -> Statement:
    """Drop the projected ``graph`` from the GDS catalog (no error when it is not there)."""
    _require_gds(dialect, "gds.graph.drop")
    p = Params()
    return Statement(
        f"CALL gds.graph.drop({p.add('graph', graph)}, false) YIELD graphName\n"
        "RETURN graphName AS graph", p.values, write=True, idempotent=True)
