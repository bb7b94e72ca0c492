"""Personalized PageRank inside both engines (kgdb/retrieve/pagerank.py): kgdb.ppr on
FalkorDB and GDS with a seed hub on Neo4j equal the numpy reference within 1e-6 on random
weighted graphs with dangling nodes and disconnected parts, and rank alike; the retrieval
graph after a document update or delete equals a fresh build; the solver ranks a corpus's
passages and shows its seeds, paths and statements."""

from __future__ import annotations

import json
import math
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgdb.cypher import pagerank as cy
from kgdb.documents.ppr_graph import (
    build_graph,
    csr,
    fresh_projection,
    store_projection,
    stored_projection,
)
from kgdb.procedures import falkordb as udf
from kgdb.retrieve.pagerank import reference
from kgdb.retrieve.ppr import PprOptions, PprSolver
from kgdb.statement import Statement
from kgdb.stored.ppr_options import GraphOptions

pytestmark = pytest.mark.live

GRAPHS = st.tuples(
    st.lists(st.tuples(st.integers(0, 14), st.integers(0, 14),
                       st.floats(0.05, 4.0, allow_nan=False)), max_size=40),
    st.dictionaries(st.integers(0, 17), st.floats(0.01, 2.0, allow_nan=False), min_size=1,
                    max_size=6),
    st.booleans(),
    st.sampled_from([0.5, 0.85, 0.3]))


@pytest.fixture
def library(falkordb_store: Any) -> Any:
    udf.install(falkordb_store)
    yield falkordb_store
    udf.drop(falkordb_store)


@given(GRAPHS)
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
def test_udf_equals_reference(library: Any, graph: Any) -> None:
    """Directed graphs have dangling nodes; seeds 15-17 are isolated; self-loops and
    parallel edges occur."""
    edges, seeds, undirected, damping = graph
    nodes, offsets, adj, prob = csr(edges, undirected=undirected, nodes=list(seeds))
    rows = library.run(cy.udf_ppr(nodes, offsets, adj, prob, seeds, damping=damping,
                                  epsilon=1e-13, k=100)).records()
    got = {int(r["node"]): float(r["score"]) for r in rows}
    expected = reference(edges, seeds, damping=damping, undirected=undirected)
    for node in nodes:
        assert math.isclose(got.get(node, 0.0), expected[node], abs_tol=1e-6)
    scores = [float(r["score"]) for r in rows]
    assert scores == sorted(scores, reverse=True)


def test_udf_refuses_bad_input(library: Any) -> None:
    from kgdb.errors import StatementError

    good = ([1, 2], [0, 1, 2], [1, 0], [1.0, 1.0])
    none: tuple[list[int], list[float]] = ([], [])
    for args, message in (((*good, [3], [1.0], 0.5, 1e-9, None, 5, *none), "not a node"),
                          (([1, 2], [0, 1], [1, 0], [1.0, 1.0], [1], [1.0], 0.5, 1e-9,
                            None, 5, *none), "do not describe"),
                          ((*good, [1], [1.0], 1.0, 1e-9, None, 5, *none), "damping"),
                          ((*good, [1], [-1.0], 0.5, 1e-9, None, 5, *none), "non-negative"),
                          ((*good, [1], [1.0], 0.5, 0.0, None, 5, *none), "epsilon"),
                          (([1, 2], [0, 1, 2], [5, 0], [1.0, 1.0], [1], [1.0], 0.5, 1e-9,
                            None, 5, *none), "outside"),
                          ((*good, [1], [1.0], 0.5, 1e-9, None, 5, [1], []), "differ"),
                          ((*good, [1], [1.0], 0.5, 1e-9, None, 5, [1], ["x"]), "numbers")):
        params = dict(zip("abcdefghijkl", args, strict=True))
        with pytest.raises(StatementError, match=message):
            library.run("RETURN kgdb.ppr($a, $b, $c, $d, $e, $f, $g, $h, $i, $j, $k, $l) "
                        "AS v", params)
    with pytest.raises(StatementError, match="is not kept here"):  # blocks null, not cached
        library.run("RETURN kgdb.pprStored('never-written', null, [], [], [], 0.5, 1e-9, 5, "
                    "[], []) AS v")
    # blocks [version, nodes (-1: a free slot), kinds (1: a chunk), offsets, adj, prob]
    block = "['b1', [7, -1, 9], [2, 0, 1], [0, 1, 1, 2], [2, 0], [1.0, 1.0]]"
    stored = library.run(f"RETURN kgdb.pprStored('p1', ['b1'], [{block}], [7], [1.0], 0.5, "
                         "1e-12, 5, [], []) AS v").value(0)
    assert [r["node"] for r in stored] == [9] and stored[0]["score"] == pytest.approx(1 / 3)
    with pytest.raises(StatementError, match="not kept here: pass it"):  # b1 kept, b2 not
        library.run("RETURN kgdb.pprStored('p2', ['b1', 'b2'], [], [7], [1.0], 0.5, 1e-9, 5, "
                    "[], []) AS v")
    with pytest.raises(StatementError, match="does not describe"):
        library.run("RETURN kgdb.pprStored('p3', ['b3'], [['b3', [7], [2], [0, 2], [0], "
                    "[1.0]]], [7], [1.0], 0.5, 1e-9, 5, [], []) AS v")
    with pytest.raises(StatementError, match="outside"):
        library.run("RETURN kgdb.pprStored('p4', ['b4'], [['b4', [7], [2], [0, 1], [3], "
                    "[1.0]]], [7], [1.0], 0.5, 1e-9, 5, [], []) AS v")


