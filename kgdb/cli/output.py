"""The one ``--json`` option and the one JSON emitter of every command."""

from __future__ import annotations

import contextlib
import json
import math
import sys
import threading
import time
from collections.abc import Iterator
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
        return jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value).replace("inf", "Infinity").replace("nan", "NaN")  # JSON has none
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
    """``data`` as strict JSON (NaN and infinities as the strings ``"NaN"``, ``"Infinity"``,
    ``"-Infinity"``: JSON has no such numbers)."""
    click.echo(json.dumps(jsonable(data), indent=2, ensure_ascii=False, allow_nan=False))


json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


@contextlib.contextmanager
def waiting(message: str, *, interval_s: float = 0.2) -> Iterator[None]:
    """Show that a long wait is under way on stderr: a spinner with the seconds elapsed on a
    terminal (cleared when done, then one line with the time taken), else one line at the
    start. For waits that may pass 2 s with nothing else to show (a server starting)."""
    began = time.monotonic()
    if not sys.stderr.isatty():
        click.echo(f"{message}...", err=True)
        yield
        return
    done = threading.Event()

    def spin() -> None:
        frames = "|/-\\"
        i = 0
        while not done.wait(interval_s):
            click.echo(f"\r{frames[i % len(frames)]} {message} ({time.monotonic() - began:.0f} s)",
                       err=True, nl=False)
            i += 1

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        click.echo(f"\r{message}: {time.monotonic() - began:.0f} s" + " " * 10, err=True)
