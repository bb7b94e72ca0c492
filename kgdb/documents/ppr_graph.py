"""The retrieval graph kgdb keeps for personalized PageRank (``kgdb index ppr``; the solver is
kgdb/retrieve/ppr.py, the PageRank definition kgdb/retrieve/pagerank.py).

HippoRAG 2's graph without an LLM: passage nodes (the chunks), phrase nodes (the named
things the chunks contain: kgdb/documents/spans.py, merged with the knowledge graph's
entities through the gazetteer, and each chunk's document title), passage-phrase edges
(``title: true`` where the phrase is the chunk's document title), and synonym edges
between phrases whose name embeddings have a cosine of at least ``synonym_threshold``
(HippoRAG 2: 0.8; pure numbers and years get none: their embeddings are close to every
other number's), at most :data:`SYNONYM_NEIGHBOURS` nearest per phrase (HippoRAG's kNN
synonym edges), so that one document of many look-alike names stays a sparse graph.
Sentences with their embeddings stand in for HippoRAG 2's LLM-extracted facts: the
question's nearest sentences seed the phrases they name (kgdb/retrieve/ppr.py).

Statements: kgdb/cypher/pagerank.py (the graph's shape is in its docstring).

**Incremental, equal to a fresh build.** A chunk's phrases and sentences depend only on its
text, its document's title and the gazetteer, so a run (1) deletes the sentences whose chunk
is gone (the document pipeline deletes a changed or deleted document's chunks) and the
phrases no chunk contains any more (with their synonym edges), (2) extracts the chunks that
have no sentence yet, and (3) ranks the nearest names again only of the phrases it
created, of those with a created phrase above the threshold and of those that had a deleted
phrase among their nearest (:func:`_synonyms`), from the embedder's vectors. Other phrases'
nearest names cannot change: their vectors did not, nor did the names above their
threshold. Other options than the stored ones, or ``full``, rebuild from
scratch (a new synonym threshold recomputes only the synonyms). The run ends by writing
the stored projection (below): rebuild after loading or deleting documents, as for the
document layer. Neo4j without kgdb's plugin projects per question through GDS
(kgdb/retrieve/ppr.py says why).

**The stored projection** (what ``kgdb.ppr`` reads: FalkorDB's UDF,
kgdb/procedures/kgdb.js, and the procedure of kgdb's Neo4j plugin) is the walk's directed
edges (below) with their transition probabilities, in ``KgdbPprBlock {block}`` nodes of
``SLOTS`` (64) slots. A slot holds one chunk or phrase for as long as it exists: its
internal id, its id and its kind (chunk, phrase, or phrase that is a document's title); a
block holds its slots' out-edges as CSR arrays (``offsets``; ``adj``, the neighbours'
slots; ``prob``) and a fresh ``version`` per write. The ``KgdbMeta {key: 'ppr'}`` node
lists the blocks' versions in order and has a fresh ``projection`` id per write; the
readers keep the assembled graph per projection id and the blocks per version, so after an
update they read only the rewritten blocks. A full write numbers the nodes by internal id
(its cost, and that of the single-node arrays it replaced: docs/design/ppr-projection.md).
An incremental write (a run that extracted chunks or removed nodes, with the same title
weight and synonym threshold) compares the slot table with the chunks and phrases there are
now, by (kind, id): a node that is gone frees its slot; a new one takes a free slot or a
new one at the end; one this run created again (a changed document's chunk, a phrase
deleted and created again) or whose internal id changed keeps its slot. FalkorDB reuses
deleted nodes' internal ids, so none of this goes by internal id alone. Then it recomputes
the out-edges of the slots whose edges can have changed and rewrites their blocks (the
blocks' other rows as they were): those nodes, their neighbours in the stored projection
(every edge is stored both ways, so these are the nodes with an edge to a gone or stale
one) and in the graph, and the chunks containing a phrase that became or stopped being a
document's title. Nothing else can change: a chunk's links depend only on its text and
title, synonym edges only on the phrases at their ends. The result equals a full write edge
for edge (tests/live/test_ppr.py, both engines). A run that stops after changing the graph
but before writing the projection leaves the meta node ``pending``, and the next run writes
it whole.

**Edge weights** (the projection, both engines: kgdb/cypher/pagerank.py): a phrase leads to
the chunks containing it with weight 1, and to the chunks of the document it is the title
of with ``title_weight``; a chunk leads to its phrases with weight 1, and with
``title_weight`` to a phrase that is another document's title (the bridge to that
document); synonyms both ways with their score. HippoRAG 2's graph has no titles; on
Wikipedia-like corpora a named thing's own article is where a walk should go on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from kgdb.cypher import pagerank as cy
from kgdb.documents.pipeline import DocumentOptions, gazetteer_for
from kgdb.documents.spans import phrase_id, phrases, seed_sentences
from kgdb.embed import Embedder
from kgdb.engine.base import GraphStore
from kgdb.errors import KgdbError
from kgdb.schema.apply import await_indexes, execute_ddl
from kgdb.stored.ppr_options import FORMAT, TITLE_WEIGHT, GraphOptions, options_of

BATCH = 500


class ProjectionError(KgdbError):
    """The stored projection is not what was written."""


def stored_options(store: GraphStore) -> GraphOptions | None:
    """The options the retrieval graph was built with (None: no graph)."""
    meta = store.run(cy.read_meta()).records()
    return options_of(meta[0]["options"]) if meta and meta[0]["options"] else None


@dataclass
class GraphReport:
    mode: str = ""
    """``full``, ``incremental`` or ``unchanged``."""
    chunks: int = 0
    """Chunks extracted by this run."""
    phrases_created: int = 0
    phrases_removed: int = 0
    sentences_created: int = 0
    sentences_removed: int = 0
    synonyms: int = 0
    """Synonym edges written by this run."""
    projection_edges: int = 0
    projection: dict[str, Any] = field(default_factory=dict)
    """What writing the stored projection did (:class:`ProjectionReport`)."""
    seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def build_graph(store: GraphStore, embedder: Embedder, options: GraphOptions | None = None,
                *, full: bool = False) -> GraphReport:
    """Bring the retrieval graph up to date (see the module docstring)."""
    options = (options or GraphOptions()).check()
    report = GraphReport()
    clock = _Clock(report)
    orphaned: list[str] = []
    meta = store.run(cy.read_meta()).records()
    stored = json.loads(meta[0]["options"]) if meta and meta[0]["options"] else None
    interrupted = bool(meta and meta[0]["pending"])  # a run stopped before its projection
    store.run(cy.mark_pending(True))  # (no meta node yet: nothing stored to mark)
    if full or stored is None or {k: stored.get(k) for k in options.extraction()} != \
            options.extraction():
        report.mode = "full"
        _drop_vector_indexes(store)  # rebuilt fresh below: an approximate index that lost
        while int(store.run(cy.delete_layer(10_000)).value(0)):  # every node misses more
            pass
    else:
        report.mode = "incremental"
        report.sentences_removed = int(store.run(cy.delete_orphan_sentences()).value(0))
        orphaned = [str(r["id"]) for r in store.run(cy.orphan_phrase_synonyms()).records()]
        report.phrases_removed = int(store.run(cy.delete_orphan_phrases()).value(0))
    resynonym = stored is not None and report.mode == "incremental" and \
        stored.get("synonym_threshold") != options.synonym_threshold
    if resynonym:
        store.run(cy.delete_synonyms())
    clock.lap("clean")
    # A full build creates the vector indexes after the extraction: populated from the
    # nodes at once, Neo4j's Lucene index has fewer segments than one filled batch by
    # batch, and every query searches each segment (docs/design/ppr-latency.md)
    _ensure_indexes(store, embedder, vectors=report.mode != "full")
    fresh = _extract(store, embedder, options, report)
    _ensure_indexes(store, embedder)
    clock.lap("extract")
    report.synonyms, fresh.relinked = _synonyms(
        store, embedder, options.synonym_threshold,
        None if resynonym or report.mode == "full" else sorted(fresh.phrases), orphaned)
    clock.lap("synonyms")
    reweigh = stored is not None and stored.get("title_weight") != options.title_weight
    unchanged = report.mode == "incremental" and not (
        report.chunks or report.phrases_removed or report.sentences_removed or resynonym
        or reweigh)
    if unchanged and not interrupted and meta and meta[0]["edges"] is not None:
        store.run(cy.mark_pending(False))
        report.mode = "unchanged"  # the stored projection is still the graph's
        return report
    store.run(cy.write_meta(json.dumps({**asdict(options), "format": FORMAT}, sort_keys=True),
                            time.time()))
    if store.dialect.PROCEDURES == "udf":
        from kgdb.procedures import falkordb as udf

        if not udf.status(store).get("up_to_date"):  # kgdb.ppr runs the solver's PageRank
            udf.install(store)
    # FalkorDB's UDF and Neo4j's plugin procedure read it (GDS projects per question)
    projection = store_projection(
        store, options.title_weight,
        None if report.mode == "full" or resynonym or reweigh or interrupted else fresh)
    report.projection_edges = projection.edges
    report.projection = asdict(projection)
    clock.lap("projection")
    if unchanged:
        report.mode = "unchanged"
    return report


class _Clock:
    def __init__(self, report: GraphReport | ProjectionReport) -> None:
        self.seconds, self.t = report.seconds, time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(now - self.t, 3)
        self.t = now


def _drop_vector_indexes(store: GraphStore) -> None:
    """The phrase and sentence vector indexes, before a rebuild deletes every node they
    hold: FalkorDB's HNSW index, after three rebuilds of MuSiQue-100's 6,722 sentences,
    missed a true top-3 sentence for 100 of 100 questions at its usual search width (12 of
    100 at 64), where a fresh one misses few."""
    for info in store.indexes():
        if info.kind == "vector" and info.entity == "node" and \
                info.label in (cy.PHRASE, cy.SENTENCE):
            for op in store.dialect.drop_index(info):
                store.execute(op)


def _ensure_indexes(store: GraphStore, embedder: Embedder, *, vectors: bool = True) -> None:
    infos = store.indexes()
    have = {info.key for info in infos}
    d = store.dialect
    wanted = []
    for label in (cy.PHRASE, cy.SENTENCE):
        if ("range", "node", label, ("id",)) not in have:
            for op in d.create_range_index(label, "id"):
                execute_ddl(store, op)
        key = ("vector", "node", label, ("embedding",))
        if vectors and key not in have:
            for op in d.create_vector_index(label, "embedding", embedder.dimension):
                execute_ddl(store, op)
            wanted.append(key)
    # No index on the blocks' numbers (a write scans its few hundred blocks): on FalkorDB
    # 4.16.3 one stopped finding block 0 (`{block: 0}` matched none of the 10 nodes a
    # scan found), so every rebuild MERGEd another block 0 and the readers assembled a
    # wrong graph (docs/design/falkordb-index-faults.md). An index made before this is
    # dropped.
    for info in infos:
        if info.key == ("range", "node", cy.BLOCK_LABEL, ("block",)):
            for op in d.drop_index(info):
                store.execute(op)
    if wanted:
        from kgdb.dialects.base import IndexInfo

        await_indexes(store, vectors=[IndexInfo(*key, options={"dimension": embedder.dimension})
                                      for key in wanted])


def _extract(store: GraphStore, embedder: Embedder, options: GraphOptions,
             report: GraphReport) -> Fresh:
    """Phrases and sentences of the chunks without sentences; returns those chunks' ids and
    the created phrases' ids."""
    todo = store.run(cy.chunks_without_sentences()).records()
    if not todo:
        return Fresh()
    gazetteer = gazetteer_for(store, DocumentOptions(ignore_case=True)) \
        if options.gazetteer else None
    links: list[tuple[str, str, bool]] = []
    rows: list[dict[str, Any]] = []
    for chunk in todo:
        text = str(chunk["text"] or "")
        title = [str(chunk["title"])] if options.titles and chunk["title"] else []
        found = phrases(text, gazetteer, title)
        own = phrase_id(str(chunk["title"])) if chunk["title"] else None
        links += [(p, str(chunk["id"]), p == own) for p in found]
        for i, sentence in enumerate(seed_sentences(text)):
            named = [p for p in phrases(sentence, gazetteer) if p in found]
            rows.append({"id": f"{chunk['id']}~{i:03d}", "chunk": str(chunk["id"]),
                         "text": sentence, "phrases": named})
    report.chunks = len(todo)
    wanted = list(dict.fromkeys(p for p, _, _ in links))
    existing: set[str] = set()
    for part in _batches(wanted, 5000):
        existing |= {str(r["id"]) for r in store.run(cy.existing_phrases(part)).records()}
    created = [p for p in wanted if p not in existing]
    d = store.dialect
    for part in _batches(created, BATCH):
        vectors = embedder.embed(list(part))
        store.run(cy.create_phrases(d, [{"id": p, "embedding": list(map(float, v))}
                                        for p, v in zip(part, vectors, strict=True)]))
    report.phrases_created = len(created)
    for part in _batches(links, 5000):
        store.run(cy.link_phrases(part))
    for part in _batches(rows, BATCH):
        vectors = embedder.embed([r["text"] for r in part])
        store.run(cy.create_sentences(d, [{**r, "embedding": list(map(float, v))}
                                          for r, v in zip(part, vectors, strict=True)]))
    report.sentences_created = len(rows)
    return Fresh({str(chunk["id"]) for chunk in todo}, set(created))


