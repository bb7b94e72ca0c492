"""``--json`` output is strict JSON whatever the values (issue 24: ``kgdb cypher --json``
printed NaN and Infinity)."""

from __future__ import annotations

import json

import click
import numpy as np
from click.testing import CliRunner

from kgdb.cli.output import emit_json


def _strict(text: str) -> object:
    def refuse(constant: str) -> object:
        raise ValueError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_become_strings() -> None:
    @click.command()
    def show() -> None:
        emit_json({"rows": [[float("nan"), float("inf"), -float("inf"), 1.5]],
                   "vector": np.array([np.nan, 2.0], dtype=np.float32)})

    out = CliRunner().invoke(show).output
    assert _strict(out) == {"rows": [["NaN", "Infinity", "-Infinity", 1.5]],
                            "vector": ["NaN", 2.0]}
