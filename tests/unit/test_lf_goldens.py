"""Golden files: what `kgdb lf compile` prints for every example, per dialect.

Rewrite them with ``KGDB_UPDATE_GOLDENS=1 pytest tests/unit/test_lf_goldens.py`` and review
the diff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kgdb.cli.lf import render_compiled
from kgdb.dialects import get_dialect
from kgdb.dsl.logical_form import parse_plan
from kgdb.solve.lf_compile import compile_plan

ROOT = Path(__file__).resolve().parents[2]
GOLDENS = Path(__file__).resolve().parent / "goldens" / "lf"
EXAMPLES = sorted((ROOT / "dsl" / "examples").glob("*.lf"))


@pytest.mark.parametrize("dialect", ["neo4j", "falkordb"])
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_golden(example: Path, dialect: str) -> None:
    plan = parse_plan(example.read_text(encoding="utf-8"), example.name)
    text = render_compiled(compile_plan(plan, get_dialect(dialect))) + "\n"
    golden = GOLDENS / f"{example.stem}.{dialect}.cypher"
    if os.environ.get("KGDB_UPDATE_GOLDENS"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"no golden {golden}; run with KGDB_UPDATE_GOLDENS=1"
    assert text == golden.read_text(encoding="utf-8")
