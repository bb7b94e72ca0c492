"""KAG's rule language: evaluate checked concept rules (reference: dsl/README.md, "Rules").

The front-end (text -> Program -> RuleSet) is kgdb/dsl/rules_*.py; this is the
reference evaluator. Stages, each with a typed hand-off::

    text --Lark (kgdb/dsl/rules.lark)--> tree --_ToAst--> Program (frozen dataclasses with spans)
         --analyse()--> RuleSet (names resolved, priorities attached, rules in dependency order)
         --evaluate() (pure Python, the reference) / kgdb.cypher.rules (Cypher, per dialect)

Semantics (decided here, documented in dsl/README.md):

* Three-valued (Kleene) logic. A missing property makes a comparison or a bare property
  *unknown*; ``unknown OR true`` is true, ``unknown AND false`` is false, ``NOT unknown`` is
  unknown. A concept holds only when its body is TRUE. Cypher's null logic is the same
  logic, so the compiled Cypher uses it directly.
* A reference to another concept is true when that concept's body is TRUE for the same
  instance *before* priorities are applied (its "raw" membership); it is false otherwise.
  Priorities only choose among the final conclusions of sibling concepts, after every
  dependent has been evaluated, so 160/95 concludes Grade 2 Hypertension and Hypertension.
* A bare name is a sub-rule when a sub-rule of that name is visible at that point, else a
  property; ``R<digits>`` names are reserved for sub-rules (back-quote a property so named).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kgdb.dsl.rules_ast import (
    And,
    Compare,
    ConceptKey,
    ConceptRef,
    Expr,
    Not,
    Or,
    Property,
    Rule,
    RuleSet,
    SubRuleRef,
    Truthy,
)
from kgdb.errors import DslError

Truth = bool | None
"""Three-valued truth: True, False, or None (unknown)."""

_FALSY = (False, 0, 0.0, "")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def compare_values(left: Any, op: str, right: Any) -> Truth:
    """Cypher's comparison on scalars: null is unknown; equality across types is false;
    ordering is defined between two numbers, two strings or two booleans, unknown otherwise."""
    if left is None or right is None:
        return None
    same_kind = (_is_number(left) and _is_number(right)) or \
        (type(left) is type(right) and isinstance(left, (str, bool)))
    if op in ("=", "<>"):
        equal = same_kind and left == right
        return equal if op == "=" else not equal
    if not same_kind:
        return None
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


def truthy(value: Any) -> Truth:
    """A bare property: unknown when missing, false for false/0/''/0.0, true otherwise."""
    if value is None:
        return None
    return not any(value == f and (type(value) is bool) == (type(f) is bool) for f in _FALSY)


def _and(values: Iterable[Truth]) -> Truth:
    result: Truth = True
    for v in values:
        if v is False:
            return False
        if v is None:
            result = None
    return result


def _or(values: Iterable[Truth]) -> Truth:
    result: Truth = False
    for v in values:
        if v is True:
            return True
        if v is None:
            result = None
    return result


def evaluate_expr(expr: Expr, facts: Mapping[str, Any],
                  membership: Callable[[ConceptKey], Truth]) -> Truth:
    """Evaluate a resolved body on ``facts`` in three-valued logic."""
    if isinstance(expr, Compare):
        left = facts.get(expr.left.name) if isinstance(expr.left, Property) else expr.left.value
        right = facts.get(expr.right.name) if isinstance(expr.right, Property) else expr.right.value
        return compare_values(left, expr.op, right)
    if isinstance(expr, Truthy):
        return truthy(facts.get(expr.prop.name))
    if isinstance(expr, ConceptRef):
        return membership(expr.concept)
    if isinstance(expr, SubRuleRef):
        return evaluate_expr(expr.expr, facts, membership)
    if isinstance(expr, Not):
        v = evaluate_expr(expr.item, facts, membership)
        return None if v is None else not v
    if isinstance(expr, And):
        return _and(evaluate_expr(e, facts, membership) for e in expr.items)
    if isinstance(expr, Or):
        return _or(evaluate_expr(e, facts, membership) for e in expr.items)
    raise DslError(f"unresolved name {getattr(expr, 'name', expr)!r}; call analyse() first")


@dataclass(frozen=True)
class Conclusion:
    """``(instance)-[predicate]->(concept)`` with the rule that concluded it."""

    concept: ConceptKey
    predicate: str
    rule: Rule


def raw_memberships(rules: RuleSet, facts: Mapping[str, Any]) -> dict[ConceptKey, Truth]:
    """Every concept's body value on ``facts`` (before priorities), in dependency order."""
    raw: dict[ConceptKey, Truth] = {}
    for rule in rules.rules:
        # A referenced concept is true only when its body is TRUE (unknown counts as not).
        raw[rule.concept] = evaluate_expr(rule.expr, facts, lambda k: raw[k] is True)
    return raw


def evaluate(rules: RuleSet, facts: Mapping[str, Any]) -> list[Conclusion]:
    """The pure-Python reference evaluator: conclusions for one instance's ``facts``."""
    check_facts(facts)
    raw = raw_memberships(rules, facts)
    return [
        Conclusion(rule.concept, rule.predicate, rule)
        for rule in rules.rules
        if raw[rule.concept] is True and not any(raw[k] is True for k in rule.outranked_by)
    ]


def check_facts(facts: Any) -> None:
    """Facts are a JSON object of scalar values (numbers, strings, booleans, null)."""
    if not isinstance(facts, Mapping):
        raise DslError(f"facts must be a JSON object of property values, not {type(facts).__name__}")
    for key, value in facts.items():
        if not isinstance(key, str) or not key or "`" in key:
            raise DslError(f"facts: invalid property name {key!r}")
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise DslError(f"facts: {key!r} is a {type(value).__name__}; values must be numbers, "
                           "strings, booleans or null")
        if isinstance(value, float) and not math.isfinite(value):
            raise DslError(f"facts: {key!r} is not a finite number")
