"""SimGRAG retrieval on both engines: generated Cypher, the optimized engine and (on a Neo4j
with kgdb's plugin) the native procedures against a brute-force reference, exact L2
distances, typed unknowns, components."""

from __future__ import annotations

import math
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgdb.config import Settings
from kgdb.dsl.pattern import pattern_from_triples
from kgdb.engine import connect
from kgdb.retrieve import pattern_search
from kgdb.retrieve.pattern_search import search
from tests.support.simgrag_graph import SmallGraph, brute_force, build_graph

pytestmark = pytest.mark.live

NAMES = ["Tokyo Godfathers", "Satoshi Kon", "Perfect Blue", "Paprika", "Millennium Actress",
         "Kismet", "Vincente Minnelli", "Howard Keel", "Ann Blyth", "Flashpoint",
         "Donnie Yen", "Wilson Yip", "Ip Man", "Drama", "Animation", "2003", "1997",
         "Japanese", "Heat", "Michael Mann", "Al Pacino", "Robert De Niro", "Crime",
         "Insomnia", "Christopher Nolan", "Memento", "Guy Pearce", "English"]
PREDICATES = {"directed_by": "directed by", "starred_actors": "starred actors",
              "written_by": "written by", "has_genre": "has genre",
              "release_year": "release year", "in_language": "in language"}
PHRASES = ["directed by", "director", "starred", "actor", "written by", "screenwriter",
           "genre", "release year", "year", "language"]
TEXTS = [*NAMES, "Satoshi", "Nolan film", "a japanese anime", "crime drama"]