SYNONYM_NEIGHBOURS = 16
"""At most this many synonyms per phrase of its own: a phrase keeps its nearest names above the
threshold (highest score first, ties by id), as HippoRAG's kNN synonym edges (its top-k is 2047:
a bound for a 2,047-name neighbourhood, never reached on its corpora); an edge joins two phrases
when either is among the other's nearest. Without a bound one document of look-alike names
made edges quadratic in its names, and every ppr walk crossed them
(docs/design/ppr-projection.md). The unbounded graphs of MuSiQue-100 and 2wiki-100 have no
phrase with 16 synonyms, so the bound leaves them as they were (docs/findings-35.md)."""
SCORE_DECIMALS = 7
"""Scores are rounded to this many decimals before they are compared or ranked: a row's
dot products from one matrix product and from another differ in the last bits, and an
incremental run must rank as a fresh build does."""


def _synonyms(store: GraphStore, embedder: Embedder, threshold: float,
              new: Sequence[str] | None, orphaned: Sequence[str] = ()) -> tuple[int, set[str]]:
    """Synonym edges of the phrases (see :data:`SYNONYM_NEIGHBOURS`): all of them (``new``
    None: no synonym edge is stored), or brought up to date after this run created the
    phrases ``new`` and deleted phrases that had an edge to the phrases ``orphaned``. Returns
    the edges written and the phrases whose edges changed. The vectors are the phrases' own
    (a phrase's vector is its id embedded), taken from the embedder's cache: reading the
    stored vectors back through Cypher is slow (docs/design/ppr-projection.md).

    Incremental: only phrases whose nearest names can have changed are ranked again (a
    created one; one with a created phrase above the threshold; one that had a deleted phrase
    among them), with the phrases at their edges (to decide whether an edge survives, the
    other end's nearest); an edge between two phrases outside these keeps its reason."""
    if new is not None and not new and not orphaned:
        return 0, set()
    ids = sorted(str(r["id"]) for r in store.run(cy.phrase_names()).records()
                 if not _numeric(str(r["id"])))
    if not ids:
        return 0, set()
    matrix = np.asarray(embedder.embed(ids), dtype=np.float64)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    position = {p: i for i, p in enumerate(ids)}
    if new is None:
        nearest = _nearest(matrix, range(len(ids)), threshold)
        items = sorted({_pair(ids, i, j): s for i, row in nearest.items() for j, s in row}
                       .items())
        for part in _batches([(a, b, s) for (a, b), s in items], 5000):
            store.run(cy.merge_synonyms(part))
        return len(items), set()
    created = sorted(position[p] for p in new if p in position)
    todo = set(created) | {position[p] for p in orphaned if p in position}
    for start in range(0, len(created), _rows_per_block(len(ids))):
        scores = np.round(matrix[created[start:start + _rows_per_block(len(ids))]] @ matrix.T,
                          SCORE_DECIMALS)
        todo.update(int(j) for j in np.nonzero((scores >= threshold).any(axis=0))[0])
    stored: set[tuple[str, str]] = set()
    for part in _batches(sorted(ids[i] for i in todo), 5000):
        stored |= {(str(r["a"]), str(r["b"])) for r in store.run(cy.synonyms_of(part)).records()}
    nearest = _nearest(matrix, sorted(todo), threshold)
    ends = {j for row in nearest.values() for j, _ in row}
    ends |= {position[x] for pair in stored for x in pair if x in position}
    nearest.update(_nearest(matrix, sorted(ends - todo), threshold))
    wanted: dict[tuple[str, str], float] = {}
    for i, row in nearest.items():
        for j, s in row:
            if i in todo or j in todo:
                wanted[_pair(ids, i, j)] = s
    gone = sorted(stored - wanted.keys())
    added = sorted((a, b, s) for (a, b), s in wanted.items() if (a, b) not in stored)
    for part in _batches(gone, 5000):
        store.run(cy.delete_synonym_pairs(part))
    for part in _batches(added, 5000):
        store.run(cy.merge_synonyms(part))
    return len(added), {x for a, b in gone for x in (a, b)} | \
        {x for a, b, _ in added for x in (a, b)}


