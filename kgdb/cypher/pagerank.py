"""Statements of the retrieval graph (kgdb/documents/ppr_graph.py) and of personalized PageRank
over it (kgdb/retrieve/pagerank.py).

The graph it writes::

    (:Phrase {id, name, embedding})-[:phrase_in {title}]->(:Chunk)
                                  a named thing a chunk contains (title: the chunk's
                                  document's title)
    (:Chunk)-[:has_sentence]->(:Sentence {id, chunk, text, embedding})-[:names]->(:Phrase)
    (:Phrase)-[:synonym {score}]->(:Phrase)        names whose embeddings are close (a < b)
    (:KgdbMeta {key: 'ppr', ...})                  options; the stored projection's id,
                                                   block versions and edge count
    (:KgdbPprBlock {block, version, nodes, keys, kinds, offsets, adj, prob})
                                  the stored projection, 64 slots per block
                                  (kgdb/documents/ppr_graph.py: "The stored projection")

A Phrase's id is its name case-folded (one node per name in any case; the name embedded is
that id, so a fresh build and an incremental one embed the same text).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kgdb.cypher.params import Params
from kgdb.dialects.base import Dialect
from kgdb.statement import Statement

PHRASE, SENTENCE, CHUNK, DOCUMENT = "Phrase", "Sentence", "Chunk", "Document"
PHRASE_IN, HAS_SENTENCE, NAMES, SYNONYM = "phrase_in", "has_sentence", "names", "synonym"
META_LABEL, META_KEY = "KgdbMeta", "ppr"
BLOCK_LABEL = "KgdbPprBlock"
"""A block of the stored projection (kgdb/documents/ppr_graph.py: "The stored projection")."""
GDS_GRAPH = "kgdb_ppr"
"""The GDS projection's name (Neo4j)."""


# ------------------------------------------------------------------ keeping the graph current

def delete_orphan_sentences() -> Statement:
    """Sentences whose chunk is gone (a document was updated or deleted). Rows ``deleted``."""
    return Statement(f"MATCH (s:{SENTENCE})\nWHERE NOT (:{CHUNK})-[:{HAS_SENTENCE}]->(s)\n"
                     "DETACH DELETE s\nRETURN count(s) AS deleted", write=True, idempotent=True)


def delete_orphan_phrases() -> Statement:
    """Phrases no chunk contains any more, with their synonym edges. Rows ``deleted``."""
    return Statement(f"MATCH (p:{PHRASE})\nWHERE NOT (p)-[:{PHRASE_IN}]->(:{CHUNK})\n"
                     "DETACH DELETE p\nRETURN count(p) AS deleted", write=True, idempotent=True)


def delete_layer(limit: int) -> Statement:
    """Up to ``limit`` nodes of the retrieval graph (a rebuild from scratch). Rows
    ``deleted``."""
    p = Params()
    return Statement(f"MATCH (n)\nWHERE n:{PHRASE} OR n:{SENTENCE}\n"
                     f"WITH n LIMIT {p.add('limit', int(limit))}\n"
                     "DETACH DELETE n\nRETURN count(n) AS deleted", p.values, write=True,
                     idempotent=True)


def chunks_without_sentences() -> Statement:
    """Rows ``id, text, title`` of the chunks the retrieval graph does not cover yet."""
    return Statement(f"MATCH (c:{CHUNK})\nWHERE NOT (c)-[:{HAS_SENTENCE}]->()\n"
                     f"OPTIONAL MATCH (d:{DOCUMENT} {{id: c.document}})\n"
                     "RETURN c.id AS id, c.text AS text, d.title AS title ORDER BY id")


def existing_phrases(ids: Sequence[str]) -> Statement:
    """Rows ``id`` of the phrases among ``ids`` that exist."""
    p = Params()
    return Statement(f"MATCH (p:{PHRASE})\nWHERE p.id IN {p.add('ids', list(ids))}\n"
                     "RETURN p.id AS id", p.values)


def create_phrases(dialect: Dialect, rows: Sequence[Mapping[str, Any]]) -> Statement:
    """``rows``: {id, embedding}: new phrases (the name is the id)."""
    p = Params()
    return Statement(
        f"UNWIND {p.add('rows', [dict(r) for r in rows])} AS row\n"
        f"MERGE (p:{PHRASE} {{id: row.id}})\n"
        f"ON CREATE SET p.name = row.id, p.embedding = {dialect.vector_value('row.embedding')}",
        p.values, write=True, idempotent=True)


def link_phrases(links: Sequence[tuple[str, str, bool]]) -> Statement:
    """``links``: (phrase id, chunk id, whether the phrase is the chunk's document title):
    ``(phrase)-[:phrase_in {title}]->(chunk)``."""
    p = Params()
    rows = [{"p": a, "c": b, "t": bool(t)} for a, b, t in links]
    return Statement(
        f"UNWIND {p.add('rows', rows)} AS row\n"
        f"MATCH (p:{PHRASE} {{id: row.p}})\nMATCH (c:{CHUNK} {{id: row.c}})\n"
        f"MERGE (p)-[r:{PHRASE_IN}]->(c)\nSET r.title = row.t", p.values, write=True,
        idempotent=True)


