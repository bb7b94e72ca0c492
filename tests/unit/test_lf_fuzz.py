"""Fuzzing: random and mutated plans. Parsing and compiling raise only kgdb's DslError,
never another exception type, and never hang (hypothesis deadlines)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgdb.dialects import get_dialect
from kgdb.dsl.logical_form import parse_plan
from kgdb.errors import DslError
from kgdb.link import GivenLinks
from kgdb.solve.lf_compile import compile_plan

EXAMPLES = [p.read_text(encoding="utf-8") for p in
            sorted((Path(__file__).resolve().parents[2] / "dsl" / "examples").glob("*.lf"))]

ALPHABET = "abcxyzsopSO123 _-.:,;()[]{}<>=!|`\"'\\/#*+^\n\t：（），【】→é漢"
TOKENS = ["Retrieval", "Sort", "Count", "Math", "Deduce", "Output", "Filter", "Compare",
          "get_spo", "Step1:", "Action1:", "s=", "p=", "o=", "s1", "o1", "p1", ":Movie",
          "[`Kismet`]", "->x", "math1 =", "|o1|", "\\sum", "\\frac{", "}", "(", ")", ",",
          "o.year>2000", "op=greater", "set=", "orderby=", "limit=1", "\n", " ", "`", "["]


def check(text: str) -> None:
    try:
        plan = parse_plan(text, "fuzz.lf")
        links = GivenLinks(relations={"directed_by": ["directed_by"]})
        for dialect in ("neo4j", "falkordb"):
            compile_plan(plan, get_dialect(dialect))
            compile_plan(plan, get_dialect(dialect), links)
    except DslError as exc:
        text_of_error = str(exc)
        assert text_of_error.strip()
        if hasattr(exc, "line"):
            assert exc.line >= 1 and exc.column >= 1


FUZZ = settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.text(alphabet=ALPHABET, max_size=200))
def test_random_text(text: str) -> None:
    check(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map("".join))
def test_token_soup(text: str) -> None:
    check(text)


@FUZZ
@given(st.sampled_from(EXAMPLES), st.data())
def test_mutated_examples(example: str, data: st.DataObject) -> None:
    text = example
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(text)))
        action = data.draw(st.sampled_from(["delete", "insert", "duplicate"]))
        if action == "delete":
            end = data.draw(st.integers(pos, min(len(text), pos + 6)))
            text = text[:pos] + text[end:]
        elif action == "insert":
            text = text[:pos] + data.draw(st.sampled_from(TOKENS + list(ALPHABET))) + text[pos:]
        else:
            end = data.draw(st.integers(pos, min(len(text), pos + 30)))
            text = text[:pos] + text[pos:end] * 2 + text[end:]
    check(text)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    check("Retrieval(s=s1, p=p1:r, o=o1)\nx = Math(" + "(" * 5000 + "1" + ")" * 5000 + ")")
    check("Output(" + "[" * 3000 + "o1" + "]" * 3000 + ")")


MATH_TOKENS = ["1", "2.5", "0", "1e308", "o1", "n", "+", "-", "*", "/", "^", "(", ")", "|",
               "\\sum ", "\\frac{", "}{", "}", "count(", "max(", "round(", ",", " "]


@FUZZ
@given(st.lists(st.sampled_from(MATH_TOKENS), min_size=1, max_size=30).map("".join))
def test_math_expressions_fail_only_with_kgdb_errors(expr: str) -> None:
    from kgdb.dsl.lf_ast import MathStep
    from kgdb.errors import KgdbError
    from kgdb.solve.lf_math import evaluate

    try:
        plan = parse_plan(f"Retrieval(s=s1, p=p1:r, o=o1)\nn = Math(2)\nx = Math({expr})")
    except DslError:
        return
    step = plan.steps[-1]
    assert isinstance(step, MathStep) and step.expr is not None
    bound = {"o1": ["3", "4"], "n": ["2"]}
    try:
        value = evaluate(step.expr, lambda a: bound[a])
    except KgdbError:
        return
    assert value == value and abs(value) <= 1e100  # finite, bounded
