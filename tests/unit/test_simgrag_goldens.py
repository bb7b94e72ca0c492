"""SimGRAG's statements (kgdb/cypher/pattern.py, and the linker's kgdb/cypher/link.py) as a
golden table, both dialects side by side in tests/unit/goldens/simgrag.json, every Neo4j text
linted; plus the properties every generated match must have.

Regenerate with ``KGDB_UPDATE_GOLDENS=1 pytest tests/unit/test_simgrag_goldens.py`` and
review the diff."""

from __future__ import annotations

import re

import pytest

from kgdb.cypher import link as cl
from kgdb.cypher import pattern as cy
from kgdb.dialects import Dialect, FalkorDBDialect, Neo4jDialect
from kgdb.dialects.neo4j import Neo4jNativeDialect
from kgdb.dsl.pattern import pattern_from_triples
from kgdb.ir import (
    Candidate,
    Constraint,
    EdgeRef,
    LinkedEdge,
    LinkedNode,
    LinkedPattern,
    NodeRef,
    Pattern,
)
from tests.support.goldens import Case, assert_neo4j_lints_clean, validate_all

SHAPES = {
    "one_hop": [("A", "r", "UNKNOWN x 1")],
    "two_unknowns": [("A", "r", "UNKNOWN x 1"), ("UNKNOWN y 2", "s", "UNKNOWN x 1")],
    "cycle": [("A", "r", "B"), ("B", "s", "C"), ("C", "t", "A")],
    "parallel": [("A", "r", "B"), ("A", "s", "B")],
    "nothing_known": [("UNKNOWN a 1", "UNKNOWN r 1", "UNKNOWN b 2")],
    "three_hops": [("A", "r", "UNKNOWN x 1"), ("UNKNOWN x 1", "s", "UNKNOWN y 2"),
                   ("UNKNOWN y 2", "t", "UNKNOWN z 3")],
}


def linked(pattern: Pattern, *, typed: bool = False, distinct: str = "all",
           many: int = 1) -> LinkedPattern:
    """Every known node and relation linked to ``many`` candidates; unknowns typed or not."""
    cands = tuple(Candidate(f"e{i}", f"E{i}", 0.1 * (i + 1)) for i in range(many))
    return LinkedPattern(
        pattern,
        tuple(LinkedNode(n, cands if n.known else None,
                         ("Person",) if typed and not n.known else ()) for n in pattern.nodes),
        tuple(LinkedEdge(e, tuple(Candidate(f"T{i}", f"T{i}", 0.2) for i in range(many))
                         if e.known else None) for e in pattern.edges),
        distinct)  # type: ignore[arg-type]


def directed_constrained() -> LinkedPattern:
    """A directed edge with constraints on both ends and on the relationship."""
    pattern = Pattern(
        (NodeRef("a", "Kismet", constraints=(Constraint("year", ">=", 1940),)),
         NodeRef("b", None, ("Person",), (Constraint("name", "<>", "x"),))),
        (EdgeRef("r", "b", "a", "directed", constraints=(Constraint("since", "=", "1944"),),
                 directed=True),))
    return linked(pattern, typed=True)


def match_cases() -> list[Case]:
    cases = []
    for name, shape in SHAPES.items():
        for typed in (False, True):
            lp = linked(pattern_from_triples(shape), typed=typed)
            plan = cy.plan_match(lp)
            suffix = f"{name}{'[typed]' if typed else ''}"
            cases.append(Case(f"match_topk[{suffix}]", {"shape": shape, "typed": typed},
                              lambda d, lp=lp, plan=plan: cy.match_topk(d, lp, plan, k=3)))
            if any(n.candidates is not None for n in lp.nodes):
                remaining = [0.5] * (len(plan.order) + 1)
                cases.append(Case(f"match_topk_pruned[{suffix}]",
                                  {"shape": shape, "typed": typed, "tau": 1.25},
                                  lambda d, lp=lp, plan=plan, rest=remaining: cy.match_topk_pruned(
                                      d, lp, plan, k=3, remaining=rest).at(1.25)))
    known = linked(pattern_from_triples(SHAPES["three_hops"]), distinct="known")
    cases.append(Case("match_topk[three_hops, distinct=known]", {"distinct": "known"},
                      lambda d: cy.match_topk(d, known, cy.plan_match(known), k=3)))
    dc = directed_constrained()
    cases.append(Case("match_topk[directed, constraints]", {"pattern": dc.pattern.to_json()},
                      lambda d: cy.match_topk(d, dc, cy.plan_match(dc), k=3)))
    cases.append(Case("match_topk[hostile label]", {"label": "Ent`ity"},
                      lambda d: cy.match_topk(d, known, cy.plan_match(known), k=1,
                                              label="Ent`ity")))
    return cases