def create_sentences(dialect: Dialect, rows: Sequence[Mapping[str, Any]]) -> Statement:
    """``rows``: {id, chunk, text, embedding, phrases}: each sentence under its chunk, naming
    its phrases."""
    p = Params()
    return Statement(
        f"UNWIND {p.add('rows', [dict(r) for r in rows])} AS row\n"
        f"MATCH (c:{CHUNK} {{id: row.chunk}})\n"
        f"MERGE (s:{SENTENCE} {{id: row.id}})\n"
        "ON CREATE SET s.chunk = row.chunk, s.text = row.text, "
        f"s.embedding = {dialect.vector_value('row.embedding')}\n"
        f"MERGE (c)-[:{HAS_SENTENCE}]->(s)\n"
        "WITH s, row\nUNWIND row.phrases AS phrase\n"
        f"MATCH (p:{PHRASE} {{id: phrase}})\nMERGE (s)-[:{NAMES}]->(p)",
        p.values, write=True, idempotent=True)




def delete_synonyms() -> Statement:
    """Every synonym edge (a new threshold). Rows ``deleted``."""
    return Statement(f"MATCH (:{PHRASE})-[r:{SYNONYM}]->(:{PHRASE})\nDELETE r\n"
                     "RETURN count(r) AS deleted", write=True, idempotent=True)


def orphan_phrase_synonyms() -> Statement:
    """Rows ``id``: the phrases with a synonym edge to a phrase no chunk contains any more
    (run before :func:`delete_orphan_phrases`: their nearest synonyms change)."""
    return Statement(f"MATCH (p:{PHRASE})-[:{SYNONYM}]-(q:{PHRASE})\n"
                     f"WHERE NOT (p)-[:{PHRASE_IN}]->(:{CHUNK}) AND (q)-[:{PHRASE_IN}]->(:{CHUNK})\n"
                     "RETURN DISTINCT q.id AS id")


def synonyms_of(ids: Sequence[str]) -> Statement:
    """Rows ``a, b`` (a < b, as stored) of every synonym edge at one of the phrases ``ids``."""
    p = Params()
    return Statement(
        f"UNWIND {p.add('ids', list(ids))} AS id\n"
        f"MATCH (x:{PHRASE} {{id: id}})-[:{SYNONYM}]-(y:{PHRASE})\n"
        "WITH CASE WHEN x.id < y.id THEN x.id ELSE y.id END AS a, "
        "CASE WHEN x.id < y.id THEN y.id ELSE x.id END AS b\n"
        "RETURN DISTINCT a, b", p.values)


def delete_synonym_pairs(pairs: Sequence[tuple[str, str]]) -> Statement:
    """``pairs``: (a, b) with a < b: their synonym edge, gone. Rows ``deleted``."""
    p = Params()
    return Statement(
        f"UNWIND {p.add('rows', [{'a': a, 'b': b} for a, b in pairs])} AS row\n"
        f"MATCH (:{PHRASE} {{id: row.a}})-[r:{SYNONYM}]->(:{PHRASE} {{id: row.b}})\n"
        "DELETE r\nRETURN count(r) AS deleted", p.values, write=True, idempotent=True)


def merge_synonyms(pairs: Sequence[tuple[str, str, float]]) -> Statement:
    """``pairs``: (a, b, score) with a < b: ``(a)-[:synonym {score}]->(b)``."""
    p = Params()
    return Statement(
        f"UNWIND {p.add('rows', [{'a': a, 'b': b, 's': s} for a, b, s in pairs])} AS row\n"
        f"MATCH (a:{PHRASE} {{id: row.a}})\nMATCH (b:{PHRASE} {{id: row.b}})\n"
        f"MERGE (a)-[r:{SYNONYM}]->(b)\nSET r.score = row.s", p.values, write=True,
        idempotent=True)


def layer_edges() -> Statement:
    """The retrieval graph as rows ``a, b, weight`` of phrase and chunk ids (phrase_in: 2
    when the phrase is the chunk's title, else 1; synonym: its score). What a fresh build
    is compared with."""
    return Statement(
        f"MATCH (p:{PHRASE})-[r:{PHRASE_IN}]->(c:{CHUNK})\n"
        "RETURN p.id AS a, c.id AS b, CASE WHEN r.title THEN 2.0 ELSE 1.0 END AS weight\n"
        "UNION ALL\n"
        f"MATCH (p:{PHRASE})-[r:{SYNONYM}]->(q:{PHRASE})\n"
        "RETURN p.id AS a, q.id AS b, r.score AS weight")


def layer_sentences() -> Statement:
    """Rows ``id, chunk, text, phrases`` of every sentence (sorted phrase ids)."""
    return Statement(f"MATCH (s:{SENTENCE})\nOPTIONAL MATCH (s)-[:{NAMES}]->(p:{PHRASE})\n"
                     "WITH s, p.id AS phrase ORDER BY phrase\n"
                     "RETURN s.id AS id, s.chunk AS chunk, s.text AS text, "
                     "collect(phrase) AS phrases ORDER BY id")