def _movie_graph() -> SmallGraph:
    ents = {n: n for n in ["Tokyo Godfathers", "Satoshi Kon", "Perfect Blue", "Paprika",
                           "Animation", "2003", "Japanese", "Heat", "Michael Mann", "Al Pacino",
                           "Insomnia", "Christopher Nolan", "Memento", "Al Pacino"]}
    triples = [("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
               ("Perfect Blue", "directed_by", "Satoshi Kon"),
               ("Paprika", "directed_by", "Satoshi Kon"),
               ("Tokyo Godfathers", "release_year", "2003"),
               ("Tokyo Godfathers", "has_genre", "Animation"),
               ("Paprika", "in_language", "Japanese"),
               ("Heat", "directed_by", "Michael Mann"),
               ("Heat", "starred_actors", "Al Pacino"),
               ("Insomnia", "starred_actors", "Al Pacino"),
               ("Insomnia", "directed_by", "Christopher Nolan"),
               ("Memento", "directed_by", "Christopher Nolan")]
    return SmallGraph(ents, triples, dict(PREDICATES))


@pytest.mark.parametrize("engine", ["cypher", "optimized"])
def test_one_hop_and_two_hop_questions(store, embedder, engine):
    build_graph(store, embedder, _movie_graph())
    pattern = pattern_from_triples([("Tokyo Godfathers", "directed by", "UNKNOWN director 1")])
    result = search(store, embedder, pattern, k=3, engine=engine)
    top = result.subgraphs[0]
    assert top.verbal_triples() == [("Tokyo Godfathers", "directed_by", "Satoshi Kon")]
    assert top.gsd == pytest.approx(0.0, abs=1e-5)
    # the other top-3 are worse: a different relation of the same movie
    assert all(s.gsd > 0.1 for s in result.subgraphs[1:])
    # one call (Neo4j with kgdb's plugin) adds the searches' own time in the server
    assert set(result.timings_ms) - {"vector_in_server"} == {"embed", "vector", "match"}

    pattern = pattern_from_triples([("Heat", "starred", "UNKNOWN actor 1"),
                                    ("UNKNOWN actor 1", "starred", "UNKNOWN movie 1"),
                                    ("UNKNOWN movie 1", "directed by", "UNKNOWN director 1")])
    result = search(store, embedder, pattern, k=1, engine=engine)
    assert [s.value_of("n3") for s in result.subgraphs] == ["Christopher Nolan"]
    assert result.subgraphs[0].value_of("n2") == "Insomnia"  # never Heat itself


def test_candidate_distances_are_exact_l2(store, embedder):
    graph = build_graph(store, embedder, _movie_graph())
    pattern = pattern_from_triples([("Tokyo Godfather", "directed", "UNKNOWN 1")])
    result = search(store, embedder, pattern, k=1, k_nodes=5, k_relations=6)
    query = embedder.embed_one("Tokyo Godfather").astype(np.float64)
    cands = result.candidates["node:Tokyo Godfather"]
    assert len(cands) == 5
    expected = sorted((float(np.linalg.norm(v.astype(np.float64) - query)), i)
                      for i, v in graph.vectors.items())[:5]
    for cand, (dist, ident) in zip(cands, expected, strict=True):
        assert cand.id == ident
        assert cand.distance == pytest.approx(dist, abs=1e-6)
    rel_query = embedder.embed_one("directed").astype(np.float64)
    for cand in result.candidates["relation:directed"]:
        exact = float(np.linalg.norm(graph.rel_vectors[cand.id].astype(np.float64) - rel_query))
        assert cand.distance == pytest.approx(exact, abs=1e-6)


@pytest.mark.parametrize("engine", ["cypher", "optimized"])
def test_typed_unknown_uses_entity_types(store, embedder, engine):
    graph = _movie_graph()
    graph.type_names = ["Person", "Movie", "Year"]
    graph.entity_types = {"Satoshi Kon": ["Person"], "Michael Mann": ["Person"],
                          "Al Pacino": ["Person"], "Christopher Nolan": ["Person"],
                          "2003": ["Year"]}
    for m in ["Tokyo Godfathers", "Perfect Blue", "Paprika", "Heat", "Insomnia", "Memento"]:
        graph.entity_types[m] = ["Movie"]
    build_graph(store, embedder, graph)
    pattern = pattern_from_triples([("Tokyo Godfathers", "UNKNOWN relation 1",
                                     "UNKNOWN year 1")])
    result = search(store, embedder, pattern, k=3, k_types=1, engine=engine)
    assert [s.value_of("n1") for s in result.subgraphs] == ["2003"]
    expected = brute_force(graph, embedder, pattern, k=3, k_nodes=16, k_relations=16,
                           k_types=1)
    assert [r[1] for r in expected[0]] == [s.node_ids for s in result.subgraphs]


@pytest.mark.parametrize("engine", ["cypher", "optimized"])
def test_disconnected_components_are_retrieved_separately(store, embedder, engine):
    build_graph(store, embedder, _movie_graph())
    pattern = pattern_from_triples([("Heat", "directed by", "UNKNOWN director 1"),
                                    ("Memento", "directed by", "UNKNOWN director 2")])
    assert len(pattern.components()) == 2
    result = search(store, embedder, pattern, k=1, engine=engine)
    assert [(s.component, s.verbal_triples()[0][2]) for s in result.subgraphs] == [
        (0, "Michael Mann"), (1, "Christopher Nolan")]


def test_a_pattern_without_anything_known_is_refused(store, embedder):
    from kgdb.retrieve.pattern_search import RetrievalError

    build_graph(store, embedder, _movie_graph())
    pattern = pattern_from_triples([("Heat", "directed by", "UNKNOWN d 1"),
                                    ("UNKNOWN a 1", "UNKNOWN r 1", "UNKNOWN b 1")])
    with pytest.raises(RetrievalError, match="names no entity and no relation"):
        search(store, embedder, pattern)


# ---------------------------------------------------------------------- property test
@st.composite
def graphs_and_patterns(draw):
    names = draw(st.lists(st.sampled_from(NAMES), min_size=3, max_size=8, unique=True))
    preds = sorted(PREDICATES)
    possible = [(h, p, t) for h in names for t in names if h != t for p in preds]
    triples = draw(st.lists(st.sampled_from(possible), min_size=2, max_size=14, unique=True))
    n_nodes = draw(st.integers(2, 4))
    node_texts = []
    for i in range(n_nodes):
        if draw(st.booleans()):
            node_texts.append(draw(st.sampled_from(TEXTS)))
        else:
            node_texts.append(f"UNKNOWN thing {i}")
    if len(set(node_texts)) < n_nodes:  # the same text twice is one node: keep them apart
        node_texts = [t if t.startswith("UNKNOWN") or node_texts.index(t) == i
                      else f"UNKNOWN thing {i}" for i, t in enumerate(node_texts)]
    edges = []
    for i in range(1, n_nodes):  # a random spanning tree
        edges.append((draw(st.integers(0, i - 1)), i))
    if draw(st.booleans()):  # plus one extra edge: a cycle or a parallel edge
        a = draw(st.integers(0, n_nodes - 1))
        b = draw(st.integers(0, n_nodes - 1).filter(lambda x: x != a))
        edges.append((a, b))
    pattern_triples = []
    for a, b in edges:
        rel = draw(st.sampled_from(PHRASES)) if draw(st.integers(0, 3)) else "UNKNOWN rel 1"
        pattern_triples.append((node_texts[a], rel, node_texts[b]))
    if all(t.startswith("UNKNOWN") for t in node_texts) and all(
            r.startswith("UNKNOWN") for _, r, _ in pattern_triples):
        head, _, tail = pattern_triples[0]  # something must be known (else refused)
        pattern_triples[0] = (head, "directed by", tail)
    k = draw(st.integers(1, 4))
    kn = draw(st.integers(1, 5))
    kr = draw(st.integers(1, 4))
    distinct = draw(st.sampled_from(["all", "known"]))
    return (SmallGraph({n: n for n in names}, triples, dict(PREDICATES)), pattern_triples, k, kn,
            kr, distinct)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=graphs_and_patterns())