def _write_graph(store: Any, edges: list[tuple[int, int, float]], chunks: int,
                 nodes: int) -> dict[int, int]:
    """Nodes 0..chunks-1 are chunks, the rest phrases; an edge between a phrase and a chunk
    is phrase_in (weight 2: a title edge, else 1), between phrases a synonym with that
    score. Returns node -> internal id."""
    ids = list(range(nodes))
    store.run(Statement("UNWIND $ids AS i\nFOREACH (_ IN CASE WHEN i < $chunks THEN [1] "
                        "ELSE [] END | CREATE (:Chunk {id: toString(i), document: 'd', n: i}))\n"
                        "FOREACH (_ IN CASE WHEN i >= $chunks THEN [1] ELSE [] END | "
                        "CREATE (:Phrase {id: toString(i), n: i}))",
                        {"ids": ids, "chunks": chunks}, write=True))
    store.run(Statement("UNWIND $rows AS e\nMATCH (a:Phrase {n: e[0]})\n"
                        "MATCH (b) WHERE (b:Chunk OR b:Phrase) AND b.n = e[1]\n"
                        "FOREACH (_ IN CASE WHEN b:Chunk THEN [1] ELSE [] END | "
                        "CREATE (a)-[:phrase_in {title: e[2] = 2.0}]->(b))\n"
                        "FOREACH (_ IN CASE WHEN b:Phrase THEN [1] ELSE [] END | "
                        "CREATE (a)-[:synonym {score: e[2]}]->(b))",
                        {"rows": [[u, v, w] for u, v, w in edges]}, write=True))
    store.run(cy.write_meta("{}", 0.0))
    return {int(r["n"]): int(r["id"]) for r in store.run(
        "MATCH (n) WHERE n:Chunk OR n:Phrase RETURN n.n AS n, id(n) AS id").records()}


def _retrieval_edges(draw: Any) -> tuple[list[tuple[int, int, float]], int, int,
                                         dict[int, float]]:
    chunks = draw(st.integers(1, 8))
    phrases = draw(st.integers(1, 8))
    links = draw(st.lists(st.tuples(st.integers(chunks, chunks + phrases - 1),
                                    st.integers(0, chunks - 1)), min_size=1, max_size=20,
                           unique=True))
    titles = draw(st.lists(st.booleans(), min_size=len(links), max_size=len(links)))
    synonyms = draw(st.lists(st.tuples(st.integers(chunks, chunks + phrases - 1),
                                       st.integers(chunks, chunks + phrases - 1),
                                       st.floats(0.8, 1.0)), max_size=6,
                             unique_by=lambda t: (t[0], t[1])))
    edges = [(p, c, 2.0 if t else 1.0) for (p, c), t in zip(links, titles, strict=True)] + \
        [(a, b, s) for a, b, s in synonyms if a != b]
    seeds = draw(st.dictionaries(st.integers(0, chunks + phrases - 1),
                                 st.floats(0.01, 1.0), min_size=1, max_size=5))
    return edges, chunks, phrases, seeds