def read_meta() -> Statement:
    """Rows ``options, edges, built, blocks, pending`` of the retrieval graph's meta node."""
    p = Params()
    return Statement(f"MATCH (m:{META_LABEL} {{key: {p.add('key', META_KEY)}}})\n"
                     "RETURN m.options AS options, m.edges AS edges, m.built AS built, "
                     "m.blocks AS blocks, m.pending AS pending", p.values)


def mark_pending(pending: bool) -> Statement:
    """Mark the stored projection as possibly behind the graph (a run that changes the graph
    has started: if it stops before the projection is written, the next run rewrites it
    whole) or clear the mark."""
    p = Params()
    return Statement(f"MATCH (m:{META_LABEL} {{key: {p.add('key', META_KEY)}}})\n"
                     f"SET m.pending = {p.add('pending', True if pending else None)}",
                     p.values, write=True, idempotent=True)


def write_meta(options: str, built: float) -> Statement:
    """Record the options the graph was built with (a JSON text) and when."""
    p = Params()
    return Statement(f"MERGE (m:{META_LABEL} {{key: {p.add('key', META_KEY)}}})\n"
                     f"SET m.options = {p.add('options', options)}, "
                     f"m.built = {p.add('built', float(built))}", p.values, write=True,
                     idempotent=True)


# ------------------------------------------------------------------ projections

def _projection_edges(p: Params, title_weight: float) -> str:
    """The directed, weighted edges PageRank walks (kgdb/documents/ppr_graph.py: "Edge
    weights"): rows ``a, b, w, t``. Whether a phrase is a title is counted once per phrase
    (counted per edge, a phrase in n chunks cost n² steps: docs/design/ppr-projection.md)."""
    tw = p.add("title_weight", float(title_weight))
    return (f"MATCH (a:{PHRASE})\n"
            f"OPTIONAL MATCH (a)-[f:{PHRASE_IN} {{title: true}}]->(:{CHUNK})\n"
            "WITH a, count(f) > 0 AS named\n"
            f"MATCH (a)-[e:{PHRASE_IN}]->(b:{CHUNK})\n"
            "WITH a, b, coalesce(e.title, false) AS own, named\n"
            f"UNWIND [[a, b, CASE WHEN own THEN {tw} ELSE 1.0 END], "
            f"[b, a, CASE WHEN named AND NOT own THEN {tw} ELSE 1.0 END]] AS x\n"
            "RETURN x[0] AS a, x[1] AS b, x[2] AS w, 'LINK' AS t\nUNION ALL\n"
            f"MATCH (a:{PHRASE})-[r:{SYNONYM}]->(b:{PHRASE})\n"
            "UNWIND [[a, b], [b, a]] AS x\n"
            "RETURN x[0] AS a, x[1] AS b, r.score AS w, 'LINK' AS t")


def projection_nodes() -> Statement:
    """Rows ``node, id, chunk`` (internal id, id, whether a chunk) of every chunk and phrase:
    the nodes of the stored projection."""
    return Statement(f"MATCH (n)\nWHERE n:{CHUNK} OR n:{PHRASE}\n"
                     f"RETURN id(n) AS node, n.id AS id, n:{CHUNK} AS chunk")


def projection_links(nodes: Sequence[int] | None = None) -> Statement:
    """Rows ``rel, a, b, title, score`` by internal id: each ``phrase_in`` edge (a the
    phrase, b the chunk, ``title`` its flag, ``score`` null) and each synonym edge (a its
    start, ``score``; ``title`` null), of ``nodes`` (an edge with an end among them: an
    edge between two of them comes twice, with one ``rel``) or of the whole graph (None)."""
    p = Params()
    link = "RETURN id(e) AS rel, id({}) AS a, id({}) AS b, coalesce(e.title, false) AS title, " \
        "null AS score"
    synonym = "RETURN id(r) AS rel, id({}) AS a, id({}) AS b, null AS title, r.score AS score"
    if nodes is None:
        return Statement(
            f"MATCH (a:{PHRASE})-[e:{PHRASE_IN}]->(b:{CHUNK})\n{link.format('a', 'b')}\n"
            f"UNION ALL\nMATCH (a:{PHRASE})-[r:{SYNONYM}]->(b:{PHRASE})\n"
            f"{synonym.format('a', 'b')}")
    ids = p.add("nodes", [int(n) for n in nodes])
    head = f"UNWIND {ids} AS i\nMATCH (n) WHERE id(n) = i\n"
    return Statement(
        f"{head}MATCH (n)-[e:{PHRASE_IN}]->(b:{CHUNK})\n{link.format('n', 'b')}\n"
        f"UNION ALL\n{head}MATCH (a:{PHRASE})-[e:{PHRASE_IN}]->(n)\n{link.format('a', 'n')}\n"
        f"UNION ALL\n{head}MATCH (n)-[r:{SYNONYM}]->(b:{PHRASE})\n{synonym.format('n', 'b')}\n"
        f"UNION ALL\n{head}MATCH (a:{PHRASE})-[r:{SYNONYM}]->(n)\n"
        f"{synonym.format('a', 'n')}", p.values)


