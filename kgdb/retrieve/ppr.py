"""Graph retrieval by personalized PageRank, HippoRAG 2 without an LLM (``--mode ppr``).

Over the retrieval graph (kgdb/documents/ppr_graph.py: chunks, phrases, synonym edges), for a
question with embedding ``q``:

1. **Seeds.**
   * the phrases the question names (every phrase name found in it, any case, at word
     boundaries): weight ``question_weight / c(p)``, ``c(p)`` the chunks containing p
     (HippoRAG 2 divides a phrase's weight by its passage count the same way);
   * the phrases named by the ``sentences`` sentences nearest ``q`` (the LLM-free stand-in
     for HippoRAG 2's query-to-triple step): ``fact_weight * cos(q, sentence) / c(p)``,
     a phrase keeping its best;
   * optionally the ``names`` phrases whose name embedding is nearest ``q`` (off by
     default: it costs recall, docs/solvers/ppr.md);
   * the ``passages`` chunks nearest ``q``: ``passage_weight * n^sharpness``, n the cosine
     min-max normalised over them (HippoRAG 2: weight 0.05, sharpness 1, every passage).
2. **Personalized PageRank** (kgdb/retrieve/pagerank.py, damping 0.5) inside the database,
   over the graph's directed weighted edges (kgdb/documents/ppr_graph.py: "Edge weights"):
   FalkorDB runs ``kgdb.ppr`` (kgdb's UDF library) over the stored projection; Neo4j with
   kgdb's plugin runs its ``kgdb.ppr`` procedure over the same stored projection (kept in
   the server's memory while it is unchanged: neo4j-plugin/.../Ppr.java); Neo4j without the
   plugin runs ``gds.pageRank`` over a projection made for the question. GDS 2.13's ``sourceNodes``
   takes no weights ("Failed to parse `sourceNodes` as a List of node IDs" for
   ``[[node, weight]]``), so the projection adds a hub node with a directed edge to each
   seed weighted by the seed's weight, and PageRank is personalised to the hub alone: the
   hub gets 1 - d, passes d (1 - d) s to the seeds, and every other node's score is exactly
   d times its PageRank personalised to s (dividing by d gives it back).
3. **Ranking.** Chunks by PPR score; documents at their best chunk. With ``bridge`` > 0,
   the score is fused with one graph step from the best dense passage: the chunks of the
   documents whose titles it names (other documents') get ``bridge * link / best link``
   added to their PPR score divided by the best chunk's (link: 1 / the chunks containing
   the phrase, so the rarest name counts most). A multi-hop question's first passage names
   the next hop's subject; PageRank alone spreads that passage's mass over all its phrases
   and never lifts the next hop above the second-best dense passage (recall@2 stayed at the
   dense baseline's).

Round trips: the seeds are one statement, which also checks that the phrase names kept
between questions are the graph's (its build time); the vector searches in it are the
dialect's: Neo4j with kgdb's plugin asks ``kgdb.nearestNodes`` (exact, over an in-memory
copy of the vectors) instead of Lucene's HNSW, whose search time grows with the index's
segments. PageRank is a second statement, which also returns the evidence's paths on
FalkorDB and on Neo4j with the plugin (on Neo4j without it, GDS's projection, PageRank and
the paths are statements of their own).

Defaults are tuned on MuSiQue-100 (the README's ablation shows each against the paper's).
"""

from __future__ import annotations

import unicodedata
import uuid
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from kgdb.cypher import pagerank as cy
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.errors import KgdbError
from kgdb.graph_cache import GraphCache
from kgdb.link.gazetteer import NameIndex
from kgdb.llm import ChatClient
from kgdb.retrieve.evidence import Evidence, Json, Passage, documents_of
from kgdb.retrieve.keyword import lexical_ready, lexical_rows, min_max, missing_index
from kgdb.retrieve.pagerank import DAMPING
from kgdb.retrieve.solver import PassageOptions, Solver, SolverOptions
from kgdb.stored.ppr_options import GraphOptions, options_of


class PprError(KgdbError):
    """Graph retrieval cannot run (no retrieval graph)."""


