"""The one ``--json`` option and the one JSON emitter of every command."""

from __future__ import annotations

import json
from typing import Any

import click

from kgdb.engine.base import NodeValue, PathValue, RelationshipValue


def jsonable(value: Any) -> Any:
    """``value`` with graph values, arrays and anything else JSON cannot hold made plain."""
    if isinstance(value, (NodeValue, RelationshipValue, PathValue)):
        return value.to_json()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


VECTOR_MIN = 16
"""A list of at least this many numbers is shown as its size (``kgdb cypher`` without
``--vectors``): an embedding is 384 floats of nothing a reader can use."""


def elide_vectors(value: Any) -> Any:
    """``value`` made plain (:func:`jsonable`) with every embedding-sized list of numbers
    replaced by ``"<vector: N floats>"``."""
    value = jsonable(value)
    if isinstance(value, dict):
        return {k: elide_vectors(v) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) >= VECTOR_MIN and all(isinstance(v, float) for v in value):
            return f"<vector: {len(value)} floats>"
        return [elide_vectors(v) for v in value]
    return value


def emit_json(data: Any) -> None:
    click.echo(json.dumps(jsonable(data), indent=2, ensure_ascii=False))


json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
