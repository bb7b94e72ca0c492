"""kgdb's Neo4j plugin (neo4j-plugin/) on the Maven-started Neo4j: found and used once per
store, every native function and procedure equal to the Cypher it replaces (and to brute
force), hostile arguments answered with one-line errors, and Neo4j without it on Cypher."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kgdb
from kgdb.cypher import housekeeping
from kgdb.cypher import link as cy_link
from kgdb.dialects.neo4j import Neo4jDialect, Neo4jNativeDialect
from kgdb.dsl.pattern import pattern_from_triples
from kgdb.engine.neo4j import Neo4jStore
from kgdb.errors import StatementError
from kgdb.retrieve.pattern_search import RetrievalError, search
from kgdb.statement import Statement
from tests.live.test_simgrag_retrieval import PREDICATES, _movie_graph
from tests.support.simgrag_graph import build_graph

pytestmark = pytest.mark.live

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@pytest.fixture
def plugin_store(neo4j_store):
    if neo4j_store.plugin_version is None:
        pytest.skip(f"the Neo4j at {neo4j_store.uri} has no kgdb plugin (kgdb neo4j plugin)")
    return neo4j_store


def test_plugin_is_found_once_and_used(plugin_store):
    assert plugin_store.plugin_version == kgdb.__version__
    assert isinstance(plugin_store.dialect, Neo4jNativeDialect)
    assert {"name": "kgdb", "title": "kgdb plugin", "version": kgdb.__version__} in (
        plugin_store.plugins())
    # KGDB_NATIVE=0 / native=False keeps the Cypher path on the same server
    plain = Neo4jStore(plugin_store.uri, plugin_store.username, plugin_store.password, None,
                       native=False)
    try:
        assert plain.plugin_version == kgdb.__version__
        assert type(plain.dialect) is Neo4jDialect
    finally:
        plain.close()


vectors = st.integers(1, 48).flatmap(lambda n: st.tuples(
    st.lists(st.floats(-2, 2, width=32), min_size=n, max_size=n),
    st.lists(st.floats(-2.0 ** -10, 2.0 ** -10, width=32) | st.floats(-2, 2, width=32), min_size=n,
             max_size=n)))


@SETTINGS
@given(pair=vectors)
def test_l2_is_bit_identical_to_cypher_reduce(plugin_store, pair):
    a, delta = pair
    b = [x + d for x, d in zip(a, delta, strict=True)]
    plain, native = Neo4jDialect(), plugin_store.dialect
    reduce_l2 = plugin_store.run(Statement(
        f"RETURN {plain.exact_l2_prepared('$a', '$b')} AS d", {"a": a, "b": b})).value()
    native_l2 = plugin_store.run(Statement(
        f"RETURN {native.exact_l2_prepared('$a', '$b')} AS d", {"a": a, "b": b})).value()
    assert native_l2 == reduce_l2
    assert math.isclose(native_l2, float(np.linalg.norm(np.array(a) - np.array(b))),
                        rel_tol=1e-12, abs_tol=1e-300)
    if any(a) and any(b):
        cos = plugin_store.run(Statement("RETURN kgdb.cosine($a, $b) AS c",
                                         {"a": a, "b": b})).value()
        va, vb = np.array(a), np.array(b)
        assert math.isclose(cos, float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb))),
                            rel_tol=1e-9, abs_tol=1e-12)


def test_nearest_nodes_equal_the_cypher_path_and_brute_force(plugin_store, embedder):
    graph = build_graph(plugin_store, embedder, _movie_graph())
    texts = ["Satoshi", "Nolan film", "a japanese anime", "crime drama", "Heat", "2003"]
    query = embedder.embed(texts)
    for k in (1, 2, 5, 13):
        searches = [cy_link.VectorSearch("Entity", "id", "name", k, tuple(query))]
        rows = {}
        for name, dialect in (("plain", Neo4jDialect()), ("native", plugin_store.dialect)):
            rows[name] = plugin_store.run(cy_link.vector_candidates(dialect, searches)).records()
        assert rows["native"] == rows["plain"]
        for q, vector in enumerate(query):
            stored = {i: np.asarray(v, dtype=np.float64) for i, v in graph.vectors.items()}
            want = sorted((float(np.sqrt(np.sum((stored[i] - np.asarray(vector, np.float64))
                                                ** 2))), i) for i in stored)[:k]
            got = [(r["distance"], r["id"]) for r in rows["native"] if r["query"] == q]
            assert [i for _, i in got] == [i for _, i in want]
            for (gd, _), (wd, _) in zip(got, want, strict=True):
                assert math.isclose(gd, wd, rel_tol=1e-12)


def test_nearest_relationships_is_the_exact_top_k(plugin_store):
    d = plugin_store.dialect
    for op in d.create_vector_index("LINK", "embedding", 4, relationship=True):
        plugin_store.execute(op)
    rng = np.random.default_rng(5)
    rows = [{"i": i, "v": rng.normal(size=4).tolist()} for i in range(40)]
    plugin_store.run(Statement("UNWIND $rows AS r CREATE (:Thing {id: toString(r.i)})"
                               "-[:LINK {i: r.i, embedding: r.v}]->(:Thing)", {"rows": rows},
                               write=True))
    plugin_store.run(d.await_indexes())
    index = d.index_name("LINK", "embedding", "rel_vector")
    for _ in range(10):
        q = rng.normal(size=4).tolist()
        got = plugin_store.run(Statement(
            "CALL kgdb.nearestRelationships($index, $q, 5) YIELD relationship, distance "
            "RETURN relationship.i AS i, distance ORDER BY distance LIMIT 5",
            {"index": index, "q": q})).records()
        want = sorted((float(np.linalg.norm(np.array(r["v"]) - np.array(q))), r["i"])
                      for r in rows)[:5]
        assert [r["i"] for r in got] == [i for _, i in want]


HOSTILE = [
    ("RETURN kgdb.l2([], []) AS d", {}, "kgdb.l2: a is an empty list"),
    ("RETURN kgdb.l2([1.0, 0.0/0.0], [1.0, 2.0]) AS d", {}, "a[1] is NaN"),
    ("RETURN kgdb.l2($a, [1.0, 2.0]) AS d", {"a": [1.0, float("inf")]}, "a[1] is Infinity"),
    ("RETURN kgdb.l2([1.0], [1.0, 2.0]) AS d", {}, "different sizes (1 and 2)"),
    ("RETURN kgdb.l2('text', [1.0]) AS d", {}, "a is a String"),
    ("RETURN kgdb.cosine([1.0, null], [1.0, 2.0]) AS d", {}, "a[1] is null"),
    ("CALL kgdb.nearestNodes('no_such_index', [1.0], 3)", {}, "there is no index named"),
    ("CALL kgdb.nearestNodes(null, [1.0], 3)", {}, "index is null"),
    ("CALL kgdb.nearestNodes('x', null, 3)", {}, "vector is null"),
    ("CALL kgdb.nearestNodes('x', [1.0], -1)", {}, "k must be an integer from 1"),
    ("CALL kgdb.nearestNodes('x', [1.0], 'three')", {}, "Type mismatch"),
    ("CALL kgdb.simgrag.match(null, 3)", {}, "component is null"),
    ("CALL kgdb.simgrag.match({}, 3)", {}, "label must be a string, not null"),
    ("CALL kgdb.simgrag.match({label: 'Entity', nodes: [], edges: []}, 3)", {},
     "nodes is empty"),
    ("CALL kgdb.simgrag.match({label: 'Entity', nodes: [{candidates: [{id: 'a', d: 0.0/0.0}]}],"
     " edges: [], anchor: 0, order: [], differ: [[true]]}, 3)", {},
     "nodes[0].candidates[0].d must be a finite non-negative number"),
    ("CALL kgdb.simgrag.match({label: 'Entity', nodes: [{candidates: [{id: 1, d: 0.5}]}],"
     " edges: [], anchor: 0, order: [], differ: [[true]]}, 3)", {},
     "nodes[0].candidates[0].id must be a string"),
    ("CALL kgdb.simgrag.match({label: 'Entity', nodes: [{candidates: null}], edges: [],"
     " anchor: 0, order: [], differ: [[true]]}, 3)", {}, "anchor node 0 has no candidates"),
    ("CALL kgdb.simgrag.match({label: 'Entity', nodes: 'x'}, 3)", {}, "nodes must be a list"),
    ("CALL kgdb.simgrag.match({label: 'Entity', nodes: [{candidates: []}], edges: [],"
     " anchor: 5, order: [], differ: [[true]]}, 3)", {}, "anchor must be an index from 0 to 0"),
    ("CALL kgdb.simgrag.match({label: 'Entity', nodes: [{candidates: []}], edges: [],"
     " anchor: 0, order: [], differ: [[true]]}, 0)", {}, "k must be an integer from 1"),
    ("CALL kgdb.simgrag.search(null, 3)", {}, "kgdb.simgrag.search: request is null"),
    ("CALL kgdb.simgrag.search({searches: [], components: []}, 0)", {},
     "k must be an integer from 1"),
    ("CALL kgdb.simgrag.search({searches: 'x', components: []}, 3)", {},
     "searches must be a list, not a String"),
    ("CALL kgdb.simgrag.search({searches: [{index: 'no_such_index', key: 'id', shown: 'name',"
     " k: 3, vectors: [[1.0]]}], components: []}, 3)", {}, "there is no index named"),
    ("CALL kgdb.simgrag.search({searches: [], components: [{nodes: [{candidates:"
     " {search: 4, query: 0}}], edges: []}]}, 3)", {}, "candidates.search must be an index"),
]


@pytest.mark.parametrize(("text", "params", "message"), HOSTILE)
def test_hostile_arguments_give_one_line_errors(plugin_store, text, params, message):
    with pytest.raises(StatementError) as info:
        plugin_store.run(Statement(text, params))
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert plugin_store.run(housekeeping.ping()).value() == 1  # the server is fine


def test_hundred_thousand_candidates_are_answered(plugin_store, embedder):
    build_graph(plugin_store, embedder, _movie_graph())
    many = [{"id": f"missing {i}", "d": 0.5} for i in range(100_000)]
    component = {
        "label": "Entity", "anchor": 0, "order": [0],
        "nodes": [{"candidates": [*many, {"id": "Heat", "d": 0.25}]}, {"candidates": None}],
        "edges": [{"source": 0, "target": 1, "directed": False, "types": None}],
        "differ": [[True, True], [True, True]]}
    rows = plugin_store.run(Statement(
        "CALL kgdb.simgrag.match($c, 3) YIELD gsd, ids RETURN gsd, ids",
        {"c": component})).records()
    assert [r["ids"][0] for r in rows] == ["Heat", "Heat"]
    assert [r["gsd"] for r in rows] == [0.25, 0.25]
    with pytest.raises(StatementError, match="more than 2 partial matches"):
        plugin_store.run(Statement("CALL kgdb.simgrag.match($c, 3) YIELD gsd RETURN gsd",
                                   {"c": {**component, "maxStates": 2}}))


def test_without_the_plugin_retrieval_runs_on_cypher_and_says_so(plugin_store, embedder):
    build_graph(plugin_store, embedder, _movie_graph())
    pattern = pattern_from_triples([("Heat", "directed by", "UNKNOWN director 1"),
                                    ("Heat", "starred", "UNKNOWN actor 1")])
    native = search(plugin_store, embedder, pattern, k=3)
    # one statement for the whole retrieval: kgdb.simgrag.search
    assert native.paths == {"vector": "kgdb.simgrag.search", "match": "kgdb.simgrag.search"}
    assert [s.text.split("(")[0] for s in native.statements] == ["CALL kgdb.simgrag.search"]
    assert 0 <= native.timings_ms["vector_in_server"] <= native.timings_ms["vector"]
    # the same store with the one call turned off: the searches, then one match per component
    plugin_store.dialect.SIMGRAG_SEARCH = None
    try:
        steps = search(plugin_store, embedder, pattern, k=3)
    finally:
        del plugin_store.dialect.SIMGRAG_SEARCH
    assert steps.paths == {"vector": "kgdb.nearestNodes", "match": "kgdb.simgrag.match"}
    assert any("kgdb.simgrag.match" in s.text for s in steps.statements)
    assert [(s.gsd, s.node_ids, s.triples) for s in steps.subgraphs] == [
        (s.gsd, s.node_ids, s.triples) for s in native.subgraphs]
    assert steps.candidates == native.candidates and steps.linked == native.linked
    plain = Neo4jStore(plugin_store.uri, plugin_store.username, plugin_store.password, None,
                       native=False)
    try:
        cypher = search(plain, embedder, pattern, k=3)
        assert cypher.paths == {"vector": "cypher", "match": "cypher"}
        assert not any("kgdb." in s.text for s in cypher.statements)
        # the same GSDs (among equal GSDs each path returns the subgraphs it finds first)
        assert [s.gsd for s in cypher.subgraphs] == [s.gsd for s in native.subgraphs]
        with pytest.raises(RetrievalError, match="native engine needs kgdb's plugin"):
            search(plain, embedder, pattern, k=3, engine="native")
    finally:
        plain.close()
    assert native.subgraphs[0].verbal_triples()[0] == ("Heat", "directed_by", "Michael Mann")
    assert set(PREDICATES) >= {t[1] for s in native.subgraphs for t in s.triples}


def _profile(store: Neo4jStore, statement: Statement) -> list[dict]:
    """Every operator of ``statement``'s PROFILE plan: its name, db hits and rows."""
    with store._driver.session(database=store.database) as session:
        plan = session.run("PROFILE " + statement.text, statement.params).consume().profile
    found, todo = [], [plan]
    while todo:
        op = todo.pop()
        # a ProcedureCall has no dbHits or rows of its own
        found.append({"operator": op["operatorType"].split("@")[0],
                      "db_hits": op.get("dbHits"), "rows": op.get("rows")})
        todo += op.get("children", [])
    return found