def named_phrases(nodes: Sequence[int] | None = None) -> Statement:
    """Rows ``node``: the phrases (among ``nodes``, internal ids; None: all) that are a
    document's title (a ``phrase_in {title: true}`` edge)."""
    p = Params()
    if nodes is None:
        return Statement(f"MATCH (p:{PHRASE})-[:{PHRASE_IN} {{title: true}}]->(:{CHUNK})\n"
                         "RETURN DISTINCT id(p) AS node")
    return Statement(f"UNWIND {p.add('nodes', [int(n) for n in nodes])} AS i\n"
                     f"MATCH (p:{PHRASE}) WHERE id(p) = i\n"
                     f"MATCH (p)-[:{PHRASE_IN} {{title: true}}]->(:{CHUNK})\n"
                     "RETURN DISTINCT id(p) AS node", p.values)


def read_block_slots() -> Statement:
    """Rows ``block, nodes, keys, kinds, edges`` of every stored projection block (the slot table:
    kgdb/documents/ppr_graph.py: "The stored projection")."""
    return Statement(f"MATCH (b:{BLOCK_LABEL})\n"
                     "RETURN b.block AS block, b.nodes AS nodes, b.keys AS keys, "
                     "b.kinds AS kinds, size(b.adj) AS edges ORDER BY block")


def read_blocks(blocks: Sequence[int] | None = None) -> Statement:
    """Rows ``block, nodes, keys, kinds, offsets, adj, prob`` of the stored projection's
    ``blocks`` (None: all)."""
    p = Params()
    where = "" if blocks is None else \
        f"WHERE b.block IN {p.add('blocks', [int(b) for b in blocks])}\n"
    return Statement(f"MATCH (b:{BLOCK_LABEL})\n{where}"
                     "RETURN b.block AS block, b.nodes AS nodes, b.keys AS keys, "
                     "b.kinds AS kinds, b.offsets AS offsets, b.adj AS adj, b.prob AS prob "
                     "ORDER BY block", p.values)


def write_blocks(rows: Sequence[Mapping[str, Any]]) -> Statement:
    """``rows``: {block, nodes, keys, kinds, offsets, adj, prob}: (re)write these blocks of
    the stored projection, each with a fresh ``version``."""
    p = Params()
    rows = [{**r, "version": uuid.uuid4().hex} for r in rows]
    return Statement(
        f"UNWIND {p.add('rows', rows)} AS row\n"
        f"MERGE (b:{BLOCK_LABEL} {{block: row.block}})\n"
        "SET b.version = row.version, b.nodes = row.nodes, b.keys = row.keys, "
        "b.kinds = row.kinds, b.offsets = row.offsets, b.adj = row.adj, b.prob = row.prob",
        p.values, write=True, idempotent=True)


def count_blocks() -> Statement:
    """Row ``blocks, numbers``: the stored projection's block nodes and distinct numbers."""
    return Statement(f"MATCH (b:{BLOCK_LABEL})\n"
                     "RETURN count(b) AS blocks, count(DISTINCT b.block) AS numbers")


def delete_blocks(first: int = 0) -> Statement:
    """Delete the stored projection's blocks numbered ``first`` and up. Rows ``deleted``."""
    p = Params()
    return Statement(f"MATCH (b:{BLOCK_LABEL})\nWHERE b.block >= {p.add('first', int(first))}\n"
                     "DELETE b\nRETURN count(b) AS deleted", p.values, write=True,
                     idempotent=True)


def store_projection(blocks: int, edges: int) -> Statement:
    """Mark the stored projection as written: ``blocks`` blocks, ``edges`` directed edges
    (each direction counts), ``versions`` the blocks' versions in block order (what the
    readers cache a block by), and a fresh ``projection`` id (what they cache the whole
    by). Removes the arrays of the previous, single-node format."""
    p = Params()
    key = p.add("key", META_KEY)
    return Statement(
        f"MATCH (m:{META_LABEL} {{key: {key}}})\n"
        f"OPTIONAL MATCH (b:{BLOCK_LABEL})\n"
        "WITH m, b ORDER BY b.block\n"
        "WITH m, collect(b.version) AS versions\n"
        f"SET m.versions = versions, m.blocks = {p.add('blocks', int(blocks))}, "
        f"m.edges = {p.add('edges', int(edges))}, "
        f"m.projection = {p.add('projection', uuid.uuid4().hex)}, "
        "m.nodes = null, m.offsets = null, m.adj = null, m.prob = null, m.chunks = null, "
        "m.pending = null\n"
        "RETURN size(versions) AS blocks", p.values, write=True, idempotent=True)


# ------------------------------------------------------------------ personalized PageRank

def _boost(p: Params, boost: Mapping[int, float]) -> tuple[str, str]:
    return (p.add("boost_nodes", [int(n) for n in boost]),
            p.add("boost_values", [float(v) for v in boost.values()]))


