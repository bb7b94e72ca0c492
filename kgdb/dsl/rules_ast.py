"""The rule language's AST (frozen dataclasses with spans) and the checked rule set. Spans
and constants are the logical forms' (:class:`~kgdb.dsl.lf_ast.Span`,
:class:`~kgdb.dsl.lf_ast.Literal`): one type for each.

Stages (reference: dsl/README.md, "Rules")::

    text --kgdb.dsl.rules_parser--> Program --kgdb.dsl.rules_check.analyse()--> RuleSet
         --kgdb.solve.rules.evaluate() (pure Python, the reference)
         / kgdb.cypher.rules (Cypher, per dialect)
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from kgdb.dsl.lf_ast import Literal, Span
from kgdb.errors import DslSemanticError

DEFAULT_PREDICATE = "belongTo"
"""The relationship a conclusion is written as, unless the Define names a predicate."""

SUBRULE_NAME = re.compile(r"^R\d+$")
"""Names reserved for sub-rules (back-quote a property so named)."""


NO_SPAN = Span(0, 0, 0, 0)
"""The span of a construct built by code rather than parsed."""


@dataclass(frozen=True)
class ConceptKey:
    """A concept of a concept type: ``DiseaseSeverity/'Grade 2 Hypertension'``."""

    type: str
    name: str

    @property
    def id(self) -> str:
        """The concept node's ``id`` property: ``DiseaseSeverity/Grade 2 Hypertension``."""
        return f"{self.type}/{self.name}"

    def text(self) -> str:
        """The concept as it is written in a rule."""
        return f"{self.type}/{quote_concept_name(self.name)}"


@dataclass(frozen=True)
class Property:
    name: str
    span: Span = field(default=NO_SPAN, compare=False)


Operand = Property | Literal


@dataclass(frozen=True)
class Compare:
    left: Operand
    op: str
    """One of ``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=`` (``==`` and ``!=`` are normalised)."""
    right: Operand
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Truthy:
    """A bare property: true when present and not ``false``, ``0`` or ``''``; unknown when missing."""

    prop: Property
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class And:
    items: tuple[Expr, ...]
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Or:
    items: tuple[Expr, ...]
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Not:
    item: Expr
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class ConceptRef:
    """True when the instance belongs to ``concept`` (its raw membership, before priorities)."""

    concept: ConceptKey
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class NameRef:
    """A bare name as parsed; :func:`analyse` turns it into a :class:`SubRuleRef` or a :class:`Truthy`."""

    name: str
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class SubRuleRef:
    """A use of a named sub-rule; ``expr`` is the sub-rule's (resolved) body."""

    name: str
    expr: Expr
    span: Span = field(default=NO_SPAN, compare=False)


Expr = Compare | Truthy | And | Or | Not | ConceptRef | NameRef | SubRuleRef


@dataclass(frozen=True)
class SubRule:
    name: str
    description: str | None
    expr: Expr
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Define:
    concept: ConceptKey
    expr: Expr
    subject: str | None = None
    predicate: str | None = None
    subrules: tuple[SubRule, ...] = ()
    span: Span = field(default=NO_SPAN, compare=False)
    concept_span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class PriorityEntry:
    key: str
    value: int | float
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Priority:
    type: str
    entries: tuple[PriorityEntry, ...]
    span: Span = field(default=NO_SPAN, compare=False)


Item = Define | Priority | SubRule


@dataclass(frozen=True)
class Program:
    """A parsed rule file, before names are resolved."""

    items: tuple[Item, ...]
    source: str = field(default="", compare=False, repr=False)
    source_name: str = field(default="<rules>", compare=False)


def source_line(source: str, line: int) -> str:
    """Line ``line`` (1-based) of ``source``, or '' outside it."""
    lines = source.splitlines()
    return lines[line - 1] if 1 <= line <= len(lines) else ""


def quote_concept_name(name: str) -> str:
    if "'" not in name and "\\" not in name and "\n" not in name:
        return f"'{name}'"
    if "`" not in name and "\n" not in name:
        return f"`{name}`"
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


@dataclass(frozen=True)
class Rule:
    """One checked Define: what it concludes, its resolved body, and its priority standing."""

    concept: ConceptKey
    expr: Expr
    """The body with names resolved (sub-rules as :class:`SubRuleRef`, properties as :class:`Truthy`)."""
    subject: str | None
    predicate: str
    priority: int | float | None
    outranked_by: tuple[ConceptKey, ...]
    """Siblings (same concept type) with a higher priority: when one of them holds, this does not."""
    text: str
    """The Define in canonical form; stored on conclusions as ``rule``."""
    location: str
    """``FILE:LINE`` of the Define."""
    span: Span = field(default=NO_SPAN, compare=False)

    def references(self) -> tuple[ConceptKey, ...]:
        return tuple(dict.fromkeys(concept_refs(self.expr)))


@dataclass(frozen=True)
class RuleSet:
    """Checked rules in dependency order (a rule comes after every concept it references)."""

    rules: tuple[Rule, ...]
    source_name: str = "<rules>"
    source: str = field(default="", compare=False, repr=False)

    def error(self, message: str, span: Span) -> DslSemanticError:
        """A semantic error at ``span`` of this rule set's source."""
        return DslSemanticError(message, line=span.line, column=span.column,
                                source_line=source_line(self.source, span.line), file=self.source_name)

    def rule(self, concept: ConceptKey) -> Rule:
        return self._by_concept[concept]

    @functools.cached_property
    def _by_concept(self) -> dict[ConceptKey, Rule]:
        # One look-up per rule while compiling: a scan here made compiling quadratic.
        found: dict[ConceptKey, Rule] = {}
        for rule in self.rules:
            found.setdefault(rule.concept, rule)
        return found

    @property
    def concept_ids(self) -> list[str]:
        return [r.concept.id for r in self.rules]


def concept_refs(expr: Expr) -> list[ConceptKey]:
    """Every concept ``expr`` references (through sub-rules too), in order of appearance."""
    found: list[ConceptKey] = []
    stack: list[Expr] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ConceptRef):
            found.append(node.concept)
        elif isinstance(node, (And, Or)):
            stack.extend(reversed(node.items))
        elif isinstance(node, Not):
            stack.append(node.item)
        elif isinstance(node, SubRuleRef):
            stack.append(node.expr)
    return found