def test_engines_agree_with_brute_force(store, embedder, case):
    _on_example_store(store, _agree, embedder, *case)


def _on_example_store(store, check, *args):
    """``check(example_store, *args)`` on an empty graph of its own for this example."""
    if store.dialect.NAME == "neo4j":  # one user database: empty it for each example
        store.reset()
        check(store, *args)
        return
    # FalkorDB: a graph of its own per example (not reset-and-reuse: GRAPH.DELETE frees
    # asynchronously).
    example_store = connect(Settings.from_env(graph=f"test_{uuid.uuid4().hex[:12]}"))
    try:
        check(example_store, *args)
    finally:
        example_store.reset()
        example_store.close()


def _agree(store, embedder, graph, triples, k, kn, kr, distinct):
    build_graph(store, embedder, graph)
    pattern = pattern_from_triples(triples)
    expected = brute_force(graph, embedder, pattern, k=k, k_nodes=kn, k_relations=kr,
                           distinct=distinct)
    runs = {}
    # A Neo4j with kgdb's plugin: the native back ends (candidates by kgdb.nearestNodes,
    # matching by kgdb.simgrag.match), then the same store on plain Cypher for the rest.
    native = store.dialect.SIMGRAG_MATCH is not None
    if native:
        # one call for the whole retrieval (kgdb.simgrag.search) where every component suits
        # the native matching, else the linker's statement and one call per component
        runs["native"] = search(store, embedder, pattern, k=k, k_nodes=kn, k_relations=kr,
                                engine="native", distinct=distinct)
        assert runs["native"].paths["vector"] in ("kgdb.simgrag.search", "kgdb.nearestNodes")
        store.dialect.SIMGRAG_SEARCH = None
        try:
            runs["native-steps"] = search(store, embedder, pattern, k=k, k_nodes=kn,
                                          k_relations=kr, engine="native", distinct=distinct)
        finally:
            del store.dialect.SIMGRAG_SEARCH
        assert runs["native-steps"].paths["vector"] == "kgdb.nearestNodes"
        assert runs["native-steps"].candidates == runs["native"].candidates
        assert runs["native-steps"].linked == runs["native"].linked
        store.detect_plugin(use=False)
    try:
        runs.update({
            name: search(store, embedder, pattern, k=k, k_nodes=kn, k_relations=kr,
                         engine=engine, prune=prune, distinct=distinct)
            for name, engine, prune in (("plain", "cypher", False), ("pruned", "cypher", True),
                                        ("optimized", "optimized", True))
        })
        assert "kgdb" not in runs["plain"].paths["match"] + runs["plain"].paths["vector"]
        # Neo4j without the plugin asks its vector indexes; FalkorDB scans these small
        # labels (KGDB_FULL_SCAN), exactly like the plugin
        assert runs["plain"].paths["vector"] == ("scan" if store.dialect.full_scan
                                                 else "cypher")
        # one-edge components with few anchors skip the tau loop: run it for them too
        small, pattern_search.SMALL_ANCHOR = pattern_search.SMALL_ANCHOR, 0
        try:
            runs["tau-loop"] = search(store, embedder, pattern, k=k, k_nodes=kn,
                                      k_relations=kr, distinct=distinct)
        finally:
            pattern_search.SMALL_ANCHOR = small
    finally:
        if native:
            store.detect_plugin(use=True)
    want = [r[0] for comp in expected for r in comp]
    for name, result in runs.items():
        got = [s.gsd for s in result.subgraphs]
        assert len(got) == len(want), (name, got, want, triples, graph.triples)
        for g, w in zip(got, want, strict=True):
            assert math.isclose(g, w, abs_tol=2e-4), (name, got, want, triples)
        _check_isomorphic(graph, pattern, result.subgraphs, distinct)
    # The engines sum the same candidate distances in the same order: the same GSDs, bit for
    # bit (among equal GSDs each returns the subgraphs it finds first).
    reference = [s.gsd for s in runs["plain"].subgraphs]
    for name in ("pruned", "tau-loop", "optimized",
                 *(("native", "native-steps") if native else ())):
        assert [s.gsd for s in runs[name].subgraphs] == reference, name
    if native:  # one call or one per component: the same search, the same subgraphs
        assert [(s.gsd, s.node_ids, s.triples) for s in runs["native-steps"].subgraphs] == [
            (s.gsd, s.node_ids, s.triples) for s in runs["native"].subgraphs]
    return runs