def udf_ppr(nodes: Sequence[int], offsets: Sequence[int], adj: Sequence[int],
            prob: Sequence[float], seeds: Mapping[int, float], *, damping: float,
            epsilon: float, k: int, targets: Sequence[int] | None = None,
            boost: Mapping[int, float] | None = None) -> Statement:
    """FalkorDB: ``kgdb.ppr`` over the given CSR graph. Rows ``node, score, pagerank``
    (``score``: the PageRank, or with a ``boost`` (node -> value) the PageRank divided by
    the best target's plus the node's boost)."""
    p = Params()
    bn, bv = _boost(p, boost or {})
    return Statement(
        f"UNWIND kgdb.ppr({p.add('nodes', list(nodes))}, {p.add('offsets', list(offsets))}, "
        f"{p.add('adj', list(adj))}, {p.add('prob', [float(x) for x in prob])}, "
        f"{p.add('seeds', list(seeds))}, "
        f"{p.add('seed_weights', [float(w) for w in seeds.values()])}, "
        f"{p.add('damping', float(damping))}, {p.add('epsilon', float(epsilon))}, "
        f"{p.add('targets', None if targets is None else list(targets))}, "
        f"{p.add('k', int(k))}, {bn}, {bv}) AS row\n"
        "RETURN row.node AS node, row.score AS score, row.pagerank AS pagerank", p.values)


def udf_ppr_chunks(seeds: Mapping[int, float], *, damping: float, epsilon: float,
                   k: int, boost: Mapping[int, float] | None = None,
                   paths_from: Sequence[str] = (), paths_of: int = 10,
                   dialect: Dialect | None = None) -> Statement:
    """FalkorDB: ``kgdb.pprStored`` over the stored projection from ``seeds`` (internal ids
    -> weight): the ``k`` best chunks (``boost`` as in :func:`udf_ppr`), rows ``chunk,
    document, text, source, node, score, pagerank``. The projection's blocks are read only when the
    UDF's JavaScript context does not keep the projection yet (``kgdb.pprKnown``), and then
    only the blocks it does not keep (``kgdb.pprHasBlock``: after an incremental update, the
    rewritten ones). (The chunk is found
    through ``WITH ... AS node``: matched on ``row.node`` directly, FalkorDB 4.16 scans every
    chunk per row.) With ``paths_from`` (seed phrase ids) and ``dialect``, also a
    column ``paths`` as :func:`native_ppr_chunks` returns it (one round trip instead of two;
    docs/design/ppr-latency.md)."""
    p = Params()
    bn, bv = _boost(p, boost or {})
    head = (
        f"MATCH (m:{META_LABEL} {{key: {p.add('key', META_KEY)}}})\n"
        "WITH m, kgdb.pprKnown(m.projection) AS known\n"
        f"OPTIONAL MATCH (b:{BLOCK_LABEL}) WHERE NOT known AND NOT kgdb.pprHasBlock(b.version)\n"
        "WITH m, known, collect(CASE WHEN b IS NULL THEN null ELSE [b.version, b.nodes, "
        "b.kinds, b.offsets, b.adj, b.prob] END) AS fresh\n"
        "UNWIND kgdb.pprStored(m.projection, CASE WHEN known THEN null ELSE m.versions END, "
        f"fresh, {p.add('seeds', list(seeds))}, "
        f"{p.add('seed_weights', [float(w) for w in seeds.values()])}, "
        f"{p.add('damping', float(damping))}, {p.add('epsilon', float(epsilon))}, "
        f"{p.add('k', int(k))}, {bn}, {bv}) AS row\n"
        "WITH row.node AS node, row.score AS score, row.pagerank AS pagerank\n"
        f"MATCH (c:{CHUNK}) WHERE id(c) = node\n")
    if paths_from and dialect is not None:
        return Statement(_with_paths(dialect, p, head, paths_from, paths_of), p.values)
    return Statement(
        f"{head}RETURN c.id AS chunk, c.document AS document, c.text AS text, "
        "c.source AS source, node, score, "
        "pagerank\nORDER BY score DESC, chunk ASC", p.values)


def native_ppr_chunks(dialect: Dialect, seeds: Mapping[int, float], *, damping: float,
                      epsilon: float, k: int, boost: Mapping[int, float] | None = None,
                      paths_from: Sequence[str] = (), paths_of: int = 10) -> Statement:
    """The dialect's native procedure (Neo4j with kgdb's plugin: ``kgdb.ppr``,
    neo4j-plugin/.../Ppr.java) over the stored projection: the same rows as
    :func:`udf_ppr_chunks`. With ``paths_from`` (seed phrase ids), also a column ``paths``:
    on the first row, :func:`seed_paths`'s rows (``[chunk, phrase, via]``, in its order) for
    the ``paths_of`` best chunks, null on the others (one round trip instead of two)."""
    if dialect.PPR is None:
        raise ValueError(f"{dialect.NAME} has no native personalized PageRank")
    p = Params()
    bn, bv = _boost(p, boost or {})
    call = (f"CALL {dialect.PPR}({p.add('seeds', [int(n) for n in seeds])}, "
            f"{p.add('seed_weights', [float(w) for w in seeds.values()])}, "
            f"{p.add('damping', float(damping))}, {p.add('epsilon', float(epsilon))}, "
            f"{p.add('k', int(k))}, {bn}, {bv})\n"
            "YIELD node AS c, score, pagerank\n")
    if not paths_from:
        return Statement(f"{call}RETURN {_CHUNK_COLUMNS}\nORDER BY score DESC, chunk ASC",
                         p.values)
    return Statement(_with_paths(dialect, p, call, paths_from, paths_of), p.values)