def expand_cases() -> list[Case]:
    lp = linked(pattern_from_triples(SHAPES["cycle"]))
    typed = linked(pattern_from_triples(SHAPES["nothing_known"]), typed=True)
    dc = directed_constrained()
    return [
        Case("expand_edge[to candidates]", {"shape": "cycle", "edge": 0, "head": 0},
             lambda d: cy.expand_edge(d, lp, 0, 0, "e0")),
        Case("expand_edge[to a bound node]", {"shape": "cycle", "edge": 2, "head": 2},
             lambda d: cy.expand_edge(d, lp, 2, 2, "e0", target_id="e1")),
        Case("expand_edge[typed unknown, any relation]", {"shape": "nothing_known"},
             lambda d: cy.expand_edge(d, typed, 0, 0, "e0")),
        Case("expand_edge[directed, from the head]", {"pattern": "directed", "head": "b"},
             lambda d: cy.expand_edge(d, dc, 0, 1, "e0")),
        Case("expand_edge[directed, from the tail]", {"pattern": "directed", "head": "a"},
             lambda d: cy.expand_edge(d, dc, 0, 0, "e0")),
    ]


def link_cases() -> list[Case]:
    v = (0.25, 0.5)
    node = cl.VectorSearch("Entity", "id", "name", 16, (v, v))
    relation = cl.VectorSearch("RelationType", "name", "name", 8, (v,))
    kind = cl.VectorSearch("EntityType", "name", "name", 4, (v,))
    return [
        Case("vector_candidates[entities, relations, labels]", {"k": [16, 8]},
             lambda d: cl.vector_candidates(d, [node, relation], with_labels=True)),
        Case("vector_candidates[types]", {"k": [4]},
             lambda d: cl.vector_candidates(d, [kind])),
        Case("entities_named", {"names": ["Kismet", "x`]->() DELETE n //"]},
             lambda d: cl.entities_named(d, ["Kismet", "x`]->() DELETE n //"])),
        Case("entities_named_ignoring_case", {"names": ["kismet", "Paris, Texas (1984)"]},
             lambda d: cl.entities_named_ignoring_case(d, ["kismet", "Paris, Texas (1984)"])),
        Case("entities_named_ignoring_case[scan]", {"names": ["kismet"], "fulltext": False},
             lambda d: cl.entities_named_ignoring_case(d, ["kismet"], fulltext=False)),
        Case("relationship_types", {}, lambda d: cl.relationship_types()),
        Case("entity_type_catalog", {}, lambda d: cl.entity_type_catalog()),
        Case("count_labelled", {"label": "Movie"}, lambda d: cl.count_labelled(d, "Movie")),
    ]


CASES = match_cases() + expand_cases() + link_cases()


def test_simgrag_goldens() -> None:
    table = validate_all("simgrag", CASES)
    assert_neo4j_lints_clean(table)


def _text(dialect: Dialect, shape: str, **kw: object) -> str:
    lp = linked(pattern_from_triples(SHAPES[shape]), **kw)  # type: ignore[arg-type]
    return cy.match_topk(dialect, lp, cy.plan_match(lp), k=3).text


def test_isomorphism_is_stated_explicitly() -> None:
    text = _text(FalkorDBDialect(), "cycle")
    for a, b in (("n1", "n0"), ("n2", "n0"), ("n2", "n1")):
        assert f"{a} <> {b}" in text
    assert "r1 <> r0" in text and "r2 <> r0" in text and "r2 <> r1" in text
    assert "-[r0]-(" in text and "->" not in text  # SimGRAG's patterns are undirected
    assert "r1 <> r0" in _text(FalkorDBDialect(), "parallel")


def test_known_distinctness_lets_distant_unknowns_coincide() -> None:
    text = _text(Neo4jDialect(), "three_hops", distinct="known")
    assert "n3 <> n1" not in text and "n2 <> n1" in text and "n3 <> n2" in text
    assert "n1 <> n0" in text and "n3 <> n0" in text


def test_direction_and_constraints_are_honoured() -> None:
    dc = directed_constrained()
    text = cy.match_topk(Neo4jDialect(), dc, cy.plan_match(dc), k=3).text
    assert "(n0)<-[r0]-(n1" in text  # anchored on Kismet, the edge points at it
    statement = cy.match_topk(Neo4jDialect(), dc, cy.plan_match(dc), k=3)
    assert "toFloat(n0.`year`) >= $n0_c0" in statement.text
    assert statement.params["n0_c0"] == 1940 and statement.params["r0_c0"] == "1944"
    assert "(n1:`Person`)" in statement.text and "n1.`name` <> $n1_c0" in statement.text
    assert "r0.`since` = $r0_c0" in statement.text