def _pair(ids: Sequence[str], i: int, j: int) -> tuple[str, str]:
    return (ids[i], ids[j]) if ids[i] < ids[j] else (ids[j], ids[i])


def _rows_per_block(n: int) -> int:
    """Rows of the score matrix computed at once: about 64 MB of doubles."""
    return max(1, min(1000, 8_000_000 // max(1, n)))


def _nearest(matrix: np.ndarray, rows: Sequence[int] | range,
             threshold: float) -> dict[int, list[tuple[int, float]]]:
    """Each row's nearest other rows (position, rounded score) with a score of at least
    ``threshold``: at most :data:`SYNONYM_NEIGHBOURS`, highest first, ties by position (the
    ids are sorted: by id)."""
    out: dict[int, list[tuple[int, float]]] = {}
    rows = list(rows)
    step = _rows_per_block(len(matrix))
    for start in range(0, len(rows), step):
        block = rows[start:start + step]
        scores = np.round(matrix[block] @ matrix.T, SCORE_DECIMALS)
        for r, i in enumerate(block):
            row = scores[r]
            row[i] = -np.inf
            hits = np.nonzero(row >= threshold)[0]
            if len(hits) > SYNONYM_NEIGHBOURS:
                hits = hits[np.lexsort((hits, -row[hits]))[:SYNONYM_NEIGHBOURS]]
            out[i] = [(int(j), float(row[j])) for j in hits]
    return out


SLOTS = 64
"""Slots per block of the stored projection."""
FREE, CHUNK, PHRASE, NAMED = 0, 1, 2, 3
"""A slot's kind: free, a chunk, a phrase, a phrase that is a document's title."""
WRITE_BATCH = 100_000
"""About this many array items per statement that writes blocks."""


@dataclass
class ProjectionReport:
    mode: str = ""
    """``full`` or ``incremental``."""
    blocks: int = 0
    """Blocks written (of ``total``)."""
    total: int = 0
    rows: int = 0
    """Nodes whose edges were computed."""
    edges: int = 0
    """Directed edges of the whole projection."""
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class Fresh:
    """What a run of :func:`build_graph` created: the chunks it extracted and the phrases it
    created. Their nodes are new even where the (kind, id) was stored before: a changed
    document's chunks keep their ids, and FalkorDB reuses deleted nodes' internal ids."""
    chunks: set[str] = field(default_factory=set)
    phrases: set[str] = field(default_factory=set)
    relinked: set[str] = field(default_factory=set)
    """Phrases this run kept whose synonym edges changed (a nearer name came or went)."""

    def has(self, key: tuple[bool, str]) -> bool:
        return key[1] in (self.chunks if key[0] else self.phrases | self.relinked)


@dataclass
class _Slots:
    """The slot table: per slot the node's internal id (-1: free), id and kind; and per
    block its edge count as stored."""
    nodes: list[int]
    keys: list[str]
    kinds: list[int]
    edges: dict[int, int] = field(default_factory=dict)

    def place(self, node: int, key: tuple[bool, str], at: int | None = None) -> int:
        if at is None:
            at = len(self.nodes)
            self.nodes.append(-1)
            self.keys.append("")
            self.kinds.append(FREE)
        self.nodes[at], self.keys[at] = node, key[1]
        self.kinds[at] = CHUNK if key[0] else PHRASE
        return at


def store_projection(store: GraphStore, title_weight: float = TITLE_WEIGHT,
                     fresh: Fresh | None = None) -> ProjectionReport:
    """Write the stored projection ``kgdb.ppr`` reads (the module docstring: "The stored
    projection"): with ``fresh`` (what this run created) and a projection of this layout
    stored, only the blocks holding a node whose edges a change could reach; else every
    block."""
    report = ProjectionReport()
    clock = _Clock(report)
    current = {(bool(r["chunk"]), str(r["id"])): int(r["node"])
               for r in store.run(cy.projection_nodes()).records()}
    slots = _read_slots(store) if fresh is not None else None
    if slots is None:
        report.mode = "full"
        slots = _fresh_slots(current)
        sources = None
    else:
        report.mode = "incremental"
        sources = _affected(store, slots, current, fresh or Fresh())
    clock.lap("diff")
    total = (len(slots.nodes) + SLOTS - 1) // SLOTS
    todo = range(total) if sources is None else sorted({s // SLOTS for s in sources})
    ids = None if sources is None else [slots.nodes[s] for s in sorted(sources)
                                        if slots.nodes[s] >= 0]
    out = _rows(store, slots, ids, title_weight)
    report.rows = len(out)
    if sources is not None:  # the other rows of the blocks rewritten: as stored
        for r in store.run(cy.read_blocks(todo)).records():
            first, offsets = int(r["block"]) * SLOTS, r["offsets"]
            for j in range(len(r["nodes"])):
                if first + j not in sources and slots.nodes[first + j] >= 0:
                    a, b = offsets[j], offsets[j + 1]
                    out[first + j] = (np.asarray(r["adj"][a:b], dtype=np.int64),
                                      np.asarray(r["prob"][a:b], dtype=np.float64))
    clock.lap("edges")
    if sources is None:
        store.run(cy.delete_blocks(0))
    batch: list[dict[str, Any]] = []
    size = 0
    for block in todo:
        batch.append(_block(slots, out, block))
        slots.edges[block] = len(batch[-1]["adj"])
        size += 2 * len(batch[-1]["adj"]) + 4 * SLOTS
        if size > WRITE_BATCH:
            store.run(cy.write_blocks(batch))
            batch, size = [], 0
    if batch:
        store.run(cy.write_blocks(batch))
    store.run(cy.delete_blocks(total))
    stored = store.run(cy.count_blocks()).single() or {}
    if (stored.get("blocks"), stored.get("numbers")) != (total, total):
        raise ProjectionError(f"the stored projection should have {total} blocks numbered 0 to "
                            f"{total - 1}; the graph has {stored.get('blocks')} block nodes "
                            f"with {stored.get('numbers')} numbers: run kgdb index ppr --full")
    report.blocks, report.total = len(todo), total
    report.edges = sum(slots.edges.get(b, 0) for b in range(total))
    store.run(cy.store_projection(total, report.edges))
    clock.lap("write")
    return report


def _fresh_slots(current: dict[tuple[bool, str], int]) -> _Slots:
    """A new slot table: the nodes in internal id order."""
    slots = _Slots([], [], [])
    for key in sorted(current, key=lambda key: current[key]):
        slots.place(current[key], key)
    return slots


def _read_slots(store: GraphStore) -> _Slots | None:
    """The stored slot table (None: no projection of this layout is stored)."""
    meta = store.run(cy.read_meta()).records()
    if not meta or meta[0]["edges"] is None or meta[0]["blocks"] is None:
        return None
    blocks = store.run(cy.read_block_slots()).records()
    if [int(r["block"]) for r in blocks] != list(range(int(meta[0]["blocks"]))):
        return None
    slots = _Slots([], [], [])
    for r in blocks:
        slots.nodes += [int(n) for n in r["nodes"]]
        slots.keys += [str(k) for k in r["keys"]]
        slots.kinds += [int(k) for k in r["kinds"]]
        slots.edges[int(r["block"])] = int(r["edges"])
    return slots


def _affected(store: GraphStore, slots: _Slots, current: dict[tuple[bool, str], int],
              fresh: Fresh) -> set[int]:
    """Update the slot table to the ``current`` nodes and return the slots whose edges may
    have changed: the slots of nodes that are gone, new, or recreated (``fresh``, or another
    internal id), their neighbours in the stored projection and in the graph (every edge
    is stored both ways), and the chunks containing a phrase that became or stopped being a
    document's title (a chunk's edge to it is weighted by that)."""
    stored = {(k == CHUNK, key): s for s, (key, k) in enumerate(zip(slots.keys, slots.kinds,
                                                                      strict=True)) if k}
    stale = sorted(s for key, s in stored.items()
                   if key not in current or current[key] != slots.nodes[s] or fresh.has(key))
    was_named = {s for s in range(len(slots.kinds)) if slots.kinds[s] == NAMED}
    affected = set(stale)
    for r in store.run(cy.read_blocks(sorted({s // SLOTS for s in stale}))).records():
        first = int(r["block"]) * SLOTS
        offsets = r["offsets"]
        for s in stale:
            if first <= s < first + SLOTS:
                j = s - first
                affected.update(int(v) for v in r["adj"][offsets[j]:offsets[j + 1]])
    free = []
    for key, s in stored.items():
        if key not in current:
            slots.nodes[s], slots.keys[s], slots.kinds[s] = -1, "", FREE
            free.append(s)
    free.sort(reverse=True)
    renewed = []
    for key, node in current.items():
        was = stored.get(key)
        if was is None:
            slots.place(node, key, free.pop() if free else None)
        elif was in stale:
            slots.place(node, key, was)
        else:
            continue
        renewed.append(node)
    by_node = {n: s for s, n in enumerate(slots.nodes) if n >= 0}
    affected.update(by_node[n] for n in renewed)
    for part in _batches(renewed, 2000):
        for r in store.run(cy.projection_links(part)).records():
            affected.update((by_node[int(r["a"])], by_node[int(r["b"])]))
    phrases = [slots.nodes[s] for s in affected if slots.kinds[s] not in (FREE, CHUNK)]
    named = set()
    for part in _batches(phrases, 5000):
        named |= {by_node[int(r["node"])] for r in store.run(cy.named_phrases(part)).records()}
    flipped = [slots.nodes[s] for s in affected if slots.kinds[s] not in (FREE, CHUNK) and
               s not in stale and (s in named) != (s in was_named)]
    for part in _batches(flipped, 2000):
        affected.update(by_node[int(r["b"])] for r in
                        store.run(cy.projection_links(part)).records() if r["score"] is None)
    return affected


def _rows(store: GraphStore, slots: _Slots, nodes: Sequence[int] | None,
          title_weight: float) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The out-edges of ``nodes`` (internal ids; None: all) by slot: (neighbour slots in
    ascending order, transition probabilities); the edge weights of the module docstring's
    "Edge weights". Sets each phrase's slot kind (NAMED or PHRASE)."""
    by_node = {n: s for s, n in enumerate(slots.nodes) if n >= 0}
    links: dict[int, tuple[int, int, bool]] = {}  # by relationship (parallel edges add up)
    syns: dict[int, tuple[int, int, float]] = {}
    for part in ([None] if nodes is None else _batches(list(nodes), 2000)):
        for r in store.run(cy.projection_links(part)).records():
            a, b = by_node[int(r["a"])], by_node[int(r["b"])]
            if r["score"] is None:
                links[int(r["rel"])] = (a, b, bool(r["title"]))
            else:
                syns[int(r["rel"])] = (a, b, float(r["score"]))
    link, syn = list(links.values()), list(syns.values())
    ends = None if nodes is None else \
        list({*(slots.nodes[p] for p, _, _ in link), *nodes})
    named = np.zeros(len(slots.nodes), dtype=bool)
    for part in ([None] if ends is None else _batches(ends, 5000)):
        for r in store.run(cy.named_phrases(part)).records():
            named[by_node[int(r["node"])]] = True
    lp = np.fromiter((p for p, _, _ in link), dtype=np.int64, count=len(link))
    lc = np.fromiter((c for _, c, _ in link), dtype=np.int64, count=len(link))
    lt = np.fromiter((t for _, _, t in link), dtype=bool, count=len(link))
    sa = np.fromiter((a for a, _, _ in syn), dtype=np.int64, count=len(syn))
    sb = np.fromiter((b for _, b, _ in syn), dtype=np.int64, count=len(syn))
    sw = np.fromiter((w for _, _, w in syn), dtype=np.float64, count=len(syn))
    tw = float(title_weight)
    src = np.concatenate([lp, lc, sa, sb])
    dst = np.concatenate([lc, lp, sb, sa])
    weight = np.concatenate([np.where(lt, tw, 1.0), np.where(named[lp] & ~lt, tw, 1.0), sw, sw])
    wanted = np.arange(len(slots.nodes)) if nodes is None else \
        np.asarray(sorted(by_node[n] for n in nodes), dtype=np.int64)
    keep = np.isin(src, wanted)
    src, dst, weight = src[keep], dst[keep], weight[keep]
    for s in wanted:
        if slots.kinds[s] != CHUNK:
            slots.kinds[s] = NAMED if named[s] else PHRASE
    order = np.lexsort((dst, src))
    src, dst, weight = src[order], dst[order], weight[order]
    if len(src):  # parallel edges add up
        first = np.concatenate([[True], (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])])
        groups = np.cumsum(first) - 1
        weight = np.bincount(groups, weights=weight)
        src, dst = src[first], dst[first]
    total = np.bincount(src, weights=weight, minlength=len(slots.nodes))
    prob = weight / total[src]
    cuts = np.searchsorted(src, wanted, side="left"), np.searchsorted(src, wanted, side="right")
    return {int(s): (dst[a:b], prob[a:b]) for s, a, b in zip(wanted, *cuts, strict=True)}


def _block(slots: _Slots, rows: dict[int, tuple[np.ndarray, np.ndarray]],
           block: int) -> dict[str, Any]:
    """One block's properties (its free slots and the nodes without edges have none)."""
    first = block * SLOTS
    end = min(first + SLOTS, len(slots.nodes))
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0))
    parts = [rows.get(s, empty) for s in range(first, end)]
    offsets = np.concatenate([[0], np.cumsum([len(a) for a, _ in parts])]).astype(int)
    return {"block": block, "nodes": slots.nodes[first:end], "keys": slots.keys[first:end],
            "kinds": slots.kinds[first:end], "offsets": offsets.tolist(),
            "adj": np.concatenate([a for a, _ in parts]).astype(int).tolist() if parts else [],
            "prob": np.concatenate([p for _, p in parts]).tolist() if parts else []}


Edge = tuple[bool, str, bool, str, float]
"""(source is a chunk, source id, target is a chunk, target id, transition probability)."""


def fresh_projection(store: GraphStore, title_weight: float = TITLE_WEIGHT) -> set[Edge]:
    """The projection a full write would store now, as :func:`stored_projection` gives it
    (nothing is written)."""
    current = {(bool(r["chunk"]), str(r["id"])): int(r["node"])
               for r in store.run(cy.projection_nodes()).records()}
    slots = _fresh_slots(current)
    rows = _rows(store, slots, None, title_weight)
    return {(slots.kinds[u] == CHUNK, slots.keys[u], slots.kinds[int(v)] == CHUNK,
             slots.keys[int(v)], float(p)) for u, (adj, prob) in rows.items()
            for v, p in zip(adj, prob, strict=True)}


def stored_projection(store: GraphStore) -> set[Edge]:
    """The stored projection as (source is a chunk, source id, target is a chunk, target id,
    transition probability): how it is compared with a fresh build's (tests)."""
    rows = store.run(cy.read_blocks()).records()
    kinds = [int(k) for r in rows for k in r["kinds"]]
    keys = [str(k) for r in rows for k in r["keys"]]
    out = set()
    for r in rows:
        first = int(r["block"]) * SLOTS
        offsets = r["offsets"]
        for j in range(len(r["nodes"])):
            for e in range(offsets[j], offsets[j + 1]):
                v = int(r["adj"][e])
                out.add((kinds[first + j] == CHUNK, keys[first + j], kinds[v] == CHUNK,
                         keys[v], float(r["prob"][e])))
    return out


def _numeric(phrase: str) -> bool:
    return phrase.replace(",", "").replace(".", "").isdigit()


def _batches(items: Sequence[Any], size: int) -> Any:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def csr(edges: Sequence[tuple[int, int, float]], *, undirected: bool = True,
        nodes: Sequence[int] = ()) -> tuple[list[int], list[int], list[int], list[float]]:
    """The graph as ``kgdb.ppr`` reads it: ``nodes`` (ascending ids: the edges' ends and
    ``nodes``), ``offsets`` (n + 1), ``adj`` (neighbour positions) and ``prob`` (the
    transition probability w(u, v) / u's outgoing weight, parallel edges added up)."""
    ids = sorted({*nodes, *(u for u, _, _ in edges), *(v for _, v, _ in edges)})
    at = {node: i for i, node in enumerate(ids)}
    out: list[dict[int, float]] = [{} for _ in ids]
    for u, v, w in edges:
        out[at[u]][at[v]] = out[at[u]].get(at[v], 0.0) + float(w)
        if undirected:
            out[at[v]][at[u]] = out[at[v]].get(at[u], 0.0) + float(w)
    offsets, adj, prob = [0], [], []
    for row in out:
        total = sum(row.values())
        for v in sorted(row):
            adj.append(v)
            prob.append(row[v] / total)
        offsets.append(len(adj))
    return ids, offsets, adj, prob