class PprOptions(PassageOptions, SolverOptions):
    """Options of ``--solver ppr`` (the module docstring defines each step)."""

    solver: Literal["ppr"] = "ppr"
    damping: float = Field(DAMPING, ge=0.0, lt=1.0, description=(
        "ppr: PageRank's damping factor (HippoRAG 2: 0.5)"))
    seed_passages: int = Field(100, ge=0, le=10000, description=(
        "ppr: chunks nearest the question seeded by their vector score"))
    passage_weight: float = Field(0.3, ge=0.0, description=(
        "ppr: weight of the best passage seed (HippoRAG 2: 0.05)"))
    sharpness: float = Field(3.0, gt=0.0, le=100.0, description=(
        "ppr: exponent on the min-max normalised passage score (HippoRAG 2: 1)"))
    lexical_seeds: int = Field(100, ge=0, le=10000, description=(
        "ppr: chunks the lexical index finds for the question seeded by their full-text "
        "score (kgdb index fulltext)"))
    lexical_seed_weight: float = Field(0.0, ge=0.0, le=100.0, description=(
        "ppr: weight of the best lexical passage seed (min-max normalised full-text score "
        "to the power sharpness, like the dense seeds; 0: off)"))
    sentences: int = Field(3, ge=0, le=1000, description=(
        "ppr: nearest sentences whose phrases are seeds (HippoRAG 2: 5 facts)"))
    fact_weight: float = Field(1.0, ge=0.0, description=(
        "ppr: weight of a sentence seed's cosine (HippoRAG 2: 1)"))
    question_weight: float = Field(0.2, ge=0.0, description=(
        "ppr: weight of a phrase the question names (HippoRAG 2 without its LLM: 0)"))
    names: int = Field(0, ge=0, le=1000, description=(
        "ppr: phrases nearest the question by name vector, seeded by their cosine"))
    bridge: float = Field(0.25, ge=0.0, le=10.0, description=(
        "ppr: boost of the documents whose title the best dense passage names (0: off)"))
    epsilon: float = Field(1e-5, gt=0.0, lt=1.0, description=(
        "ppr, FalkorDB and Neo4j's plugin: residual per unit of degree a node may keep "
        "unsettled"))
    iterations: int = Field(100, ge=1, le=1000, description=(
        "ppr, Neo4j without kgdb's plugin: GDS's iteration cap"))
    tolerance: float = Field(1e-9, ge=0.0, description=(
        "ppr, Neo4j without kgdb's plugin: GDS's tolerance"))


class PprSolver(Solver[PprOptions]):
    """HippoRAG 2's personalized PageRank over passages and phrases, without an LLM."""

    name = "ppr"
    summary = ("personalized PageRank over passages and phrases, seeded by the question "
               "(HippoRAG 2 without an LLM; kgdb index ppr)")
    options = PprOptions
    indexes = ("chunks", "ppr")
    ranks_by_passages = True

    def retrieve(self, store: GraphStore, embedder: Embedder, question: str,
                 options: PprOptions, llm: ChatClient | None = None) -> Evidence:
        evidence, view, vector = self.start(store, embedder, question, "pagerank")
        retrieve_ppr(view, question, vector, options, evidence)
        return evidence



GRAPH_CACHE_ENTRIES = 16
"""Retrieval graphs whose phrase names are kept, the least recently used dropped first: a
MuSiQue-sized graph's names take a few MB, so 16 stay near 100 MB, and the service keeps at
most ``max_tenants`` (32) stores open (docs/operations.md, "Caches", has the measurement)."""

_GRAPHS: GraphCache[tuple[NameIndex, GraphOptions, bool]] = GraphCache(
    "ppr_graph", GRAPH_CACHE_ENTRIES)
"""Per graph (:func:`kgdb.graph_cache.graph_key`), versioned by the retrieval graph's build
time: another graph's questions never evict or re-read it, its own rebuild does."""


def _kept_graph(store: GraphStore) -> tuple[float, tuple[NameIndex, GraphOptions, bool]] | None:
    """What :func:`retrieval_graph` last read for this store's graph (its build time and the
    graph), unchecked: the caller checks the build time (:func:`kgdb.cypher.pagerank.seeds`
    with ``built``)."""
    kept = _GRAPHS.peek(store)
    return (float(kept[0]), kept[1]) if kept is not None else None  # type: ignore[arg-type]


