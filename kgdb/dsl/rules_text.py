"""Rules back to text: the canonical form of an expression or a Define (parses back to the
same AST; stored on conclusions as ``rule``)."""

from __future__ import annotations

import re
from typing import Any

from kgdb.dsl.rules_ast import (
    DEFAULT_PREDICATE,
    SUBRULE_NAME,
    And,
    Compare,
    ConceptRef,
    Define,
    Expr,
    NameRef,
    Not,
    Operand,
    Or,
    Property,
    SubRule,
    SubRuleRef,
    Truthy,
)

_PLAIN_NAME = re.compile(r"^[^\W\d]\w*$")
_KEYWORDS = {"and", "or", "not", "true", "false", "define", "definepriority"}


def _property_text(name: str) -> str:
    if _PLAIN_NAME.match(name) and name.casefold() not in _KEYWORDS:
        return name
    return f"`{name}`"


def _literal_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"
    return repr(value)


def _operand_text(op: Operand) -> str:
    return _property_text(op.name) if isinstance(op, Property) else _literal_text(op.value)


def expr_text(expr: Expr) -> str:
    """``expr`` in canonical rule syntax (parses back to the same expression)."""
    if isinstance(expr, Compare):
        return f"{_operand_text(expr.left)} {expr.op} {_operand_text(expr.right)}"
    if isinstance(expr, Truthy):
        return _property_text(expr.prop.name) if not SUBRULE_NAME.match(expr.prop.name) \
            else f"`{expr.prop.name}`"
    if isinstance(expr, ConceptRef):
        return expr.concept.text()
    if isinstance(expr, (NameRef, SubRuleRef)):
        return expr.name
    if isinstance(expr, Not):
        inner = expr_text(expr.item)
        return f"NOT ({inner})" if isinstance(expr.item, (And, Or)) else f"NOT {inner}"
    if isinstance(expr, And):
        return " AND ".join(f"({expr_text(e)})" if isinstance(e, Or) else expr_text(e)
                            for e in expr.items)
    return " OR ".join(expr_text(e) for e in expr.items)


def define_text(define: Define) -> str:
    """The Define in canonical one-line form."""
    head = define.concept.text()
    if define.subject:
        head = f"{define.subject})-[{define.predicate or DEFAULT_PREDICATE}]->({head}"
    subs = "".join(_subrule_text(s) + " " for s in define.subrules)
    return f"Define ({head}) {{ {subs}{expr_text(define.expr)} }}"


def _subrule_text(sub: SubRule) -> str:
    desc = ""
    if sub.description is not None:
        escaped = sub.description.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        desc = f'("{escaped}")'
    return f"{sub.name}{desc}: {expr_text(sub.expr)}"