def test_plain_cypher_candidates_come_from_the_index_each_vector_read_once(neo4j_store,
                                                                           embedder):
    """Neo4j without the plugin (Aura, managed servers) finds a pattern's candidates through
    the vector indexes, no label scan, and reads each proposed node's vector once: a
    property access inside reduce() read the whole list once per dimension, and a MetaQA
    question took 1.0-1.5 s on plain Cypher, nearly all of it this statement (issue 38)."""
    graph = build_graph(neo4j_store, embedder, _movie_graph())
    plain = Neo4jStore(neo4j_store.uri, neo4j_store.username, neo4j_store.password, None,
                       native=False)
    try:
        assert type(plain.dialect) is Neo4jDialect
        pattern = pattern_from_triples([("Heat", "directed by", "UNKNOWN director 1"),
                                        ("Heat", "starred", "UNKNOWN actor 1")])
        result = search(plain, embedder, pattern, k=3)
        assert result.paths == {"vector": "cypher", "match": "cypher"}
        candidates = [s for s in result.statements if "db.index.vector.queryNodes" in s.text]
        assert len(candidates) == 1
        plan = _profile(plain, candidates[0])
    finally:
        plain.close()
    names = {op["operator"] for op in plan}
    assert "ProcedureCall" in names
    assert not names & {"AllNodesScan", "NodeByLabelScan", "NodeIndexScan"}, names
    # each operator reads a property or two per row (the vector, a key), never one per
    # dimension (384 per row before); every entity was proposed (fewer than the beam)
    assert max(op["rows"] or 0 for op in plan) >= len(graph.vectors)
    assert sum(op["db_hits"] or 0 for op in plan) > 0
    for op in plan:
        assert (op["db_hits"] or 0) <= 2 * max(op["rows"] or 0, 1), op
    # and the same exact distances as numpy's over the stored vectors
    want = {i: float(np.linalg.norm(np.asarray(v, np.float64)
                                    - np.asarray(embedder.embed(["Heat"])[0], np.float64)))
            for i, v in graph.vectors.items()}
    got = result.candidates["node:Heat"]
    assert [c.id for c in got] == sorted(want, key=lambda i: (want[i], i))[:len(got)]
    for c in got:
        assert math.isclose(c.distance, want[c.id], rel_tol=1e-12)