def _walked(edges: list[tuple[int, int, float]], chunks: int,
            title_weight: float) -> list[tuple[int, int, float]]:
    """The directed edges PageRank walks (kgdb/documents/ppr_graph.py: "Edge weights"), from
    :func:`_write_graph`'s edges."""
    named = {a for a, b, w in edges if b < chunks and w == 2.0}
    out = []
    for a, b, w in edges:
        if b < chunks:  # phrase_in
            own = w == 2.0
            out += [(a, b, title_weight if own else 1.0),
                    (b, a, title_weight if a in named and not own else 1.0)]
        else:
            out += [(a, b, w), (b, a, w)]
    return out


@st.composite
def retrieval_graphs(draw: Any) -> Any:
    return _retrieval_edges(draw)


@st.composite
def boosted_graphs(draw: Any) -> Any:
    edges, chunks, phrases, seeds = _retrieval_edges(draw)
    title_weight = draw(st.sampled_from([1.0, 5.0, 20.0]))
    boost = draw(st.dictionaries(st.integers(0, chunks - 1), st.floats(0.0, 1.0),
                                 max_size=3))
    return edges, chunks, phrases, seeds, title_weight, boost


def _engine_ppr(store: Any, by_id: dict[int, float], title_weight: float,
                boost: dict[int, float]) -> list[list[Any]]:
    """The solver's own PageRank statements on either engine: FalkorDB's UDF; on Neo4j GDS
    and, where kgdb's plugin is loaded, its kgdb.ppr procedure (each path's rows)."""
    store_projection(store, title_weight)
    if store.dialect.NAME == "falkordb":
        udf.install(store)
        return [store.run(cy.udf_ppr_chunks(by_id, damping=0.5, epsilon=1e-13, k=100,
                                            boost=boost)).records()]
    out = []
    if store.dialect.PPR is not None:
        out.append(store.run(cy.native_ppr_chunks(store.dialect, by_id, damping=0.5,
                                                  epsilon=1e-13, k=100, boost=boost)).records())
    try:
        store.run(cy.gds_project_seeded("kgdb_ppr_test", by_id, title_weight))
        out.append(store.run(cy.gds_ppr_hub("kgdb_ppr_test", damping=0.5, iterations=1000,
                                            tolerance=1e-15, k=100, boost=boost)).records())
    finally:
        store.run(cy.gds_drop_named("kgdb_ppr_test"))
    return out


@given(boosted_graphs())
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_boosted_ranking_on_both_engines(store: Any, graph: Any) -> None:
    """With a boost, a chunk's score is its PageRank over the best chunk's plus its boost,
    boosted chunks are rows even unreached (if connected: GDS projects only nodes with
    edges; a bridge always has its title edge), and the ranking follows the score."""
    edges, chunks, phrases, seeds, title_weight, boost = graph
    store.run(Statement("MATCH (n) DETACH DELETE n", write=True))
    internal = _write_graph(store, edges, chunks, chunks + phrases)
    by_id = {internal[n]: w for n, w in seeds.items()}
    expected = reference(_walked(edges, chunks, title_weight), seeds, damping=0.5,
                         undirected=False)
    top = max((expected.get(c, 0.0) for c in range(chunks)), default=0.0)
    connected = {b for _, b, _ in edges}
    for rows in _engine_ppr(store, by_id, title_weight,
                            {internal[c]: b for c, b in boost.items()}):
        got = {int(r["chunk"]): (float(r["score"]), float(r["pagerank"])) for r in rows}
        for chunk in range(chunks):
            pagerank = expected.get(chunk, 0.0)
            if pagerank > 1e-9 or (chunk in boost and chunk in connected):
                assert chunk in got
            if chunk not in got:
                continue
            score, found = got[chunk]
            assert math.isclose(found, pagerank, abs_tol=1e-6)
            if boost and top > 1e-3:
                assert math.isclose(score, pagerank / top + boost.get(chunk, 0.0),
                                    abs_tol=1e-5)
        scores = [float(r["score"]) for r in rows]
        assert scores == sorted(scores, reverse=True)


