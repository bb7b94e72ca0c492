"""The SimGRAG statements: shape checks, and every Neo4j statement lints clean."""

from __future__ import annotations

import itertools

import pytest

from kgdb.cypher import simgrag as cy
from kgdb.dialects import FalkorDBDialect, Neo4jDialect
from kgdb.dsl.pattern import pattern_from_triples
from kgdb.retrieve.simgrag import _ComponentInput, plan_component
from tests.support.neo4j_lint import format_diagnostics, lint_available, lint_queries


def _plans() -> list[cy.MatchPlan]:
    """Plans for every pattern shape and slot mode the retrieval generates."""
    from kgdb.retrieve.simgrag import Candidate

    shapes = [
        [("A", "r", "UNKNOWN x 1")],
        [("A", "r", "UNKNOWN x 1"), ("UNKNOWN y 2", "s", "UNKNOWN x 1")],
        [("A", "r", "B"), ("B", "s", "C"), ("C", "t", "A")],  # a cycle
        [("A", "r", "B"), ("A", "s", "B")],  # parallel edges
        [("UNKNOWN a 1", "UNKNOWN r 1", "UNKNOWN b 2")],  # nothing known
        [("A", "r", "UNKNOWN x 1"), ("UNKNOWN x 1", "s", "UNKNOWN y 2"),
         ("UNKNOWN y 2", "t", "UNKNOWN z 3")],  # 3 hops
    ]
    plans = []
    cand = [Candidate("a", "a", 0.1)]
    for shape, typed in itertools.product(shapes, (False, True)):
        p = pattern_from_triples(shape)
        inp = _ComponentInput(
            p,
            [cand if n.known else None for n in p.nodes],
            [None if n.known else (["Person"] if typed else None) for n in p.nodes],
            [cand if e.known else None for e in p.edges])
        plans.append(plan_component(inp))
    return plans


def _statements(dialect) -> list[str]:
    texts = []
    for plan in _plans():
        texts.append(cy.match_topk(dialect, plan).text)
        texts.append(cy.match_topk(dialect, plan, prune=True).text)
    for target, edge in itertools.product(("ids", "labels", "any", "bound"), ("types", "any")):
        texts.append(cy.expand_edge(dialect, target=target, edge=edge).text)
    node = ("node", "Entity", "id", "name")
    relation = ("relation", "RelationType", "name", "name")
    kind = ("type", "EntityType", "name", "name")
    texts.append(cy.search_candidates(dialect, [node, relation], with_labels=True).text)
    texts.append(cy.search_candidates(dialect, [node, relation]).text)
    texts.append(cy.search_candidates(dialect, [kind]).text)
    texts.append(cy.search_candidates(dialect, [node]).text)
    return texts


def test_every_neo4j_statement_lints_clean():
    reason = lint_available()
    if reason:
        pytest.skip(reason)
    texts = _statements(Neo4jDialect())
    for text, diags in zip(texts, lint_queries(texts), strict=True):
        assert diags == [], format_diagnostics(text, diags)


def test_isomorphism_is_stated_explicitly():
    plan = _plans()[4]  # the cycle A-B-C
    text = cy.match_topk(FalkorDBDialect(), plan).text
    for a, b in (("n1", "n0"), ("n2", "n0"), ("n2", "n1")):
        assert f"{a} <> {b}" in text
    assert "r1 <> r0" in text and "r2 <> r0" in text and "r2 <> r1" in text
    assert "-[r0]-" in text  # direction ignored
    parallel = cy.match_topk(FalkorDBDialect(), _plans()[6]).text
    assert "r1 <> r0" in parallel


def test_anchor_is_the_node_with_fewest_candidates():
    from kgdb.retrieve.simgrag import Candidate

    p = pattern_from_triples([("A", "r", "B"), ("B", "s", "UNKNOWN c 1")])
    many = [Candidate(str(i), str(i), 0.1 * i) for i in range(5)]
    inp = _ComponentInput(p, [many, many[:2], None], [None, None, None], [many, many])
    plan = plan_component(inp)
    assert plan.anchor == 1
    text = cy.match_topk(FalkorDBDialect(), plan).text
    assert text.startswith("UNWIND $n1 AS c1\nMATCH (n1:`Entity` {id: c1.id})")


def test_gsd_is_summed_in_canonical_order():
    text = cy.match_topk(FalkorDBDialect(), _plans()[4]).text
    assert "dn0 + dn1 + dn2 + dr0 + dr1 + dr2 AS gsd" in text
    assert ("ORDER BY gsd ASC, n0.id ASC, n1.id ASC, n2.id ASC, type(r0) ASC, "
            "startNode(r0).id ASC") in text


def test_exact_l2_per_dialect():
    assert "reduce(" in Neo4jDialect().exact_l2_distance("node.embedding", "q.vector")
    assert "reduce(" in Neo4jDialect().exact_l2_prepared("node.embedding", "qv")
    assert FalkorDBDialect().exact_l2_distance("node.embedding", "q.vector") == \
        "vec.euclideanDistance(node.embedding, vecf32(q.vector))"


def test_hostile_label_is_quoted():
    text = cy.match_topk(Neo4jDialect(), _plans()[0], label="Ent`ity").text
    assert "(n1:`Ent``ity`)" in text