def retrieval_graph(store: GraphStore) -> tuple[NameIndex, GraphOptions, bool]:
    """The phrase names (any case), the options the retrieval graph was built with and
    whether its projection is stored, kept per graph while the graph is not rebuilt."""
    meta = store.run(cy.read_meta()).records()
    if not meta or meta[0]["built"] is None:
        raise PprError(f"no retrieval graph in {store.address}: build it first "
                       "(kgdb index ppr)")
    row = meta[0]

    def read() -> tuple[NameIndex, GraphOptions, bool]:
        names = [str(r["id"]) for r in store.run(cy.phrase_names()).records()]
        if not names:
            raise PprError(f"the retrieval graph in {store.address} is empty: load documents "
                           "(kgdb load documents PATH), then run kgdb index ppr")
        return (NameIndex(((n, n, []) for n in names), ignore_case=True),
                options_of(str(row["options"] or "{}")), row["edges"] is not None)

    return _GRAPHS.get(store, float(row["built"]), read)


def retrieve_ppr(store: GraphStore, question: str, vector: Sequence[float],
                 options: PprOptions, evidence: Evidence) -> None:
    """Seeds, PageRank and the paths into ``evidence`` (see the module docstring)."""
    o = options
    d = store.dialect
    seeds: dict[int, float] = {}
    phrase_weight: dict[str, tuple[float, int, str, str]] = {}

    def seed_phrase(node: int, pid: str, chunks: int, weight: float, kind: str,
                    source: str) -> None:
        weight /= max(int(chunks), 1)
        if weight > phrase_weight.get(pid, (0.0,))[0]:
            phrase_weight[pid] = (weight, node, kind, source)

    with evidence.timings_ms.phase("seeds"):
        kept = _kept_graph(store)  # checked by the seed statement itself (one round trip
        # fewer per question: docs/design/ppr-latency.md), else read first
        gazetteer, graph, projected = kept[1] if kept else retrieval_graph(store)
        while True:
            # phrase ids are NFC (kgdb/documents/spans.py): an NFD question names them too
            named = list(dict.fromkeys(
                i for i, *_ in gazetteer.find(unicodedata.normalize("NFC", question)))) \
                if o.question_weight > 0 else []
            wanted = o.seed_passages if o.passage_weight > 0 else 0
            statement = cy.seeds(d, vector, named=named,
                                 sentences=o.sentences if o.fact_weight > 0 else 0,
                                 names=o.names, passages=wanted, bridges=o.bridge > 0,
                                 built=kept is not None)
            rows: dict[str, list[Any]] = {}
            for r in store.run(statement).records() if statement is not None else []:
                rows.setdefault(str(r["kind"]), []).append(r)
            if kept is None or (statement is not None and [
                    float(r["distance"]) for r in rows.get("built", [])] == [kept[0]]):
                break
            kept = None  # rebuilt (or deleted) since: read it again, seed again
            gazetteer, graph, projected = retrieval_graph(store)
        for r in rows.get("question", []):
            seed_phrase(r["node"], r["id"], r["chunks"], o.question_weight, "question", "")
        for r in sorted(rows.get("sentence", []), key=lambda r: (r["distance"], r["id"])):
            similarity = 1.0 - float(r["distance"]) ** 2 / 2.0
            for node, pid, chunks in r["phrases"]:
                seed_phrase(node, pid, chunks, o.fact_weight * similarity, "sentence",
                            str(r["text"]))
        for r in rows.get("name", []):
            seed_phrase(r["node"], r["id"], r["chunks"],
                        1.0 - float(r["distance"]) ** 2 / 2.0, "name", "")
        shown: list[Json] = []
        for pid, (weight, node, kind, source) in sorted(phrase_weight.items()):
            seeds[int(node)] = seeds.get(int(node), 0.0) + weight
            shown.append({"kind": kind, "phrase": pid, "weight": round(weight, 6),
                          "source": source})
        dense = sorted(rows.get("passage", []), key=lambda r: (r["distance"], r["id"]))
        cos = [1.0 - float(r["distance"]) ** 2 / 2.0 for r in dense]
        low, high = (min(cos), max(cos)) if cos else (0.0, 0.0)
        for r, c in zip(dense, cos, strict=True):
            weight = o.passage_weight * ((c - low) / (high - low) if high > low
                                         else 1.0) ** o.sharpness
            if weight > 0:
                seeds[int(r["node"])] = seeds.get(int(r["node"]), 0.0) + weight
                shown.append({"kind": "passage", "chunk": str(r["id"]),
                              "weight": round(weight, 6)})
        if o.lexical_seed_weight > 0 and o.lexical_seeds > 0:
            if lexical_ready(store):
                hits = lexical_rows(store, question, o.lexical_seeds)
                for r, n in zip(hits, min_max([float(r["score"]) for r in hits]),
                                strict=True):
                    weight = o.lexical_seed_weight * n ** o.sharpness
                    if weight > 0:
                        seeds[int(r["node"])] = seeds.get(int(r["node"]), 0.0) + weight
                        shown.append({"kind": "lexical", "chunk": str(r["chunk"]),
                                      "weight": round(weight, 6)})
            else:
                evidence.detail["lexical"] = missing_index(store)
        evidence.detail["seeds"] = shown
        boost: dict[int, float] = {}
        bridged: list[tuple[str, str, str, float]] = []  # from, phrase, chunk, boost
        links = sorted(rows.get("bridge", []), key=lambda r: (r["chunks"], r["id"], r["via"]))
        for r in links:  # rarest phrase first: its link 1 / chunks is the best
            value = o.bridge * float(links[0]["chunks"]) / max(int(r["chunks"]), 1)
            if value > boost.get(int(r["node"]), 0.0):
                boost[int(r["node"])] = value
                bridged.append((str(r["text"]), str(r["via"]), str(r["id"]), round(value, 6)))
        if o.bridge > 0:
            evidence.detail["bridges"] = [{"from": a, "phrase": p, "chunk": c, "boost": b}
                                          for a, p, c, b in bridged]
    if not seeds:
        return
    phrases = sorted(phrase_weight)
    with evidence.timings_ms.phase("pagerank"):
        ranked = _pagerank(store, seeds, boost, graph, projected, o, phrases)
    evidence.passages = [Passage(str(r["chunk"]), str(r["document"]), str(r["text"] or ""),
                                 float(r["score"]), r.get("source")) for r in ranked]
    evidence.documents = documents_of(evidence.passages)
    if phrases and evidence.passages:
        with evidence.timings_ms.phase("paths"):
            best = [p.id for p in evidence.passages[:PATHS_OF]]
            found = ranked[0].get("paths")  # PageRank's statement brings them along
            if found is None:
                found = [[r["chunk"], r["phrase"], r["via"]] for r in
                         store.run(cy.seed_paths(best, phrases)).records()]
            paths: dict[str, list[Json]] = {}
            for chunk, phrase, via in found:
                step: list[Json] = [str(phrase)]
                if via:
                    step.append(str(via))
                paths.setdefault(str(chunk), []).append([*step, str(chunk)])
            for start, phrase, chunk, _ in bridged:
                if chunk in best:
                    paths.setdefault(chunk, []).append([start, phrase, chunk])
            evidence.detail["paths"] = dict(paths)


