"""Compiling logical forms: one pattern per group of Retrievals, constraints as parameters,
linked names, both dialects; every Neo4j statement passes the official linter."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgdb.cypher import logical_form as cy
from kgdb.dialects import get_dialect
from kgdb.dsl.logical_form import parse_plan
from kgdb.errors import DslError
from kgdb.link import GivenLinks, lexical_relation
from kgdb.solve.lf_compile import CompileError, CypherOp, PythonOp, compile_plan
from tests.support.neo4j_lint import lint_available, lint_queries

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "dsl" / "examples").glob("*.lf"))

PAPER = """\
Step1: Identify the sports teams Cristiano Ronaldo played for in 2011.
Action1: Retrieval(s=s1:Player[Cristiano Ronaldo], p=p1:playedFor, o=o1:SportsTeam, p.PlayedForInYear=2011)
Step2: Determine the foundation years of each identified team.
Action2: Retrieval(s=o1, p=p2:brithPlace, o=o2:Year)
Step3: Which team was founded last?
Action3: Sort(set=o1, orderby=o2, direction=max, limit=1)
Count(o1)->n
Sum(o2)->total
Filter(left_expr=o2, right_expr=1900, op=gt)->old
Verify(left_expr=o1, right_expr=Madrid, op=contains)->ok
Compare(set=[n, total], op=max)->bigger
Output(o1, bigger)
"""

LINKS = GivenLinks(
    entities={"Cristiano Ronaldo": ["Q11571"]},
    relations={"playedFor": ["member_of_sports_team"], "brithPlace": ["birthPlace"]},
    types={"Player": ["Athlete", "FootballPlayer"], "SportsTeam": []},
)


def all_statements() -> list[str]:
    texts = []
    for path in EXAMPLES:
        plan = parse_plan(path.read_text(encoding="utf-8"), str(path))
        texts += [op.query.statement.text
                  for op in compile_plan(plan, get_dialect("neo4j")).statements()]
    plan = parse_plan(PAPER)
    compiled = compile_plan(plan, get_dialect("neo4j"), LINKS)
    texts += [op.query.statement.text for op in compiled.statements()]
    texts += [sub.query.statement.text for op in compiled.statements() for sub in op.fallback]
    assert any(op.fallback for op in compiled.statements())
    d = get_dialect("neo4j")
    texts += [s.text for s in (
        cy.count_chunks(d), cy.chunks_of_entities(d, ["a"], 5),
        cy.nearest_chunks(d, [0.5] * 4, 5))]
    return texts


def test_examples_exist_and_compile_for_both_dialects() -> None:
    assert len(EXAMPLES) >= 8
    for path in EXAMPLES:
        plan = parse_plan(path.read_text(encoding="utf-8"), str(path))
        for dialect in ("neo4j", "falkordb"):
            compiled = compile_plan(plan, get_dialect(dialect))
            assert compiled.statements(), path
            for op in compiled.statements():
                for value in op.query.statement.params.values():
                    assert value is not None


def test_neo4j_output_lints_clean() -> None:
    reason = lint_available()
    if reason:
        pytest.skip(reason)
    statements = all_statements()
    diagnostics = lint_queries(statements)
    bad = [(s, d) for s, d in zip(statements, diagnostics, strict=True) if d]
    assert not bad, bad


def test_shared_aliases_make_one_pattern_and_one_statement() -> None:
    plan = parse_plan(Path(EXAMPLES[0].parent / "three_hop_actors.lf").read_text())
    compiled = compile_plan(plan, get_dialect("falkordb"))
    ops = compiled.statements()
    assert len(ops) == 1
    assert len(ops[0].linked.pattern.edges) == 3 and len(ops[0].linked.pattern.nodes) == 4
    text = ops[0].query.statement.text
    assert text.count("MATCH") == 1
    assert "r0 <> r1" in text and "r1 <> r2" in text and "r0 <> r2" in text
    assert ops[0].query.statement.params["n0_name"] == "Kismet"
    assert "without a database" in compiled.notes[0]


def test_linked_names_constraints_and_aggregates() -> None:
    plan = parse_plan(PAPER)
    compiled = compile_plan(plan, get_dialect("neo4j"), LINKS)
    assert any("'SportsTeam' labels no entity in this graph" in n for n in compiled.notes)
    kinds = [op.kind for op in compiled.ops]
    assert kinds == ["match", "sort", "count", "sum", "filter", "filter", "compare", "output"]
    match = compiled.ops[0]
    assert isinstance(match, CypherOp)
    text, params = match.query.statement.text, match.query.statement.params
    assert "[r0:`member_of_sports_team`]" in text and "[r1:`birthPlace`]" in text
    assert "n0.id IN $n0_ids" in text and params["n0_ids"] == ["Q11571"]
    assert "(n0:`Athlete` OR n0:`FootballPlayer`)" in text
    assert "toFloat(r0.`PlayedForInYear`) = $r0_c0" in text and params["r0_c0"] == 2011
    sort = compiled.ops[1]
    assert isinstance(sort, CypherOp)
    assert "ORDER BY" in sort.query.statement.text and sort.query.statement.params["limit"] == 1
    assert set(sort.bound.values()) == {"s1", "o1", "o2"}
    assert isinstance(compiled.ops[6], PythonOp)


def test_falkordb_text_differs_only_where_the_dialect_says() -> None:
    plan = parse_plan(PAPER)
    links = LINKS
    neo = compile_plan(plan, get_dialect("neo4j"), links)
    falkor = compile_plan(plan, get_dialect("falkordb"), links)
    assert [op.query.statement.text for op in neo.statements()] == \
        [op.query.statement.text for op in falkor.statements()]


def test_lexical_relation_linking() -> None:
    types = ["birthPlace", "directed_by", "starred_actors", "release_year"]
    assert lexical_relation("brithPlace", types) == ("birthPlace",)
    assert lexical_relation("directed by", types) == ("directed_by",)
    assert lexical_relation("Release_Year", types) == ("release_year",)
    assert lexical_relation("spouse", types) == ()
    metaqa = ["directed_by", "starred_actors", "written_by", "release_year", "in_language",
              "has_genre", "has_tags", "has_imdb_rating", "has_imdb_votes"]
    assert lexical_relation("director", metaqa) == ("directed_by",)
    assert lexical_relation("actor", metaqa) == ("starred_actors",)
    assert lexical_relation("writer", metaqa) == ("written_by",)
    assert lexical_relation("releaseYear", metaqa) == ("release_year",)
    assert lexical_relation("language", metaqa) == ("in_language",)
    assert lexical_relation("imdb", metaqa) == ()  # ambiguous: rating or votes


def test_hostile_names_stay_parameters_or_quoted() -> None:
    plan = parse_plan("Retrieval(s=s1[`x'}) DETACH DELETE n //`], p=p1:`a b`, o=o1, "
                      "o.name = \"'; MATCH (n) DELETE n\")")
    for dialect in ("neo4j", "falkordb"):
        text = compile_plan(plan, get_dialect(dialect)).statements()[0].query.statement.text
        assert "DELETE" not in text and "`a b`" in text


def test_unlinkable_identifier_is_a_dsl_error() -> None:
    plan = parse_plan(f"Retrieval(s=s1, p=p1:{'r' * 300}, o=o1)")
    with pytest.raises(CompileError) as info:
        compile_plan(plan, get_dialect("falkordb"))
    assert isinstance(info.value, DslError)


def test_reference_lists_every_example_and_cli_verb() -> None:
    readme = (Path(__file__).resolve().parents[2] / "dsl" / "README.md").read_text()
    assert "## Logical forms" in readme
    for path in EXAMPLES:
        assert f"`{path.name}`" in readme, path.name
    from kgdb.cli.lf import lf

    for verb in ("compile", "run"):
        assert f"kgdb lf {verb}" in readme and verb in lf.commands


def test_sort_by_an_unconnected_alias_is_an_error() -> None:
    plan = parse_plan("Retrieval(s=s1[a], p=p1:r, o=o1)\nCount(o1)->n\n"
                      "Retrieval(s=s2[b], p=p2:r, o=o2)\nSort(set=o1, orderby=o2)", "s.lf")
    with pytest.raises(CompileError, match=r"s.lf:4:1: Sort: orderby=o2 is not connected"):
        compile_plan(plan, get_dialect("neo4j"))