def test_local_neo4j_places_the_plugin_unless_told_not_to(tmp_path, monkeypatch):
    """kgdb neo4j start copies the built jar into the server's plugins/ (a copy: pruning the
    build cache never takes it from a server; KGDB_NEO4J_PLUGIN=0: not); `kgdb neo4j plugin`
    prints the same jar."""
    import shutil

    from click.testing import CliRunner

    from kgdb.cli import cli
    from kgdb.engine.neo4j_local import LocalNeo4j
    from kgdb.engine.neo4j_plugin import plugin_jar

    if not shutil.which("mvn"):
        pytest.skip("no Maven: the plugin cannot be built here")
    server = LocalNeo4j(tmp_path / "neo4j")
    server._prepare([], 7687, 7474)
    placed = list((tmp_path / "neo4j" / "plugins").iterdir())
    assert [p.name for p in placed] == [plugin_jar().name]
    assert not placed[0].is_symlink()
    assert placed[0].read_bytes() == plugin_jar().read_bytes()
    monkeypatch.setenv("KGDB_NEO4J_PLUGIN", "0")
    server._prepare([], 7687, 7474)
    assert list((tmp_path / "neo4j" / "plugins").iterdir()) == []
    out = CliRunner().invoke(cli, ["neo4j", "plugin"])
    assert out.exit_code == 0, out.output
    assert out.output.strip() == str(plugin_jar())