def test_anchor_is_the_node_with_fewest_candidates() -> None:
    p = pattern_from_triples([("A", "r", "B"), ("B", "s", "UNKNOWN c 1")])
    many = tuple(Candidate(str(i), str(i), 0.1 * i) for i in range(5))
    lp = LinkedPattern(p, (LinkedNode(p.nodes[0], many), LinkedNode(p.nodes[1], many[:2]),
                           LinkedNode(p.nodes[2])),
                       tuple(LinkedEdge(e, many) for e in p.edges))
    plan = cy.plan_match(lp)
    assert plan.anchor == 1
    statement = cy.match_topk(FalkorDBDialect(), lp, plan, k=3)
    assert statement.text.startswith("UNWIND $n1 AS c1\nMATCH (n1:`Entity` {id: c1.id})")
    assert statement.params["n1"] == [{"id": "0", "d": 0.0}, {"id": "1", "d": 0.1}]


def test_gsd_is_summed_in_canonical_order() -> None:
    text = _text(FalkorDBDialect(), "cycle")
    assert "dn0 + dn1 + dn2 + dr0 + dr1 + dr2 AS gsd" in text
    assert "\nORDER BY gsd ASC\nLIMIT $k\n" in text  # ties in the engine's order


def test_pruned_match_has_a_ranked_and_an_unordered_text() -> None:
    """The pruned engine's two texts differ only in ranking: the unordered one (one
    achievable GSD per run: every row tied) lets the engine stop after ``limit`` rows."""
    lp = linked(pattern_from_triples(SHAPES["three_hops"]))
    plan = cy.plan_match(lp)
    pruned = cy.match_topk_pruned(FalkorDBDialect(), lp, plan, k=3, remaining=[0.5] * 4)
    ranked = pruned.at(1.25, above=0.5, limit=2)
    level = pruned.at(1.25, above=0.5, limit=2, ordered=False)
    assert ranked.text.replace("\nORDER BY gsd ASC", "") == level.text
    assert "ORDER BY" not in level.text
    assert "WHERE gsd > $above" in level.text
    assert level.params["tau"] == 1.25 and level.params["above"] == 0.5
    assert level.params["k"] == 2 and ranked.params == level.params


def test_exact_l2_per_dialect() -> None:
    assert "reduce(" in Neo4jDialect().exact_l2_distance("stored", "$vector")
    assert Neo4jDialect().exact_l2_prepared("stored", "qv") == (
        "sqrt(reduce(acc = 0.0, i IN range(0, size(qv) - 1) | acc + (stored[i] - qv[i]) ^ 2))")
    # a property access inside reduce() is read from the store once per element
    for stored, query in (("node.embedding", "qv"), ("stored", "q.vector"),
                          ("node.`embedding`", "$q")):
        with pytest.raises(ValueError, match="variable or a parameter"):
            Neo4jDialect().exact_l2_prepared(stored, query)
    assert FalkorDBDialect().exact_l2_distance("node.embedding", "q.vector") == \
        "vec.euclideanDistance(node.embedding, vecf32(q.vector))"


def _reduce_bodies(text: str) -> list[str]:
    """The text inside each ``reduce( ... )`` of ``text`` (parentheses balanced)."""
    bodies = []
    for m in re.finditer(r"reduce\(", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        bodies.append(text[m.end():i - 1])
    return bodies


def test_plain_neo4j_candidates_ask_the_index_and_reduce_over_variables() -> None:
    """The plain Neo4j dialect's candidate search (no plugin: Aura, managed servers) proposes
    through the vector index, reads each proposal's vector once (a variable) and re-ranks it
    exactly; no label scan, and no property read inside reduce() (which reads the whole list
    once per dimension: a MetaQA question took 1.0-1.5 s on plain Cypher, issue 38)."""
    d = Neo4jDialect()
    searches = [cl.VectorSearch("Entity", "id", "name", 16, ([0.25, 0.5],)),
                cl.VectorSearch("RelationType", "name", "name", 16, ([0.25, 0.5],)),
                cl.VectorSearch("EntityType", "name", "name", 4, ([0.25, 0.5],))]
    text = cl.vector_candidates(d, searches, with_labels=True).text
    assert text.count("CALL db.index.vector.queryNodes(") == 3
    assert "MATCH" not in text  # every node comes from an index proposal
    assert text.count("WITH node, node.`embedding` AS stored, qv AS query\n") == 3
    bodies = _reduce_bodies(text)
    assert len(bodies) == 3
    for body in bodies:
        assert "." not in body.replace("0.0", ""), body  # no property or map access
        assert "stored[i]" in body and "query[i]" in body
    # the native dialect keeps its own call, the plain one reduce(): the same bits
    assert "reduce(" not in Neo4jNativeDialect().nearest_top("Entity", "embedding", "$k",
                                                             "$v", "$v")
