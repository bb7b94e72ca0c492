"""Golden table of compiled logical forms: every example in dsl/examples, compiled without a
database (names as written) and the KAG paper's plan linked (names, relations and types given
up front), both dialects side by side in tests/unit/goldens/lf.json; every Neo4j text linted.

Each case lists the plan's statements in order; a joint pattern is followed by its
one-step-per-statement fallback. Regenerate with
``KGDB_UPDATE_GOLDENS=1 pytest tests/unit/test_lf_goldens.py`` and review the diff."""

from __future__ import annotations

from pathlib import Path

from kgdb.dialects import Dialect
from kgdb.dsl.logical_form import parse_plan
from kgdb.link import PatternLinker
from kgdb.solve.lf_compile import compile_plan
from kgdb.statement import Statement
from tests.support.goldens import Case, assert_neo4j_lints_clean, validate_all
from tests.unit.test_lf_compile import LINKS, PAPER

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "dsl" / "examples").glob("*.lf"))

def statements(source: str, name: str, dialect: Dialect,
               linker: PatternLinker | None = None) -> list[Statement]:
    compiled = compile_plan(parse_plan(source, name), dialect, linker)
    out: list[Statement] = []
    for op in compiled.statements():
        out.append(op.query.statement)
        out += [sub.query.statement for sub in op.fallback]
    return out


CASES = [
    *[Case(path.stem, {"plan": path.name, "linked": False},
           lambda d, path=path: statements(path.read_text(encoding="utf-8"), path.name, d))
      for path in EXAMPLES],
    Case("kag_paper[linked]", {"plan": PAPER, "links": "entities, relations and types given"},
         lambda d: statements(PAPER, "<paper>", d, LINKS)),
]


def test_lf_goldens() -> None:
    table = validate_all("lf", CASES)
    assert_neo4j_lints_clean(table)
