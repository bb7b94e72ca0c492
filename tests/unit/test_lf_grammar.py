"""The logical-form grammar accepts planner output as models write it, and the paper's forms;
errors carry FILE:LINE:COLUMN, the source line and a caret."""

from __future__ import annotations

import pytest
from lark import Lark

from kgdb.dsl.lf_ast import (
    BinOp,
    Card,
    CountStep,
    DeduceStep,
    Literal,
    MathStep,
    OutputStep,
    Ref,
    RetrievalStep,
    SortStep,
    SumOf,
)
from kgdb.dsl.logical_form import parse_plan
from kgdb.errors import DslError, DslSemanticError, DslSyntaxError


def test_grammar_builds_strict() -> None:
    Lark.open_from_package("kgdb", "logical_form.lark", ("dsl",), parser="lalr",
                           propagate_positions=True, strict=True,
                           start=["plan", "node", "predicate", "math"])


STEP_ACTION = """\
Step1: Which director directed Kismet?
Action1: Retrieval(s=s1:Movie[`Kismet`], p=p1:directed_by, o=o1:Person)
Step2: Which other movies did that director make?
Action2: Retrieval(s=s2:Movie, p=p2:directed_by, o=o1)
Step3: How many are there?
Action3: Math(content=[`s2`], target=`count the movies`)->math1
Action4: Output(s2, math1)
"""


def test_step_action_lines() -> None:
    plan = parse_plan(STEP_ACTION)
    kinds = [s.kind for s in plan.steps]
    assert kinds == ["retrieval", "retrieval", "math", "output"]
    first = plan.steps[0]
    assert isinstance(first, RetrievalStep)
    assert first.question == "Which director directed Kismet?"
    assert (first.s.alias, first.s.types, first.s.name) == ("s1", ("Movie",), "Kismet")
    assert first.p.relations == ("directed_by",)
    assert first.o.name is None
    math = plan.steps[2]
    assert isinstance(math, MathStep) and math.result == "math1"
    assert math.content == (Ref("s2"),) and math.target == "count the movies"
    assert plan.outputs() == (Ref("s2"), Ref("math1"))


def test_one_line_steps_full_width_and_fences() -> None:
    text = ("```\nStep1：Who directed Kismet？ Action1：Retrieval（s=s1:Movie【Kismet】，"
            "p=p1:directed_by，o=o1）\nStep2: Output. Action2: Output(o1)\n```")
    plan = parse_plan(text)
    step = plan.steps[0]
    assert isinstance(step, RetrievalStep) and step.s.name == "Kismet"
    assert step.question == "Who directed Kismet？"
    assert isinstance(plan.steps[1], OutputStep)


def test_bare_list_bullets_aliases_and_paper_forms() -> None:
    text = """\
1. get_spo(s=s1:Player[Cristiano Ronaldo], p=p1:playedFor, o=o1:SportsTeam, p.PlayedForInYear=2011)
2. retriever(s=o1, p=p2:foundationYear, o=o2:Year)
- Sort(set=o1, orderby=o2, direction=max, limit=1)
math1 = Math(30+6)
Count(o1)->nums
math5 = Math(math1 + |o2| * \\sum o2)
get(`o1`, nums)
"""
    plan = parse_plan(text)
    r1 = plan.steps[0]
    assert isinstance(r1, RetrievalStep) and r1.function == "get_spo"
    assert r1.s.name == "Cristiano Ronaldo"
    c = r1.constraints[0]
    assert (c.target, c.prop, c.op, c.value) == ("p1", "PlayedForInYear", "=", 2011)
    sort = plan.steps[2]
    assert isinstance(sort, SortStep)
    assert (sort.set.alias, sort.orderby and sort.orderby.alias, sort.direction, sort.limit) \
        == ("o1", "o2", "max", 1)
    assert isinstance(plan.steps[4], CountStep) and plan.steps[4].result == "nums"
    m5 = plan.steps[5]
    assert isinstance(m5, MathStep) and isinstance(m5.expr, BinOp)
    assert isinstance(m5.expr.right, BinOp) and isinstance(m5.expr.right.left, Card)
    assert isinstance(m5.expr.right.right, SumOf)
    assert plan.outputs() == (Ref("o1"), Ref("nums"))