@given(boosted_graphs())
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_both_engines_equal_reference_on_the_retrieval_graph(store: Any, graph: Any) -> None:
    """The solver's own statements: the stored projection and kgdb.ppr on FalkorDB; on
    Neo4j the plugin's kgdb.ppr over the same projection and the seeded GDS projection;
    over the title-weighted directed edges (isolated chunks and phrases are the
    disconnected and dangling parts); each in the reference's order."""
    edges, chunks, phrases, seeds, title_weight, _ = graph
    store.run(Statement("MATCH (n) DETACH DELETE n", write=True))
    internal = _write_graph(store, edges, chunks, chunks + phrases)
    by_id = {internal[n]: w for n, w in seeds.items()}
    expected = reference(_walked(edges, chunks, title_weight), seeds, damping=0.5,
                         undirected=False)
    paths = _engine_ppr(store, by_id, title_weight, {})
    assert len(paths) == (2 if store.dialect.PPR else 1)
    exact = sorted((c for c in range(chunks) if expected.get(c, 0.0) > 1e-9),
                   key=lambda c: (-expected[c], str(c)))
    distinct = all(abs(expected[a] - expected[b]) > 1e-6 for a, b in pairwise(exact))
    for rows in paths:
        got = {int(r["chunk"]): float(r["score"]) for r in rows}
        for chunk in range(chunks):
            assert math.isclose(got.get(chunk, 0.0), expected.get(chunk, 0.0), abs_tol=1e-6)
        if distinct:  # no near-ties: the same order as the reference (so on both engines)
            assert [int(r["chunk"]) for r in rows] == exact


CORPUS = [
    {"id": "snow", "title": "Hank Snow",
     "text": "Hank Snow was a country singer. He lived in Madison, Tennessee until he died "
             "in 1999. His song \"Hello Love\" topped the charts in 1974."},
    {"id": "tennessee", "title": "Tennessee",
     "text": "Tennessee is a state of the United States. North Carolina borders Tennessee "
             "to the east."},
    {"id": "publix", "title": "Publix",
     "text": "Publix operates 1,300 stores in the South. North Carolina has 60 Publix "
             "stores."},
    {"id": "other", "title": "Apple Pie",
     "text": "An apple pie is a pie. It is often served in the United States."},
]


def _load(store: Any, embedder: Any, tmp_path: Path, records: list[dict[str, str]]) -> None:
    from kgdb.documents.pipeline import DocumentOptions, load_documents

    path = tmp_path / "corpus.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    load_documents(store, embedder, [path], options=DocumentOptions(
        extract="gazetteer", title_entity=True), progress=False)


def _state(store: Any) -> tuple[list[Any], list[Any], list[Any]]:
    edges = sorted((r["a"], r["b"], round(float(r["weight"]), 6))
                   for r in store.run(cy.layer_edges()).records())
    sentences = [dict(r) for r in store.run(cy.layer_sentences()).records()]
    phrases = sorted(str(r["id"]) for r in store.run(cy.phrase_names()).records())
    return edges, sentences, phrases


def test_update_and_delete_equal_a_fresh_build(store: Any, embedder: Any,
                                               tmp_path: Path) -> None:
    from kgdb.documents.pipeline import delete_documents

    options = GraphOptions(synonym_threshold=0.75)
    _load(store, embedder, tmp_path, CORPUS)
    first = build_graph(store, embedder, options)
    assert first.mode == "full" and first.phrases_created and first.sentences_created
    assert build_graph(store, embedder, options).mode == "unchanged"
    changed = [dict(CORPUS[0], text="Hank Snow was a Canadian singer who moved to Nashville, "
                                    "Tennessee. He recorded \"I'm Movin' On\" in 1950."),
               *CORPUS[1:3]]
    _load(store, embedder, tmp_path, changed)  # updates snow, keeps the others
    delete_documents(store, ["publix"])
    report = build_graph(store, embedder, options)
    assert report.mode == "incremental" and report.chunks == 1 and report.phrases_removed
    incremental = _state(store)
    rebuilt = build_graph(store, embedder, options, full=True)
    assert rebuilt.mode == "full"
    assert _state(store) == incremental
    assert any(b == "snow#0000#000" and a == "nashville" for a, b, _ in incremental[0])
    assert not any(a == "publix" for a, _, _ in incremental[0])


def _same_projection(store: Any, title_weight: float) -> None:
    """The stored projection equals a full write's, edge for edge by chunk and phrase id,
    probabilities within 1e-12."""
    stored = {e[:4]: e[4] for e in stored_projection(store)}
    fresh = {e[:4]: e[4] for e in fresh_projection(store, title_weight)}
    assert stored.keys() == fresh.keys()
    assert all(abs(stored[k] - fresh[k]) <= 1e-12 for k in fresh)


QUESTION = "Which state borders the east of the state where Hank Snow died?"


