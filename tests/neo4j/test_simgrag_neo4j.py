"""SimGRAG on a live Neo4j 5.26: the generated Cypher and the optimized engine agree with the
brute-force reference (runs where Docker or KGDB_NEO4J_URI exists; skipped otherwise)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from kgdb.ir import pattern_from_triples
from kgdb.retrieve.simgrag import search
from tests.live.test_simgrag_retrieval import _agree, _movie_graph, graphs_and_patterns
from tests.support.simgrag_graph import build_graph

pytestmark = pytest.mark.neo4j


@pytest.mark.parametrize("engine", ["cypher", "optimized"])
def test_simgrag_on_neo4j(neo4j_store, embedder, engine):
    build_graph(neo4j_store, embedder, _movie_graph())
    pattern = pattern_from_triples([("Heat", "starred", "UNKNOWN actor 1"),
                                    ("UNKNOWN actor 1", "starred", "UNKNOWN movie 1"),
                                    ("UNKNOWN movie 1", "directed by", "UNKNOWN director 1")])
    result = search(neo4j_store, embedder, pattern, k=1, engine=engine)
    assert [s.value_of("n3") for s in result.subgraphs] == ["Christopher Nolan"]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=graphs_and_patterns())
def test_engines_agree_with_brute_force_on_neo4j(neo4j_store, embedder, case):
    graph, triples, k, kn, kr, distinct = case
    neo4j_store.reset()
    _agree(neo4j_store, embedder, graph, triples, k, kn, kr, distinct)
