"""The Math evaluator: arithmetic and the paper's LaTeX forms, walked from the parse tree."""

from __future__ import annotations

import pytest

from kgdb.dsl.lf_ast import MathStep
from kgdb.dsl.logical_form import parse_plan
from kgdb.errors import DslError, KgdbError
from kgdb.solve.lf_math import MathError, evaluate

BOUND = {"o1": ["1994", "2000", "1994"], "o2": ["3"], "math1": ["36"], "o3": ["1971"]}
PRELUDE = "Retrieval(s=s1, p=p1:r, o=o1)\nRetrieval(s=s1, p=p2:r, o=o2)\n" \
          "Retrieval(s=s1, p=p3:r, o=o3)\nmath1 = Math(30+6)\n"


def math(expr: str) -> float:
    plan = parse_plan(PRELUDE + f"x = Math({expr})\n")
    step = plan.steps[-1]
    assert isinstance(step, MathStep) and step.expr is not None
    return evaluate(step.expr, lambda alias: BOUND[alias])


@pytest.mark.parametrize(("expr", "value"), [
    ("30+6", 36), ("2027-o3", 56), ("math1+2027-o3", 92), ("2*(3+4)", 14), ("-o2^2", -9),
    ("|o1|", 2), ("\\sum o2 + 1", 4), ("\\frac{math1}{o2}", 12), ("count(o1)", 2),
    ("max(o1) - min(o1)", 6), ("avg(o2, math1)", 19.5), ("abs(0-o2)", 3),
    ("round(10/3, 2)", 3.33), ("2^10", 1024), ("1.5e3 / 3", 500),
])
def test_values(expr: str, value: float) -> None:
    assert math(expr) == pytest.approx(value)


@pytest.mark.parametrize(("expr", "message"), [
    ("o1 + 1", "3 values"), ("1/0", "division by zero"), ("10^100000", "out of range"),
    ("o1", "values, not one number"),
])
def test_errors(expr: str, message: str) -> None:
    with pytest.raises(MathError, match=message) as info:
        math(expr)
    assert isinstance(info.value, KgdbError)


@pytest.mark.parametrize("expr", [
    "__import__('os').system('true')", "o1.__class__", "[x for x in o1]", "lambda: 1",
    "open('/etc/passwd')",
])
def test_code_is_not_an_expression(expr: str) -> None:
    with pytest.raises(DslError):
        math(expr)