PATHS_OF = 10
"""The evidence shows the paths into this many of the best passages."""


def _pagerank(store: GraphStore, seeds: dict[int, float], boost: dict[int, float],
              built: GraphOptions, projected: bool, o: PprOptions,
              phrases: list[str]) -> list[dict[str, Any]]:
    """The ranked chunks; on FalkorDB and on Neo4j with kgdb's plugin the first row also
    carries the seed ``phrases``' paths (``paths``), saving the round trip of
    :func:`cy.seed_paths`."""
    if store.dialect.PROCEDURES == "udf":  # FalkorDB: kgdb's UDF library has kgdb.ppr
        return [dict(r) for r in store.run(cy.udf_ppr_chunks(
            seeds, damping=o.damping, epsilon=o.epsilon, k=o.passages, boost=boost,
            paths_from=phrases, paths_of=PATHS_OF, dialect=store.dialect)).records()]
    if store.dialect.PPR is not None and projected:  # kgdb's Neo4j plugin
        return [dict(r) for r in store.run(cy.native_ppr_chunks(
            store.dialect, seeds, damping=o.damping, epsilon=o.epsilon, k=o.passages,
            boost=boost, paths_from=phrases, paths_of=PATHS_OF)).records()]
    graph = f"kgdb_ppr_{uuid.uuid4().hex[:12]}"
    try:
        store.run(cy.gds_project_seeded(graph, seeds, built.title_weight))
        return [dict(r) for r in store.run(cy.gds_ppr_hub(
            graph, damping=o.damping, iterations=o.iterations, tolerance=o.tolerance,
            k=o.passages, boost=boost)).records()]
    finally:
        store.run(cy.gds_drop_named(graph))