def _passages(store: Any, embedder: Any) -> list[tuple[str, float]]:
    evidence = PprSolver().retrieve(store, embedder, QUESTION,
                                    PprOptions(seed_passages=4, sentences=2, epsilon=1e-10))
    return [(p.id, p.score or 0.0) for p in evidence.passages]


def test_projection_update_equals_a_full_write(store: Any, embedder: Any,
                                               tmp_path: Path) -> None:
    """After each incremental run (a new document whose title is an existing phrase, an
    update with a delete, the title's document deleted, a delete and then an insert that may
    take the deleted nodes' internal ids) only some blocks are rewritten and the stored
    projection equals a full write's; PageRank ranks alike over both; and a full rebuild of
    the graph stores the same projection."""
    from kgdb.documents.pipeline import delete_documents

    if store.dialect.NAME == "falkordb":
        udf.install(store)
    options = GraphOptions(synonym_threshold=0.75, title_weight=5.0)
    _load(store, embedder, tmp_path, CORPUS)
    assert build_graph(store, embedder, options).projection["mode"] == "full"
    _same_projection(store, 5.0)
    song = {"id": "song", "title": "Hello Love",
            "text": "Hello Love is a song recorded by Hank Snow in 1974."}
    steps: list[tuple[list[dict[str, str]], list[str]]] = [
        ([*CORPUS, song], []),  # "hello love", a phrase of Hank Snow's chunk, becomes a title
        ([dict(CORPUS[0], text="Hank Snow was a Canadian singer who moved to Nashville, "
                               "Tennessee. He recorded \"Hello Love\" in 1950."),
          *CORPUS[1:], song], ["publix"]),
        ([], ["song"]),  # and stops being one
        ([], ["other"]),
        ([{"id": "pie", "title": "Cherry Pie", "text": "A cherry pie is a pie baked in "
                                                        "Michigan and served in Tennessee. "
                                                        "Detroit, Lansing and Flint bake it."}],
         []),  # (enough new phrases to take the deleted nodes' ids on FalkorDB)
    ]
    def nodes() -> set[int]:
        return {int(r["node"]) for r in store.run(cy.projection_nodes()).records()}

    last = seen = nodes()
    reused = False
    for records, deletions in steps:
        if records:
            _load(store, embedder, tmp_path, records)
        if deletions:
            delete_documents(store, deletions)
        report = build_graph(store, embedder, options)
        assert report.mode == "incremental"
        assert report.projection["mode"] == "incremental"
        assert 0 < report.projection["blocks"] <= report.projection["total"]
        _same_projection(store, 5.0)
        snow = {b: p for _, a, _, b, p in stored_projection(store) if a == "snow#0000#000"}
        assert snow["hello love"] == pytest.approx(  # 5: another document's title
            (5.0 if song in records else 1.0) * snow["hank snow"])
        now = nodes()  # a chunk or phrase with a deleted one's internal id
        reused |= bool((now - last) & seen)
        last, seen = now, seen | now
        incremental = _passages(store, embedder)
        store_projection(store, 5.0)  # a full write
        full = _passages(store, embedder)
        assert [c for c, _ in incremental] == [c for c, _ in full]
        assert all(math.isclose(a, b, rel_tol=1e-6) for (_, a), (_, b) in
                   zip(incremental, full, strict=True))
    if store.dialect.NAME == "falkordb":
        assert reused
    kept = stored_projection(store)
    build_graph(store, embedder, options, full=True)
    assert {e[:4] for e in stored_projection(store)} == {e[:4] for e in kept}