BI_TEXTS = st.sampled_from(["Kismet", "kismit", "Vincente Minelli", "william dieterle",
                            "Marlene", "the", "Edward (Arnold)", "a+b", "  Kismet  ", "ANN BLYTH",
                            "Howard Keel~", "Dietrich: Marlene", "x", "\\", "Kis*met"])


@SETTINGS
@given(text=BI_TEXTS | st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1,
                                  max_size=12), top_k=st.integers(1, 12))
def test_native_entities_equal_the_custom_procedure_body(movie_sample_store, text, top_k):
    """kgdb.entities (Java) gives the rows of custom.kgdb.entities' Cypher body (run here as a
    statement, with APOC Core): same ranks, ids, names, types and scores."""
    from kgdb.cypher.procedures import entities_by_text

    body = entities_by_text(Neo4jDialect()).body
    params = {"text": text, "topK": top_k}
    want = movie_sample_store.run(Statement(body, params)).records()
    got = movie_sample_store.run(Statement(
        "CALL kgdb.entities($text, $topK) YIELD rank, id, name, type, score "
        "RETURN rank, id, name, type, score", params)).records()
    assert got == want


@pytest.fixture
def movie_sample_store(plugin_store, embedder):
    from kgdb.load.triples import load_triples
    from kgdb.schema import apply_schema, parse_schema_file
    from tests.conftest import ROOT

    apply_schema(plugin_store, parse_schema_file(ROOT / "loaders/schemas/metaqa.schema"),
                 embedder)
    load_triples(plugin_store, embedder, ROOT / "loaders/samples/movies.txt", progress=False)
    plugin_store.run(plugin_store.dialect.await_indexes())
    return plugin_store


