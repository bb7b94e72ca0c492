"""Conditions every pattern builder shares: property constraints, and what linking decided
for a node (candidate ids, an exact name, type labels) or an edge (relationship types).
"""

from __future__ import annotations

from typing import Any

from kgdb.cypher.params import Params
from kgdb.dialects.base import Dialect
from kgdb.errors import DslError
from kgdb.ir import COMPARISON_OPERATORS, Constraint, LinkedNode


def prop(dialect: Dialect, var: str, key: str | None) -> str:
    """``var.`key``` (the name when no key is given)."""
    return f"{var}.{dialect.ident(key or 'name')}"


def comparison(dialect: Dialect, var: str, key: str, op: str, value: Any, params: Params,
               param: str) -> str:
    """``var.key op $value``; numbers compare numerically (values may be stored as text).

    ``op`` is one of :data:`kgdb.ir.COMPARISON_OPERATORS` or ``contains`` (case-insensitive
    substring, for logical forms' Filter).
    """
    if op != "contains" and op not in COMPARISON_OPERATORS:
        # op is pasted into the text: only the language's own operators may get there
        raise DslError(f"unknown comparison operator {op!r}")
    expr = prop(dialect, var, key)
    if op == "contains":
        return f"toLower(toString({expr})) CONTAINS toLower({params.add(param, str(value))})"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{expr} {op} {params.add(param, value)}"
    return f"toFloat({expr}) {op} {params.add(param, value)}"


def constraints(dialect: Dialect, var: str, items: tuple[Constraint, ...],
                params: Params) -> list[str]:
    """The pattern's constraints on one node or relationship variable."""
    return [comparison(dialect, var, c.prop, c.op, c.value, params, f"{var}_c{i}")
            for i, c in enumerate(items)]


def node_conditions(dialect: Dialect, var: str, node: LinkedNode, params: Params, *,
                    ids: bool = True) -> list[str]:
    """Candidate ids (unless ``ids`` is False: the caller joined them already), exact name,
    type labels and constraints of a linked node."""
    out = []
    if ids and node.candidates is not None:
        out.append(f"{var}.id IN {params.add(f'{var}_ids', [c.id for c in node.candidates])}")
    if node.name is not None:
        out.append(f"{var}.name = {params.add(f'{var}_name', node.name)}")
    if node.labels:
        out.append("(" + " OR ".join(f"{var}:{dialect.ident(lb)}" for lb in node.labels) + ")")
    return out + constraints(dialect, var, node.ref.constraints, params)
