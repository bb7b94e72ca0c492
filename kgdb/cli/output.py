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


def emit_json(data: Any) -> None:
    click.echo(json.dumps(jsonable(data), indent=2, ensure_ascii=False))


json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