def _check_isomorphic(graph, pattern, subgraphs, distinct="all"):
    facts = set(graph.triples)
    components = [c for c in pattern.components() if c.edges]
    for s in subgraphs:
        comp = components[s.component]
        if distinct == "all":
            assert len(set(s.node_ids)) == len(s.node_ids)  # injective
        assert len(set(s.triples)) == len(s.triples)  # distinct relationships
        where = dict(zip([n.var for n in comp.nodes], s.node_ids, strict=True))
        for edge, triple in zip(comp.edges, s.triples, strict=True):
            assert triple in facts
            assert {triple[0], triple[2]} == {where[edge.source], where[edge.target]}


# ---------------------------------------------------------------------- ties through hubs
@st.composite
def hub_graphs_and_patterns(draw):
    """A hub (and maybe a twin of the same name) linked to leaves that share a few names, and
    the leaves to ends that share a few more: equal names embed equally, so many subgraphs
    tie at one GSD; the pattern walks out of the hub."""
    hub = draw(st.sampled_from(NAMES))
    leaf_names = draw(st.lists(st.sampled_from([n for n in NAMES if n != hub]), min_size=1,
                               max_size=2, unique=True))
    end_names = draw(st.lists(st.sampled_from([n for n in NAMES if n != hub]), min_size=1,
                              max_size=2, unique=True))
    entities = {"hub": hub}
    if draw(st.booleans()):
        entities["hub twin"] = hub
    leaves = [f"leaf {i}" for i in range(draw(st.integers(3, 7)))]
    ends = [f"end {i}" for i in range(draw(st.integers(2, 5)))]
    entities |= {leaf: leaf_names[i % len(leaf_names)] for i, leaf in enumerate(leaves)}
    entities |= {end: end_names[i % len(end_names)] for i, end in enumerate(ends)}
    preds = sorted(PREDICATES)
    hub_pred = draw(st.sampled_from(preds))
    triples = {(h, hub_pred if draw(st.integers(0, 3)) else draw(st.sampled_from(preds)), leaf)
               for h in ("hub", "hub twin") if h in entities for leaf in leaves}
    for leaf in leaves:
        for end in draw(st.lists(st.sampled_from(ends), min_size=1, max_size=3, unique=True)):
            triples.add((leaf, draw(st.sampled_from(preds)), end)
                        if draw(st.booleans()) else (end, draw(st.sampled_from(preds)), leaf))
    hops = draw(st.integers(1, 3))
    texts = [hub] + [draw(st.sampled_from([f"UNKNOWN thing {i}", leaf_names[0], end_names[0]]))
                     if i > 1 else f"UNKNOWN thing {i}" for i in range(1, hops + 1)]
    for i in range(1, len(texts)):  # the same text twice would be one node
        if texts[i] in texts[:i]:
            texts[i] = f"UNKNOWN thing {i}"
    pattern_triples = [(texts[i], draw(st.sampled_from([PREDICATES[hub_pred], *PHRASES,
                                                         "UNKNOWN rel 1"])), texts[i + 1])
                       for i in range(hops)]
    k = draw(st.integers(1, 6))
    return (SmallGraph(entities, sorted(triples), dict(PREDICATES)), pattern_triples, k,
            draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.sampled_from(["all", "known"])))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=hub_graphs_and_patterns())
def test_engines_agree_with_brute_force_among_many_ties(store, embedder, case):
    """Patterns out of hubs with many subgraphs at one GSD: every engine returns brute
    force's GSDs (each its own choice among equal ones), and the same subgraphs again on a
    second run."""
    _on_example_store(store, _agree_twice, embedder, *case)


def _agree_twice(store, embedder, graph, triples, k, kn, kr, distinct):
    first = _agree(store, embedder, graph, triples, k, kn, kr, distinct)
    pattern = pattern_from_triples(triples)
    native = store.dialect.SIMGRAG_MATCH is not None
    for name, engine, prune in (("native", "native", True), ("plain", "cypher", False),
                                ("pruned", "cypher", True), ("optimized", "optimized", True)):
        if name not in first:
            continue
        if native:
            store.detect_plugin(use=name == "native")
        try:
            again = search(store, embedder, pattern, k=k, k_nodes=kn, k_relations=kr,
                           engine=engine, prune=prune, distinct=distinct)
        finally:
            if native:
                store.detect_plugin(use=True)
        assert [(s.gsd, s.node_ids, s.triples) for s in again.subgraphs] == [
            (s.gsd, s.node_ids, s.triples) for s in first[name].subgraphs], name