_CHUNK_COLUMNS = ("c.id AS chunk, c.document AS document, c.text AS text, "
                  "c.source AS source, id(c) AS node, score, pagerank")


def _with_paths(dialect: Dialect, p: Params, head: str, paths_from: Sequence[str],
                paths_of: int) -> str:
    """``head`` (rows ``c, score, pagerank``: the ranked chunks) returning the columns of
    :func:`udf_ppr_chunks` and ``paths``: on the first row, :func:`seed_paths`'s rows for
    the ``paths_of`` best chunks from the seed phrases ``paths_from``, null on the others."""
    best = p.add("paths_of", int(paths_of))
    paths = dialect.subquery(["rows"], (
        f"UNWIND rows[0..{best}] AS r\nWITH r.c AS x\n"
        f"{_paths_body(p, 'x', paths_from)}\n"
        "RETURN collect([chunk, phrase, via]) AS paths"))
    return (f"{head}WITH c, score, pagerank ORDER BY score DESC, c.id ASC\n"
            "WITH collect({c: c, score: score, pagerank: pagerank}) AS rows\n"
            f"{paths}\n"
            "UNWIND range(0, size(rows) - 1) AS i\n"
            "WITH rows[i].c AS c, rows[i].score AS score, rows[i].pagerank AS pagerank, "
            "CASE WHEN i = 0 THEN paths ELSE null END AS paths\n"
            f"RETURN {_CHUNK_COLUMNS}, paths\nORDER BY score DESC, chunk ASC")


# ------------------------------------------------------------------ seeds

SEED_COLUMNS = "kind, node, id, chunks, distance, text, phrases, via"
SEED_BEAM = 16
"""The vector searches of :func:`seeds` ask the index for at least this many nodes before
keeping the nearest k: FalkorDB's HNSW searches as wide as it is asked (k times its
over-fetch). On an index that had lost every sentence three times (rebuilds), the 3 nearest
sentences asked as 3 missed a true top-3 sentence for all 100 MuSiQue questions, asked as
16 for 12 of them (a full rebuild now also rebuilds the index: kgdb/documents/ppr_graph.py)."""


def seeds(dialect: Dialect, vector: Sequence[float], *, named: Sequence[str], sentences: int,
          names: int, passages: int, bridges: bool, built: bool = False) -> Statement | None:
    """Every seed of a question in one statement (None: nothing asked). Rows ``kind, node,
    id, chunks, distance, text, phrases, via`` (distances are L2: unit vectors, cos = 1 -
    d^2 / 2; ``chunks``: how many chunks contain a phrase):

    * ``built`` (if ``built``): one row whose ``distance`` is the retrieval graph's build
      time (:func:`read_meta`'s ``built``; no row without a graph), so that a caller that
      keeps the graph's phrase names checks them in the same round trip;
    * ``question``: the phrases among ``named`` (node, id, chunks);
    * ``sentence``: the ``sentences`` sentences nearest ``vector`` (id, distance, text,
      phrases: each ``[internal id, id, chunks]`` of a phrase it names);
    * ``name``: the ``names`` phrases whose name is nearest ``vector`` (node, id, chunks,
      distance);
    * ``passage``: the ``passages`` chunks nearest ``vector`` (node, id, distance, text: the
      document);
    * ``bridge`` (if ``bridges``): the chunks of other documents whose title is a phrase of
      the nearest chunk (node, id, chunks: how many chunks contain that phrase, text: the
      nearest chunk, via: the phrase). The nearest chunk is the first of the ``passage``
      search when there is one (one chunk search instead of two, the same rows:
      docs/design/ppr-latency.md), else of its own search (SEED_BEAM wide)."""
    p = Params()
    vec = p.add("vector", list(map(float, vector)))
    parts = []
    if named:
        parts.append(
            f"MATCH (p:{PHRASE})\nWHERE p.id IN {p.add('named', list(named))}\n"
            f"OPTIONAL MATCH (p)-[:{PHRASE_IN}]->(c:{CHUNK})\n"
            "WITH p, count(c) AS chunks\n"
            "RETURN 'question' AS kind, id(p) AS node, p.id AS id, chunks, null AS distance, "
            "null AS text, null AS phrases, null AS via")
    if sentences:
        parts.append(
            f"{_nearest(dialect, p, SENTENCE, 'sentence', int(sentences), vec)}"
            f"OPTIONAL MATCH (node)-[:{NAMES}]->(p:{PHRASE})\n"
            f"OPTIONAL MATCH (p)-[:{PHRASE_IN}]->(c:{CHUNK})\n"
            "WITH node, distance, p, count(c) AS chunks\n"
            "WITH node, distance, collect(CASE WHEN p IS NULL THEN null "
            "ELSE [id(p), p.id, chunks] END) AS phrases\n"
            "RETURN 'sentence' AS kind, null AS node, node.id AS id, null AS chunks, distance, "
            "node.text AS text, phrases, null AS via")
    if names:
        parts.append(
            f"{_nearest(dialect, p, PHRASE, 'name', int(names), vec)}"
            f"OPTIONAL MATCH (node)-[:{PHRASE_IN}]->(c:{CHUNK})\n"
            "WITH node, distance, count(c) AS chunks\n"
            "RETURN 'name' AS kind, id(node) AS node, node.id AS id, chunks, distance, "
            "null AS text, null AS phrases, null AS via")
    if passages and bridges:  # one search: the bridge starts at the nearest passage
        links = dialect.subquery(["top"], (
            f"{_BRIDGES}RETURN collect(['bridge', id(c), c.id, chunks, null, top.id, p.id]) AS links"))
        parts.append(
            f"{_nearest(dialect, p, CHUNK, 'passage', int(passages), vec)}"
            "WITH collect([node, distance]) AS hits\n"
            "UNWIND hits[0..1] AS first\nWITH hits, first[0] AS top\n"
            f"{links}\n"
            "UNWIND [h IN hits | ['passage', id(h[0]), h[0].id, null, h[1], h[0].document, "
            "null]] + links AS r\n"
            "RETURN r[0] AS kind, r[1] AS node, r[2] AS id, r[3] AS chunks, r[4] AS distance, "
            "r[5] AS text, null AS phrases, r[6] AS via")
    elif passages:
        parts.append(
            f"{_nearest(dialect, p, CHUNK, 'passage', int(passages), vec)}"
            "RETURN 'passage' AS kind, id(node) AS node, node.id AS id, "
            "null AS chunks, distance, node.document AS text, null AS phrases, null AS via")
    if bridges and not passages:  # its own search for the nearest chunk (SEED_BEAM wide)
        parts.append(
            f"{_nearest(dialect, p, CHUNK, 'bridge', 1, vec)}WITH node AS top LIMIT 1\n"
            f"{_BRIDGES}RETURN 'bridge' AS kind, id(c) AS node, c.id AS id, chunks, null AS distance, "
            "top.id AS text, null AS phrases, p.id AS via")
    if not parts:
        return None
    if built:
        parts.append(f"MATCH (m:{META_LABEL} {{key: {p.add('key', META_KEY)}}})\n"
                     "RETURN 'built' AS kind, null AS node, null AS id, null AS chunks, "
                     "m.built AS distance, null AS text, null AS phrases, null AS via")
    body = "\nUNION ALL\n".join(parts)
    return Statement(f"CALL {{\n{body}\n}}\nRETURN {SEED_COLUMNS}", p.values)