def test_an_interrupted_update_rewrites_the_projection(store: Any, embedder: Any,
                                                       tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that extracted a new document's chunk but stopped before writing the projection
    leaves it pending: the next run extracts nothing, and writes the projection whole."""
    from kgdb.documents import ppr_graph

    _load(store, embedder, tmp_path, CORPUS[:2])
    build_graph(store, embedder)
    _load(store, embedder, tmp_path, CORPUS[:3])

    def stop(*_: Any, **__: Any) -> None:
        raise RuntimeError("stopped")

    monkeypatch.setattr(ppr_graph, "store_projection", stop)
    with pytest.raises(RuntimeError, match="stopped"):
        build_graph(store, embedder)
    monkeypatch.undo()
    report = build_graph(store, embedder)
    assert report.chunks == 0 and report.projection["mode"] == "full"
    _same_projection(store, GraphOptions().title_weight)
    assert any(a == "publix" for _, a, _, _, _ in stored_projection(store))
    assert build_graph(store, embedder).mode == "unchanged"


def test_solver_ranks_passages_with_evidence(store: Any, embedder: Any,
                                             tmp_path: Path) -> None:
    if store.dialect.NAME == "falkordb":
        udf.install(store)
    _load(store, embedder, tmp_path, CORPUS)
    build_graph(store, embedder)
    question = ("How many Publix stores are in the state that borders the east of the state "
                "where Hello Love's performer died?")
    evidence = PprSolver().retrieve(store, embedder, question,
                                    PprOptions(seed_passages=4, sentences=2))
    documents = [d.id for d in evidence.documents]
    assert set(documents[:3]) == {"publix", "snow", "tennessee"}
    assert documents[-1] == "other"
    seeds = evidence.detail["seeds"]
    assert isinstance(seeds, list)
    kinds = {s["kind"] for s in seeds if isinstance(s, dict)}
    assert {"question", "sentence", "passage"} <= kinds
    assert any(s.get("phrase") == "publix" for s in seeds if isinstance(s, dict))
    publix_chunk = next(p.id for p in evidence.passages if p.document == "publix")
    paths = evidence.detail["paths"]
    assert isinstance(paths, dict) and ["publix", publix_chunk] in paths[publix_chunk]
    assert any("gds.pageRank" in s.text or "kgdb.ppr" in s.text for s in evidence.statements)
    # the bridge: the best dense passage (Hank Snow's) names Tennessee, another document's
    # title; that document's chunk is boosted to the best PageRank's score plus the bridge
    hop = PprSolver().retrieve(store, embedder, "Which state borders the east of the state "
                               "where the singer of Hello Love died?",
                               PprOptions(seed_passages=4, sentences=2, bridge=0.25))
    bridges = hop.detail["bridges"]
    assert isinstance(bridges, list) and bridges
    tennessee = next(p for p in hop.passages if p.document == "tennessee")
    bridge = next(b for b in bridges if isinstance(b, dict) and b["chunk"] == tennessee.id)
    assert bridge == {"from": "snow#0000#000", "phrase": "tennessee", "chunk": tennessee.id,
                      "boost": 0.25}
    hop_paths = hop.detail["paths"]
    assert isinstance(hop_paths, dict)
    assert ["snow#0000#000", "tennessee", tennessee.id] in hop_paths[tennessee.id]
    assert tennessee.score is not None and 0.25 < tennessee.score <= 1.25
    plain = PprSolver().retrieve(store, embedder, hop.question,
                                 PprOptions(seed_passages=4, sentences=2, bridge=0))
    assert "bridges" not in plain.detail and max(p.score or 0 for p in plain.passages) < 1
    assert evidence.score_kind == "pagerank" and "pagerank" in evidence.timings_ms


PEOPLE = [("Ada Lovelace", "London", "mathematics"), ("Alan Turing", "Manchester", "computing"),
          ("Marie Curie", "Paris", "radioactivity"), ("Niels Bohr", "Copenhagen", "atoms"),
          ("Lise Meitner", "Vienna", "fission"), ("Emmy Noether", "Erlangen", "algebra"),
          ("Enrico Fermi", "Rome", "reactors"), ("Rosalind Franklin", "Cambridge", "crystals")]
SCIENTISTS = [*CORPUS, *(
    {"id": name.split()[1].lower(), "title": name,
     "text": f"{name} worked in {city} on {field}. {name} was born in {PEOPLE[i - 1][1]}. "
             f"The university of {city} honours {name}."}
    for i, (name, city, field) in enumerate(PEOPLE))]
SCIENTIST_QUESTIONS = ["Where did the person who worked on fission grow up?",
                       "Which city honours the scientist born in Paris?",
                       "How many Publix stores are in the state that borders Tennessee?",
                       "Who worked on computing in Manchester?",
                       "Which state borders the east of the state where the singer of Hello "
                       "Love died?"]


def _ranking(store: Any, embedder: Any, question: str) -> tuple[list[tuple[str, float]], Any]:
    """The ranked passages (id, score) and the evidence's paths."""
    evidence = PprSolver().retrieve(store, embedder, question,
                                    PprOptions(seed_passages=3, sentences=2, passages=8,
                                               epsilon=1e-12, iterations=1000,
                                               tolerance=1e-15))
    return [(p.id, float(p.score or 0.0)) for p in evidence.passages], evidence.detail["paths"]


def test_plugin_seeds_equal_the_cypher_path(falkordb_store: Any, neo4j_store: Any,
                                            embedder: Any, tmp_path: Path) -> None:
    """Neo4j with kgdb's plugin takes the seeds' nearest sentences and chunks from its exact
    in-memory search (kgdb.nearestNodes) instead of Lucene's HNSW: the same seed rows (kinds,
    ids, distances within 1e-6) as the plain Cypher path, and the same ranking as it (GDS) and
    as FalkorDB (same chunks in the same order, scores within 1e-5), with the same paths
    (which the plugin's PageRank statement returns along)."""
    from kgdb.dialects.neo4j import Neo4jDialect

    if neo4j_store.plugin_version is None:
        pytest.skip(f"the Neo4j at {neo4j_store.uri} has no kgdb plugin (kgdb neo4j plugin)")
    udf.install(falkordb_store)
    for store in (falkordb_store, neo4j_store):
        _load(store, embedder, tmp_path, SCIENTISTS)
        build_graph(store, embedder)
    native = neo4j_store.dialect
    assert native.NATIVE is not None
    kinds = set()
    for question in SCIENTIST_QUESTIONS:
        vector = [float(x) for x in embedder.embed([question])[0]]
        rows = {}
        for name, dialect in (("plain", Neo4jDialect()), ("native", native)):
            statement = cy.seeds(dialect, vector, named=[], sentences=2, names=2, passages=3,
                                 bridges=True)
            assert statement is not None
            assert ("kgdb.nearestNodes" in statement.text) == (name == "native")
            rows[name] = sorted((r["kind"], r["id"], r["via"] or "", r["distance"])
                                for r in neo4j_store.run(statement).records())
        assert len(rows["native"]) == len(rows["plain"]) >= 2 + 2 + 3
        kinds |= {r[0] for r in rows["native"]}
        for a, b in zip(rows["native"], rows["plain"], strict=True):
            assert a[:3] == b[:3]
            assert (a[3] is None) == (b[3] is None)
            if a[3] is not None:
                assert math.isclose(a[3], b[3], abs_tol=1e-6)
        rankings = {"falkordb": _ranking(falkordb_store, embedder, question),
                    "native": _ranking(neo4j_store, embedder, question)}
        neo4j_store.detect_plugin(use=False)
        try:
            rankings["plain"] = _ranking(neo4j_store, embedder, question)
        finally:
            neo4j_store.detect_plugin(use=True)
        assert len(rankings["native"][0]) >= 3 and rankings["native"][1]
        for name in ("falkordb", "plain"):
            ranking, paths = rankings[name]
            assert [c for c, _ in ranking] == [c for c, _ in rankings["native"][0]], name
            for (_, a), (_, b) in zip(ranking, rankings["native"][0], strict=True):
                assert math.isclose(a, b, abs_tol=1e-5), name
            assert paths == rankings["native"][1], name  # the plugin's in its PageRank call
    assert kinds == {"sentence", "name", "passage", "bridge"}


def test_solver_checks_the_kept_graph_in_its_seed_statement(store: Any, embedder: Any,
                                                            tmp_path: Path) -> None:
    """The phrase names are kept between questions and checked by the seed statement itself
    (no statement of its own): a rebuilt graph's new names are seeds at the next question,
    and a deleted graph is an error."""
    from kgdb.retrieve.ppr import PprError

    if store.dialect.NAME == "falkordb":
        udf.install(store)
    _load(store, embedder, tmp_path, CORPUS)
    build_graph(store, embedder)
    question = "Which stores does Zanzibar Trading run in Tennessee?"
    options = PprOptions(seed_passages=4, sentences=0)  # the named phrases alone
    first = PprSolver().retrieve(store, embedder, question, options)
    again = PprSolver().retrieve(store, embedder, question, options)
    assert [p.id for p in again.passages] == [p.id for p in first.passages]
    assert not any("m.options AS options" in s.text for s in again.statements)
    assert sum("'built' AS kind" in s.text for s in again.statements) == 1
    assert not any(s.get("phrase") == "zanzibar trading" for s in again.detail["seeds"])
    _load(store, embedder, tmp_path, [*CORPUS, {
        "id": "zanzibar", "title": "Zanzibar Trading",
        "text": "Zanzibar Trading is a grocer that runs 12 stores in Tennessee."}])
    build_graph(store, embedder)
    rebuilt = PprSolver().retrieve(store, embedder, question, options)
    assert {"kind": "question", "phrase": "zanzibar trading", "weight": 0.2, "source": ""} \
        in rebuilt.detail["seeds"]
    assert rebuilt.documents[0].id == "zanzibar"
    store.run(Statement("MATCH (n) WHERE n:Phrase OR n:Sentence OR n:KgdbMeta DETACH DELETE n",
                        write=True))
    with pytest.raises(PprError, match="no retrieval graph"):
        PprSolver().retrieve(store, embedder, question, options)


def test_paths_come_with_pagerank(store: Any, embedder: Any, tmp_path: Path) -> None:
    """The evidence's paths come in PageRank's statement (FalkorDB's kgdb.pprStored, Neo4j's
    plugin): two statements per question once the graph's names are kept, the seeds and
    PageRank with the paths, which equal :func:`cy.seed_paths` run on its own."""
    from kgdb.retrieve.ppr import PATHS_OF

    if store.dialect.NAME == "falkordb":
        udf.install(store)
    _load(store, embedder, tmp_path, SCIENTISTS)
    build_graph(store, embedder)
    one_call = store.dialect.NAME == "falkordb" or store.dialect.PPR is not None
    checked = 0
    for question in [*SCIENTIST_QUESTIONS, *SCIENTIST_QUESTIONS]:
        evidence = PprSolver().retrieve(store, embedder, question,
                                        PprOptions(seed_passages=3, sentences=2))
        seeds = evidence.detail["seeds"]
        assert isinstance(seeds, list)
        phrases = sorted({str(s["phrase"]) for s in seeds
                          if isinstance(s, dict) and "phrase" in s})
        best = [p.id for p in evidence.passages[:PATHS_OF]]
        expected: dict[str, list[list[str]]] = {}
        for r in store.run(cy.seed_paths(best, phrases)).records():
            step = [str(r["phrase"]), *([str(r["via"])] if r["via"] else [])]
            expected.setdefault(str(r["chunk"]), []).append([*step, str(r["chunk"])])
        for b in evidence.detail.get("bridges") or []:
            assert isinstance(b, dict)
            if b["chunk"] in best:
                expected.setdefault(str(b["chunk"]), []).append(
                    [str(b["from"]), str(b["phrase"]), str(b["chunk"])])
        if phrases and best:
            assert evidence.detail["paths"] == expected, question
            checked += bool(expected)
        if one_call and question in SCIENTIST_QUESTIONS[1:]:  # the names are kept by now
            assert len(evidence.statements) == 2, [s.text[:40] for s in evidence.statements]
            assert not any("$chunks" in s.text for s in evidence.statements)
    assert checked >= 3


def test_seed_statement_takes_the_bridge_from_the_passage_search(store: Any, embedder: Any,
                                                                tmp_path: Path) -> None:
    """With passage seeds, the bridge starts at the nearest of them (one chunk search, not
    two): the same rows as the passage and bridge parts asked separately."""
    _load(store, embedder, tmp_path, SCIENTISTS)
    build_graph(store, embedder)
    bridged = 0
    for question in SCIENTIST_QUESTIONS:
        vector = [float(x) for x in embedder.embed([question])[0]]

        def rows(passages: int, bridges: bool, vector: list[float] = vector) -> list[str]:
            statement = cy.seeds(store.dialect, vector, named=[], sentences=0, names=0,
                                 passages=passages, bridges=bridges)
            assert statement is not None
            return sorted(json.dumps(r, sort_keys=True)
                          for r in store.run(statement).records())

        both = cy.seeds(store.dialect, vector, named=[], sentences=0, names=0, passages=3,
                        bridges=True)
        assert both is not None  # sentences=0, names=0: chunk searches alone
        scan = f"MATCH (node:{store.dialect.ident('Chunk')})"  # FalkorDB, few chunks
        assert sum(both.text.count(search) for search in
                   ("queryNodes(", "nearestNodes(", scan)) == 1
        together = rows(3, True)
        assert together == sorted(rows(3, False) + rows(0, True)), question
        bridged += any('"bridge"' in r for r in together)
    assert bridged >= 1  # the Hello Love question: its nearest passage names Tennessee
