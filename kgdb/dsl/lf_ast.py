"""The logical-form AST: source positions, node and predicate specs, operands, math
expressions, the steps of a plan and the plan (frozen dataclasses with spans)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kgdb.errors import DslSemanticError, DslSyntaxError

# ---------------------------------------------------------------------------------- positions

@dataclass(frozen=True)
class Span:
    """Where a piece of program text is: 1-based line and column, and character offsets."""

    line: int
    column: int
    start: int
    end: int


class Source:
    """The program text with its name, turning offsets into positions and errors."""

    def __init__(self, text: str, file: str = "<input>") -> None:
        self.text = text
        self.file = file
        self._line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def position(self, offset: int) -> tuple[int, int]:
        import bisect

        offset = max(0, min(offset, len(self.text)))
        index = bisect.bisect_right(self._line_starts, offset) - 1
        return index + 1, offset - self._line_starts[index] + 1

    def span(self, start: int, end: int) -> Span:
        line, column = self.position(start)
        return Span(line, column, start, end)

    def line_text(self, line: int) -> str:
        lines = self.text.split("\n")
        return lines[line - 1].rstrip("\r") if 0 < line <= len(lines) else ""

    def semantic_error(self, message: str, span: Span | None) -> DslSemanticError:
        line, column = (span.line, span.column) if span else (1, 1)
        return DslSemanticError(message, line=line, column=column,
                                source_line=self.line_text(line), file=self.file)

    def syntax_error(self, message: str, offset: int,
                     expected: tuple[str, ...] = ()) -> DslSyntaxError:
        line, column = self.position(offset)
        return DslSyntaxError(message, line=line, column=column,
                              source_line=self.line_text(line), expected=expected,
                              file=self.file)


# ---------------------------------------------------------------------------------- AST

@dataclass(frozen=True)
class NodeSpec:
    """``s1:Movie|Film[`Kismet`]``: an alias, type hints, and a name at the first mention."""

    alias: str
    types: tuple[str, ...] = ()
    name: str | None = None
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class PredSpec:
    """``p1:directed_by|`written by```: an alias and relation phrases (none = any relation)."""

    alias: str
    relations: tuple[str, ...] = ()
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Ref:
    """A reference to a bound alias; ``prop`` for ``o1.year``."""

    alias: str
    prop: str | None = None
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Literal:
    """A constant of a logical form or a rule: a number, a piece of text, or (rules) true or
    false."""

    value: bool | float | int | str
    span: Span | None = field(default=None, compare=False)


Operand = Ref | Literal


@dataclass(frozen=True)
class ConstraintSpec:
    """``o.year > 2000``: ``target`` is ``s``, ``p``, ``o`` or an alias."""

    target: str
    prop: str
    op: str
    value: float | int | str
    span: Span | None = field(default=None, compare=False)


# Math expressions -----------------------------------------------------------------------

@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Var:
    alias: str
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class BinOp:
    op: str
    left: MathExpr
    right: MathExpr


@dataclass(frozen=True)
class Neg:
    operand: MathExpr


@dataclass(frozen=True)
class Card:
    """``|A|``: the number of distinct values bound to A."""

    operand: MathExpr


@dataclass(frozen=True)
class SumOf:
    """``\\sum A``: the sum of A's numeric values."""

    operand: MathExpr


@dataclass(frozen=True)
class Func:
    name: str
    args: tuple[MathExpr, ...]
    span: Span | None = field(default=None, compare=False)


MathExpr = Num | Var | BinOp | Neg | Card | SumOf | Func

MATH_FUNCTIONS = ("count", "len", "sum", "max", "min", "avg", "mean", "abs", "round")


# Steps -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """What every step has: the function as written, its ``->alias`` and its question text."""

    function: str
    result: str | None
    question: str | None
    span: Span | None = field(compare=False)

    @property
    def kind(self) -> str:
        return type(self).__name__.removesuffix("Step").lower()


@dataclass(frozen=True)
class RetrievalStep(Step):
    s: NodeSpec
    p: PredSpec
    o: NodeSpec
    constraints: tuple[ConstraintSpec, ...] = ()


@dataclass(frozen=True)
class SortStep(Step):
    set: Ref
    orderby: Ref | None
    direction: str
    limit: int | None


@dataclass(frozen=True)
class CountStep(Step):
    set: Ref


@dataclass(frozen=True)
class SumStep(Step):
    set: Ref


@dataclass(frozen=True)
class CompareStep(Step):
    sets: tuple[Ref, ...]
    op: str


@dataclass(frozen=True)
class FilterStep(Step):
    left: Ref
    right: Operand
    op: str
    verify: bool = False


@dataclass(frozen=True)
class MathStep(Step):
    expr: MathExpr | None
    content: tuple[Operand, ...] = ()
    target: str | None = None
    text: str = ""


@dataclass(frozen=True)
class DeduceStep(Step):
    op: str
    left: Operand | None = None
    right: Operand | None = None
    content: tuple[Operand, ...] = ()
    target: str | None = None


@dataclass(frozen=True)
class OutputStep(Step):
    values: tuple[Operand, ...]


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    source: str = field(default="", compare=False)
    file: str = field(default="<input>", compare=False)

    def outputs(self) -> tuple[Operand, ...]:
        for step in reversed(self.steps):
            if isinstance(step, OutputStep):
                return step.values
        return ()