_BRIDGES = (f"MATCH (top)<-[:{PHRASE_IN}]-(p:{PHRASE})-[e:{PHRASE_IN}]->(c:{CHUNK})\n"
            "WHERE e.title = true AND c.document <> top.document\n"
            f"MATCH (p)-[:{PHRASE_IN}]->(x:{CHUNK})\n"
            "WITH top, c, p, count(x) AS chunks\n")
"""From the nearest chunk ``top``: rows ``top, c, p, chunks`` of the bridge (:func:`seeds`)."""


def _nearest(dialect: Dialect, p: Params, label: str, name: str, k: int, vector: str) -> str:
    """The head of a seed search: the ``k`` ``label`` nodes nearest ``vector``, as rows
    ``node, distance`` (L2), nearest first (parameter ``<name>s``). Where the dialect searches
    ``label`` exactly (:meth:`Dialect.exact_search`: Neo4j with kgdb's plugin,
    ``kgdb.nearestNodes`` over an in-memory copy of the index's vectors, as Lucene's HNSW
    searches grow with the index's segments (docs/design/exact-vector-search.md); FalkorDB
    while the label is small enough to scan) it does; otherwise it asks the vector index for
    at least SEED_BEAM nodes (parameter ``<name>_beam``) and keep the nearest ``k`` by the
    distance its score gives."""
    limit = p.add(f"{name}s", k)
    if dialect.exact_search(label):
        return f"{dialect.nearest_top(label, 'embedding', limit, vector, dialect.vector_value(vector))}\n"
    beam = p.add(f"{name}_beam", max(k, SEED_BEAM))
    return (f"{dialect.vector_search_call(label, 'embedding', beam, vector)}\n"
            f"WITH node, {dialect.score_to_l2('score')} AS distance\n"
            f"ORDER BY distance ASC, node.id ASC LIMIT {limit}\n")


def phrase_names() -> Statement:
    """Rows ``id`` of every phrase (the question gazetteer's dictionary)."""
    return Statement(f"MATCH (p:{PHRASE}) RETURN p.id AS id")


def seed_paths(chunks: Sequence[str], seeds: Sequence[str]) -> Statement:
    """Which seed phrases reach each of ``chunks`` in one step (``phrase_in``) or two (a
    synonym, then ``phrase_in``): rows ``chunk, phrase, via`` (via: the synonym or null)."""
    p = Params()
    return Statement(f"UNWIND {p.add('chunks', list(chunks))} AS cid\n"
                     f"MATCH (x:{CHUNK} {{id: cid}})\n{_paths_body(p, 'x', seeds)}\n"
                     "RETURN chunk, phrase, via", p.values)


