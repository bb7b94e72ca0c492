"""The retrieval graph kgdb keeps for personalized PageRank (``kgdb index ppr``; the solver is
kgdb/retrieve/ppr.py, the PageRank definition kgdb/retrieve/pagerank.py).

HippoRAG 2's graph without an LLM: passage nodes (the chunks), phrase nodes (the named
things the chunks contain: kgdb/documents/spans.py, merged with the knowledge graph's
entities through the gazetteer, and each chunk's document title), passage-phrase edges
(``title: true`` where the phrase is the chunk's document title), and synonym edges
between phrases whose name embeddings have a cosine of at least ``synonym_threshold``
(HippoRAG 2: 0.8; pure numbers and years get none: their embeddings are close to every
other number's). Sentences with their embeddings stand in for
HippoRAG 2's LLM-extracted facts: the question's nearest sentences seed the phrases they
name (kgdb/retrieve/ppr.py).

Statements: kgdb/cypher/pagerank.py (the graph's shape is in its docstring).

**Incremental, equal to a fresh build.** A chunk's phrases and sentences depend only on its
text, its document's title and the gazetteer, so a run (1) deletes the sentences whose chunk
is gone (the document pipeline deletes a changed or deleted document's chunks) and the
phrases no chunk contains any more (with their synonym edges), (2) extracts the chunks that
have no sentence yet, and (3) computes synonym edges only for the phrases it created,
against every phrase, from the stored vectors. Other phrases' synonym edges cannot change:
their vectors did not. Other options than the stored ones, or ``full``, rebuild from
scratch (a new synonym threshold recomputes only the synonyms). On FalkorDB the run ends by
storing the projection that ``kgdb.ppr`` reads (edge arrays of internal node ids on the
``KgdbMeta {key: 'ppr'}`` node; FalkorDB's UDF and the procedure of kgdb's Neo4j plugin):
rebuild it after loading or deleting documents, as for the document layer. Neo4j without
the plugin projects per question through GDS (kgdb/retrieve/ppr.py says why).

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
from kgdb.documents.spans import phrase_id, phrases, sentences
from kgdb.embed import Embedder
from kgdb.engine.base import GraphStore
from kgdb.link.ppr_options import FORMAT, TITLE_WEIGHT, GraphOptions, options_of
from kgdb.schema.apply import await_indexes, execute_ddl

BATCH = 500


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
    seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def build_graph(store: GraphStore, embedder: Embedder, options: GraphOptions | None = None,
                *, full: bool = False) -> GraphReport:
    """Bring the retrieval graph up to date (see the module docstring)."""
    options = (options or GraphOptions()).check()
    report = GraphReport()
    clock = _Clock(report)
    meta = store.run(cy.read_meta()).records()
    stored = json.loads(meta[0]["options"]) if meta and meta[0]["options"] else None
    if full or stored is None or {k: stored.get(k) for k in options.extraction()} != \
            options.extraction():
        report.mode = "full"
        _drop_vector_indexes(store)  # rebuilt fresh below: an approximate index that lost
        while int(store.run(cy.delete_layer(10_000)).value(0)):  # every node misses more
            pass
    else:
        report.mode = "incremental"
        report.sentences_removed = int(store.run(cy.delete_orphan_sentences()).value(0))
        report.phrases_removed = int(store.run(cy.delete_orphan_phrases()).value(0))
    resynonym = stored is not None and report.mode == "incremental" and \
        stored.get("synonym_threshold") != options.synonym_threshold
    if resynonym:
        store.run(cy.delete_synonyms())
    clock.lap("clean")
    # A full build creates the vector indexes after the extraction: populated from the
    # nodes at once, Neo4j's Lucene index of the 10x corpus's 68,527 sentences had 21
    # segments where one filled batch by batch had 41, and every query searches each
    # segment (the seed statement's searches: 280 -> 31 ms once the sentence and chunk
    # indexes had been rebuilt)
    _ensure_indexes(store, embedder, vectors=report.mode != "full")
    created = _extract(store, embedder, options, report)
    _ensure_indexes(store, embedder)
    clock.lap("extract")
    report.synonyms = _synonyms(store, embedder, options.synonym_threshold,
                                None if resynonym or report.mode == "full" else created)
    clock.lap("synonyms")
    reweigh = stored is not None and stored.get("title_weight") != options.title_weight
    unchanged = report.mode == "incremental" and not (
        report.chunks or report.phrases_removed or report.sentences_removed or resynonym
        or reweigh)
    if unchanged and meta and meta[0]["edges"] is not None:
        report.mode = "unchanged"  # the stored projection is still the graph's
        return report
    store.run(cy.write_meta(json.dumps({**asdict(options), "format": FORMAT}, sort_keys=True),
                            time.time()))
    if store.dialect.NAME == "falkordb":
        from kgdb.procedures import falkordb as udf

        if not udf.status(store).get("up_to_date"):  # kgdb.ppr runs the solver's PageRank
            udf.install(store)
    # FalkorDB's UDF and Neo4j's plugin procedure read it (GDS projects per question)
    report.projection_edges = store_projection(store, options.title_weight)
    clock.lap("projection")
    if unchanged:
        report.mode = "unchanged"
    return report


class _Clock:
    def __init__(self, report: GraphReport) -> None:
        self.report, self.t = report, time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.report.seconds[name] = round(now - self.t, 3)
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
    have = {info.key for info in store.indexes()}
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
    if wanted:
        from kgdb.dialects.base import IndexInfo

        await_indexes(store, vectors=[IndexInfo(*key, options={"dimension": embedder.dimension})
                                      for key in wanted])


def _extract(store: GraphStore, embedder: Embedder, options: GraphOptions,
             report: GraphReport) -> list[str]:
    """Phrases and sentences of the chunks without sentences; returns the created phrase
    ids."""
    todo = store.run(cy.chunks_without_sentences()).records()
    if not todo:
        return []
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
        for i, sentence in enumerate(sentences(text)):
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
    return created


def _synonyms(store: GraphStore, embedder: Embedder, threshold: float,
              new: Sequence[str] | None) -> int:
    """Synonym edges of the ``new`` phrases (None: of all) against every phrase. The vectors
    are the phrases' own (a phrase's vector is its id embedded), taken from the embedder's
    cache: reading 13,697 stored vectors back through Cypher took 30-60 s."""
    if new is not None and not new:
        return 0
    ids = sorted(str(r["id"]) for r in store.run(cy.phrase_names()).records()
                 if not _numeric(str(r["id"])))
    if not ids:
        return 0
    matrix = np.asarray(embedder.embed(ids), dtype=np.float64)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    position = {p: i for i, p in enumerate(ids)}
    todo = sorted(position[p] for p in (ids if new is None else new) if p in position)
    is_new = np.zeros(len(ids), dtype=bool)
    is_new[todo] = True
    pairs: dict[tuple[str, str], float] = {}
    for start in range(0, len(todo), 1000):
        block = todo[start:start + 1000]
        scores = matrix[block] @ matrix.T
        for row, i in enumerate(block):
            for hit in np.nonzero(scores[row] >= threshold)[0]:
                j = int(hit)
                if j == i:
                    continue
                a, b = sorted((ids[i], ids[j]))
                pairs[(a, b)] = float(scores[row, j])
    items = sorted((a, b, s) for (a, b), s in pairs.items())
    for part in _batches(items, 5000):
        store.run(cy.merge_synonyms(part))
    return len(items)


def store_projection(store: GraphStore, title_weight: float = TITLE_WEIGHT) -> int:
    """FalkorDB: write the CSR projection ``kgdb.ppr`` reads; returns its edge count (each
    direction of an edge counts)."""
    rows = store.run(cy.projection_edges(title_weight)).records()
    edges = [(int(r["a"]), int(r["b"]), float(r["w"])) for r in rows if r["a"] is not None]
    alone = [r for r in rows if r["a"] is None]
    chunks = sorted(int(r["b"]) for r in alone if r["chunk"])
    nodes, offsets, adj, prob = csr(edges, undirected=False, nodes=[int(r["b"]) for r in alone])
    store.run(cy.store_projection(nodes, offsets, adj, prob, chunks))
    return len(edges)


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