def test_demo_sample_without_llm(store, embedder):
    """What `make demo` can show: the oracle pattern of a misspelt question on the sample."""
    from kgdb.load.triples import load_triples
    from kgdb.retrieve.pattern_search import describe
    from kgdb.schema import apply_schema, parse_schema_file
    from tests.conftest import ROOT

    apply_schema(store, parse_schema_file(ROOT / "loaders/schemas/metaqa.schema"), embedder)
    load_triples(store, embedder, ROOT / "loaders/samples/movies.txt", progress=False)
    pattern = pattern_from_triples([("kismit", "directed by", "UNKNOWN director 1"),
                                    ("kismit", "starred", "UNKNOWN actor 1")])
    for engine in ("cypher", "optimized"):
        result = search(store, embedder, pattern, k=3, engine=engine)
        assert [s.value_of("n1") for s in result.subgraphs] == ["William Dieterle"] * 3
        actors = [s.value_of("n2") for s in result.subgraphs]  # 3 of Kismet's 4, equal GSD
        assert len(set(actors)) == 3 and set(actors) <= {
            "Edward Arnold", "James Craig", "Marlene Dietrich", "Ronald Colman"}
        assert len({s.gsd for s in result.subgraphs}) == 1
        lines = describe(result)
        assert lines[0].startswith("graph [1]  GSD ")
        assert "    ('Kismet', 'directed_by', 'William Dieterle')" in lines
        assert any(line.startswith("params: ") for line in lines)


@pytest.mark.parametrize("kn", [1, 2])
def test_nearest_candidate_is_exact_at_small_k(store, embedder, kn):
    """Regression (found on Neo4j by the brute-force property test): with k(n)=1 Lucene's HNSW
    search, whose beam is the requested count, returned a node that is not the nearest
    ("Crime" instead of "Tokyo Godfathers" for "Satoshi Kon"), so a pattern matched where the
    exact top-1 cannot. The dialect asks the index for a wider beam and cuts by exact L2."""
    graph = SmallGraph({n: n for n in ["2003", "Crime", "Tokyo Godfathers"]},
                       [("2003", "directed_by", "Crime"), ("2003", "has_genre", "Crime")],
                       dict(PREDICATES))
    _agree(store, embedder, graph, [("UNKNOWN movie 1", "UNKNOWN rel 1", "Satoshi Kon")],
           k=3, kn=kn, kr=2, distinct="all")


def test_candidate_ids_no_map_can_carry(store, embedder):
    """A known node's candidates are looked up in a map parameter, except where the engine
    cannot write a key (FalkorDB: a backtick): then in a list. Both give brute force's
    answer, on both engines."""
    names = {"Kis`met": "Kis`met", "Kismet": "Kismet", "Vincente Minnelli": "Vincente Minnelli",
             "Ann Blyth": "Ann Blyth", "Howard Keel": "Howard Keel"}
    graph = SmallGraph(names, [("Kis`met", "directed_by", "Vincente Minnelli"),
                               ("Kismet", "directed_by", "Vincente Minnelli"),
                               ("Kis`met", "starred_actors", "Ann Blyth"),
                               ("Kismet", "starred_actors", "Howard Keel")], dict(PREDICATES))
    build_graph(store, embedder, graph)
    pattern = pattern_from_triples([("Vincente Minnelli", "directed by", "Kismet"),
                                    ("Kismet", "starred", "UNKNOWN actor 1")])
    expected = brute_force(graph, embedder, pattern, k=4, k_nodes=2, k_relations=2)
    for prune in (True, False):
        result = search(store, embedder, pattern, k=4, k_nodes=2, k_relations=2, prune=prune)
        assert [s.node_ids for s in result.subgraphs] == [r[1] for r in expected[0]]
        assert [s.gsd for s in result.subgraphs] == pytest.approx([r[0] for r in expected[0]],
                                                                 abs=2e-4)
        assert {"Kis`met", "Kismet"} <= {s.value_of("n1") for s in result.subgraphs}
        matched = [st for st in result.statements if "MATCH" in st.text]
        lists = any(isinstance(v, list) and v and isinstance(v[0], dict) and "id" in v[0]
                    and not st.text.startswith(f"UNWIND ${k} ")
                    for st in matched for k, v in st.params.items())
        assert lists == (store.dialect.NAME == "falkordb")