def _paths_body(p: Params, chunk: str, seeds: Sequence[str]) -> str:
    """From the chunk node ``chunk``: rows ``chunk, phrase, via`` of :func:`seed_paths`
    (distinct, ordered by chunk, phrase, via)."""
    s = p.add("path_seeds", list(seeds))
    return (f"MATCH ({chunk})<-[:{PHRASE_IN}]-(q:{PHRASE})\n"
            f"OPTIONAL MATCH (q)-[:{SYNONYM}]-(s:{PHRASE})\n"
            f"WITH {chunk}, q, s WHERE q.id IN {s} OR s.id IN {s}\n"
            f"WITH DISTINCT {chunk}.id AS chunk, CASE WHEN q.id IN {s} THEN q.id ELSE s.id END "
            f"AS phrase, CASE WHEN q.id IN {s} THEN null ELSE q.id END AS via\n"
            "ORDER BY chunk, phrase, via")


def gds_project_seeded(graph: str, seeds: Mapping[int, float],
                       title_weight: float) -> Statement:
    """Neo4j: the retrieval graph (directed ``LINK`` relationships, weighted as the stored
    projection's) plus directed ``SEED`` edges from the hub (the ``KgdbMeta {key: 'ppr'}``
    node) to each seed, weighted by its seed weight: GDS 2.13's ``sourceNodes`` takes no
    weights, and PageRank personalised to the hub alone gives every other node d times its
    PageRank personalised to the weighted seeds (kgdb/retrieve/ppr.py). Rows ``graph,
    nodes, relationships``."""
    p = Params()
    key = p.add("key", META_KEY)
    rows = p.add("seeds", [[int(n), float(w)] for n, w in seeds.items()])
    return Statement(
        f"CALL {{\n{_projection_edges(p, title_weight)}\nUNION ALL\n"
        f"MATCH (a:{META_LABEL} {{key: {key}}})\n"
        f"UNWIND {rows} AS seed\n"
        "MATCH (b) WHERE id(b) = toInteger(seed[0])\n"
        "RETURN a, b, seed[1] AS w, 'SEED' AS t\n}\n"
        f"WITH gds.graph.project({p.add('graph', graph)}, a, b, "
        "{relationshipType: t, relationshipProperties: {weight: w}}) AS g\n"
        "RETURN g.graphName AS graph, g.nodeCount AS nodes, "
        "g.relationshipCount AS relationships", p.values)


def gds_ppr_hub(graph: str, *, damping: float, iterations: int, tolerance: float,
                k: int, boost: Mapping[int, float] | None = None) -> Statement:
    """Neo4j: PageRank personalised to the hub over the seeded projection: the ``k`` best
    chunks, rows ``chunk, document, text, source, node, score, pagerank`` (pagerank: the score
    divided by the damping factor, the weighted-seed PageRank; score: the same, or with a
    ``boost`` (node -> value) divided by the best chunk's plus the node's boost, as
    ``kgdb.ppr`` does)."""
    p = Params()
    dmp = p.add("damping", float(damping))
    bst = p.add("boost", {str(int(n)): float(v) for n, v in (boost or {}).items()})
    return Statement(
        f"MATCH (z:{META_LABEL} {{key: {p.add('key', META_KEY)}}})\n"
        f"CALL gds.pageRank.stream({p.add('graph', graph)}, {{sourceNodes: [z], "
        f"dampingFactor: {dmp}, maxIterations: {p.add('iterations', int(iterations))}, "
        f"tolerance: {p.add('tolerance', float(tolerance))}, "
        "relationshipWeightProperty: 'weight', concurrency: 1})\n"
        "YIELD nodeId, score\n"
        "WITH gds.util.asNode(nodeId) AS c, nodeId, score / " + dmp + " AS pagerank\n"
        f"WHERE c:{CHUNK} AND (pagerank > 0 OR {bst}[toString(nodeId)] IS NOT NULL)\n"
        "WITH collect({c: c, node: nodeId, pagerank: pagerank}) AS rows, "
        "max(pagerank) AS top\n"
        "UNWIND rows AS r\n"
        "WITH r.c AS c, r.node AS node, r.pagerank AS pagerank, "
        f"CASE WHEN size(keys({bst})) = 0 THEN r.pagerank ELSE "
        f"CASE WHEN top > 0 THEN r.pagerank / top ELSE 0.0 END + "
        f"coalesce({bst}[toString(r.node)], 0.0) END AS score\n"
        "RETURN c.id AS chunk, c.document AS document, c.text AS text, "
        "c.source AS source, node, score, "
        "pagerank\n"
        f"ORDER BY score DESC, chunk ASC LIMIT {p.add('k', int(k))}", p.values)


def gds_drop_named(graph: str) -> Statement:
    """Drop the projection ``graph`` (no error when it is not there)."""
    p = Params()
    return Statement(f"CALL gds.graph.drop({p.add('graph', graph)}, false) YIELD graphName\n"
                     "RETURN graphName AS graph", p.values)
