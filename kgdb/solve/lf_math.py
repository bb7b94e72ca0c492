"""A safe evaluator for Math steps: walks the parsed expression (never eval/exec).

Operands are numbers, aliases bound to one numeric value, ``|A|`` (how many values A has),
``\\sum A`` and the functions count, len, sum, max, min, avg/mean, abs, round. Results are
floats kept finite and bounded; division by zero, huge powers and non-numeric operands are
:class:`MathError`, a :class:`~kgdb.errors.KgdbError`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from kgdb.dsl.lf_ast import BinOp, Card, Func, MathExpr, Neg, Num, SumOf, Var
from kgdb.dsl.numbers import NumberError, parse_float
from kgdb.errors import KgdbError

MAX_MAGNITUDE = 1e100
MAX_EXPONENT = 1000


class MathError(KgdbError):
    """A Math step that cannot be evaluated (names the cause)."""


Lookup = Callable[[str], Sequence[object]]
"""alias -> its bound values; each value is a number, or something whose text is a number."""


def evaluate(expr: MathExpr, lookup: Lookup) -> float:
    """Evaluate ``expr``; aliases are read through ``lookup``."""
    value = _eval(expr, lookup)
    if isinstance(value, list):
        if len(value) != 1:
            raise MathError(f"the expression gives {len(value)} values, not one number "
                            "(use |A| to count them or \\sum A to add them)")
        value = value[0]
    return _check(value)


def _check(value: float) -> float:
    if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        raise MathError("the result is too large or not a number")
    return value


def to_number(value: object) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    text = str(getattr(value, "text", value)).strip().replace(",", "")
    try:
        return parse_float(text)
    except NumberError as exc:
        raise MathError(str(exc)) from exc


def _values(expr: MathExpr, lookup: Lookup) -> list[object]:
    if isinstance(expr, Var):
        return list(lookup(expr.alias))
    value = _eval(expr, lookup)
    return list(value) if isinstance(value, list) else [value]


def _eval(expr: MathExpr, lookup: Lookup) -> float | list[float]:
    if isinstance(expr, Num):
        return _check(expr.value)
    if isinstance(expr, Var):
        values = [to_number(v) for v in lookup(expr.alias)]
        return values[0] if len(values) == 1 else values
    if isinstance(expr, Card):
        return float(len(_distinct(_values(expr.operand, lookup))))
    if isinstance(expr, SumOf):
        return _check(sum(to_number(v) for v in _values(expr.operand, lookup)))
    if isinstance(expr, Neg):
        return -_scalar(expr.operand, lookup)
    if isinstance(expr, BinOp):
        left, right = _scalar(expr.left, lookup), _scalar(expr.right, lookup)
        if expr.op == "+":
            return _check(left + right)
        if expr.op == "-":
            return _check(left - right)
        if expr.op == "*":
            return _check(left * right)
        if expr.op == "/":
            if right == 0:
                raise MathError("division by zero")
            return _check(left / right)
        if expr.op == "^":
            if abs(right) > MAX_EXPONENT or (left == 0 and right < 0):
                raise MathError(f"the power {left:g}^{right:g} is out of range")
            try:
                return _check(float(left ** right))
            except (OverflowError, ZeroDivisionError) as exc:
                raise MathError(f"the power {left:g}^{right:g} is out of range") from exc
            except TypeError as exc:  # a complex result
                raise MathError(f"{left:g}^{right:g} is not a real number") from exc
    if isinstance(expr, Func):
        args = [v for a in expr.args for v in _values(a, lookup)]
        name = expr.name
        if name in ("count", "len"):
            return float(len(_distinct(args)))
        numbers = [to_number(v) for v in args]
        if name == "sum":
            return _check(sum(numbers))
        if not numbers:
            raise MathError(f"{name}() of no values")
        if name == "max":
            return max(numbers)
        if name == "min":
            return min(numbers)
        if name in ("avg", "mean"):
            return _check(sum(numbers) / len(numbers))
        if name == "abs" and len(numbers) == 1:
            return abs(numbers[0])
        if name == "round" and len(numbers) in (1, 2):
            digits = int(numbers[1]) if len(numbers) == 2 else 0
            return float(round(numbers[0], max(0, min(digits, 15))))
        raise MathError(f"{name}() takes other arguments")
    raise MathError(f"cannot evaluate {type(expr).__name__}")  # pragma: no cover


def _scalar(expr: MathExpr, lookup: Lookup) -> float:
    value = _eval(expr, lookup)
    if isinstance(value, list):
        raise MathError(f"an operand has {len(value)} values, not one number "
                        "(use |A| to count them or \\sum A to add them)")
    return value


def _distinct(values: list[object]) -> list[object]:
    seen: dict[object, None] = {}
    for v in values:
        seen.setdefault(getattr(v, "key", v), None)
    return list(seen)