@pytest.mark.parametrize(("text", "top_k", "message"), [
    (None, 3, "kgdb: text must be given, at most 1000 characters"),
    ("x" * 1001, 3, "kgdb: text must be given, at most 1000 characters"),
    ("Kismet", 0, "kgdb: topK must be between 1 and 1000"),
    ("Kismet", None, "kgdb: topK must be between 1 and 1000"),
])
def test_native_entities_rejects_hostile_arguments(plugin_store, text, top_k, message):
    with pytest.raises(StatementError) as info:
        plugin_store.run(Statement("CALL kgdb.entities($text, $topK)",
                                   {"text": text, "topK": top_k}))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_native_nearest_entities_equal_the_custom_procedure_body(movie_sample_store, embedder):
    """kgdb.nearestEntities (Java, exact L2) against custom.kgdb.nearestEntities' Cypher body
    (L2 from the index score): the same entities in the same order, distances within the
    score's rounding."""
    from kgdb.cypher.procedures import nearest_procedures

    body = next(p for p in nearest_procedures(Neo4jDialect(), chunks=False)
                if p.name == "kgdb.nearestEntities").body
    for text, top_k in (("Kismet", 1), ("a film by William Dieterle", 5), ("Marlene", 10)):
        params = {"vector": [float(x) for x in embedder.embed([text])[0]], "topK": top_k}
        want = movie_sample_store.run(Statement(body, params)).records()
        got = movie_sample_store.run(Statement(
            "CALL kgdb.nearestEntities($vector, $topK) YIELD rank, id, name, distance "
            "RETURN rank, id, name, distance", params)).records()
        assert [r["rank"] for r in got] == [r["rank"] for r in want]
        for g, w in zip(got, want, strict=True):
            assert math.isclose(g["distance"], w["distance"], abs_tol=1e-4)
            # entities whose vectors are equal within the index score's rounding (MiniLM is
            # uncased: 'William Dieterle' and 'william dieterle') may swap places, no others
            assert g["id"] == w["id"] or math.isclose(g["distance"], w["distance"],
                                                      abs_tol=1e-6), (text, g, w)


def test_procedures_status_reports_the_plugin_against_kgdb(plugin_store):
    from kgdb.procedures import status

    assert status(plugin_store)["plugin"] == {
        "version": kgdb.__version__, "kgdb": kgdb.__version__, "matches": True, "native": True}
    plain = Neo4jStore(plugin_store.uri, plugin_store.username, plugin_store.password, None,
                       native=False)
    try:
        assert status(plain)["plugin"]["native"] is False
    finally:
        plain.close()


def test_a_plugin_of_another_version_is_reported_not_used(plugin_store, monkeypatch):
    import kgdb.engine.neo4j_plugin as plugin

    monkeypatch.setattr(plugin, "VERSION", "9.9.9")
    try:
        assert plugin_store.detect_plugin() == kgdb.__version__
        assert type(plugin_store.dialect) is Neo4jDialect
    finally:
        monkeypatch.undo()
        plugin_store.detect_plugin()
    assert isinstance(plugin_store.dialect, Neo4jNativeDialect)