def test_multi_line_call_alternatives_and_constraints() -> None:
    plan = parse_plan("""\
Retrieval(
    s=s1:Movie|Film[`Kismet`],
    p=p1:`acted in`|directed_by,
    o=o1, o.year >= 1940, s.title != "x"
)
Deduce(left=o1, right=the original identity card, op=entailment)
""")
    step = plan.steps[0]
    assert isinstance(step, RetrievalStep)
    assert step.s.types == ("Movie", "Film")
    assert step.p.relations == ("acted in", "directed_by")
    assert [(c.target, c.prop, c.op, c.value) for c in step.constraints] == [
        ("o1", "year", ">=", 1940), ("s1", "title", "<>", "x")]
    deduce = plan.steps[1]
    assert isinstance(deduce, DeduceStep)
    assert deduce.right == Literal("the original identity card")


def test_positions_are_source_positions() -> None:
    plan = parse_plan("Step1: x\nAction1：Retrieval（s=s1, p=p1:r, o=o1）\n")
    step = plan.steps[0]
    assert step.span is not None and (step.span.line, step.span.column) == (2, 9)
    assert isinstance(step, RetrievalStep) and step.o.span is not None
    assert step.o.span.column == 35


def test_syntax_error_message() -> None:
    with pytest.raises(DslSyntaxError) as info:
        parse_plan("Retrieval(s=s1:Movie[Kismet], p=p1:directed_by o=o1)\n", "plan.lf")
    err = info.value
    # the missing comma shows at the second '=' (p=... o=...)
    assert (err.line, err.column) == (1, 49)
    assert str(err).startswith("plan.lf:1:49: unexpected '='")
    lines = str(err).splitlines()
    assert lines[1] == "Retrieval(s=s1:Movie[Kismet], p=p1:directed_by o=o1)"
    assert lines[2] == " " * 48 + "^"
    assert err.context == "\n".join(lines[1:])
    assert err.expected


def test_syntax_error_inside_an_argument_points_into_it() -> None:
    with pytest.raises(DslSyntaxError) as info:
        parse_plan("Retrieval(s=s1, p=p1:r, o=o1)\nmath1 = Math(3 + * 4)\n", "m.lf")
    assert (info.value.line, info.value.column) == (2, 18)
    assert "Math expression" in str(info.value)
    with pytest.raises(DslSyntaxError) as info:
        parse_plan("Retrieval(s=s1:Movie[Kismet, p=p1:r, o=o1)")
    assert isinstance(info.value, DslError)


@pytest.mark.parametrize(("text", "message", "position"), [
    ("Count(o1)", "alias 'o1' is used before it is bound", (1, 7)),
    ("Retrieval(s=s1, p=p1:r, o=movie1)\nOutput(movei1)",
     "alias 'movei1' is used before it is bound (did you mean 'movie1'?)", (2, 8)),
    ("Retreival(s=s1, p=p1:r, o=o1)", "unknown function 'Retreival' (did you mean 'Retrieval'?)", (1, 1)),
    ("Retrieval(s=s1, p=p1:r)", "Retrieval needs the argument 'o'", (1, 1)),
    ("Retrieval(s=s1, p=p1:r, o=o1)\nSort(set=o1, ordrby=o1)",
     "unknown argument 'ordrby' for Sort (did you mean 'orderby'?)", (2, 14)),
    ("Retrieval(s=s1, p=p1:r, o=o1)\nSort(set=o1, direction=up)", "direction must be min or max", (2, 24)),
    ("Retrieval(s=s1, p=p1:r, o=o1)\nDeduce(left=o1, right=3, op=grater)",
     "unknown Deduce op 'grater' (did you mean 'greater'?)", (2, 29)),
    ("Retrieval(s=s1, p=p1:r, o=o1)\nmath1 = Math(|o1| + zz)",
     "alias 'zz' is used before it is bound", (2, 21)),
    ("Retrieval(s=s1, p=p1:r, o=o1)\nRetrieval(s=s2, p=p2:r, o=o1, x.year=3)",
     "constraint on 'x'", (2, 31)),
    ("Retrieval(s=s1, p=p1:r, o=s1)", "s and o are the same alias 's1'", (1, 27)),
])
def test_semantic_errors(text: str, message: str, position: tuple[int, int]) -> None:
    with pytest.raises(DslSemanticError) as info:
        parse_plan(text, "f.lf")
    assert message in str(info.value)
    assert (info.value.line, info.value.column) == position
    assert str(info.value).startswith(f"f.lf:{position[0]}:{position[1]}: ")
    assert str(info.value).splitlines()[-1].endswith("^")


def test_empty_program_is_an_error() -> None:
    with pytest.raises(DslSyntaxError, match="no steps"):
        parse_plan("Step1: nothing to do\n")
