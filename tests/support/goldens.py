"""Golden tables for generated Cypher, in sqlglot's ``validate_all`` form.

One suite is one reviewable JSON file under ``tests/unit/goldens/<suite>.json``. Each case
holds its input and, side by side, what every dialect generates for it::

    {"case": "merge_facts",
     "input": {"predicate": "directed_by"},
     "falkordb": {"cypher": [...lines...], "params": {...}, "write": true, "idempotent": true},
     "neo4j": {"unsupported": "a property-existence constraint"}}

A dialect's value is one statement (``cypher``/``params``, plus ``write``/``idempotent`` when
set), a list of operations (statements and FalkorDB engine commands), ``{"unsupported":
construct}`` when the dialect raises :class:`~kgdb.errors.UnsupportedFeatureError`, or
``{"error": ..., "message": ...}`` for another expected kgdb error.

Usage::

    CASES = [Case("merge_facts", {"predicate": "p"}, lambda d: load.merge_facts(d, "p"))]

    def test_load_goldens() -> None:
        table = validate_all("load", CASES)
        assert_neo4j_lints_clean(table)

``KGDB_UPDATE_GOLDENS=1 pytest ...`` rewrites the tables (then review ``git diff``). A
mismatch fails with every differing case, expected against actual, and the command that
regenerates the file.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kgdb.dialects import Dialect, get_dialect
from kgdb.errors import KgdbError, UnsupportedFeatureError
from kgdb.statement import EngineCommand, Statement
from tests.support.neo4j_lint import format_diagnostics, lint_available, lint_queries

GOLDENS_DIR = Path(__file__).resolve().parents[1] / "unit" / "goldens"
DIALECTS: tuple[str, ...] = ("falkordb", "neo4j")
UPDATE_ENV = "KGDB_UPDATE_GOLDENS"

Built = Statement | EngineCommand | Sequence[Statement | EngineCommand]


@dataclass(frozen=True)
class Case:
    """One golden case: a name, its input (as JSON, shown in the table) and a builder that
    turns a dialect into the statement(s) under test."""

    name: str
    input: Any
    build: Callable[[Dialect], Built]


def updating() -> bool:
    """True when the run should rewrite the tables instead of checking them."""
    return os.environ.get(UPDATE_ENV, "") not in ("", "0")


def _json_value(value: Any) -> Any:
    """Parameters as JSON; tuples and arrays become lists, anything else non-JSON its repr."""
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # numpy: a vector or matrix
        return _json_value(value.tolist())
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def _cypher(text: str) -> str | list[str]:
    lines = text.split("\n")
    return lines[0] if len(lines) == 1 else lines


def cypher_text(rendered: Any) -> str:
    """The statement text back from a rendered ``cypher`` value."""
    return rendered if isinstance(rendered, str) else "\n".join(rendered)


def render_operation(op: Statement | EngineCommand) -> dict[str, Any]:
    if isinstance(op, EngineCommand):
        return {"command": op.name, "args": _json_value(op.args)}
    out: dict[str, Any] = {"cypher": _cypher(op.text), "params": _json_value(op.params)}
    if op.write:
        out["write"] = True
    if op.idempotent:
        out["idempotent"] = True
    return out


def render(case: Case, dialect: Dialect) -> Any:
    """What ``case`` generates for ``dialect``, as the table stores it."""
    try:
        built = case.build(dialect)
    except UnsupportedFeatureError as exc:
        return {"unsupported": exc.construct}
    except KgdbError as exc:
        return {"error": type(exc).__name__, "message": str(exc)}
    if isinstance(built, Statement | EngineCommand):
        return render_operation(built)
    return [render_operation(op) for op in built]


def actual_table(suite: str, cases: Sequence[Case]) -> dict[str, Any]:
    names = [c.name for c in cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates, f"golden suite {suite!r}: duplicate case names {duplicates}"
    dialects = {name: get_dialect(name) for name in DIALECTS}
    return {"suite": suite, "cases": [
        {"case": c.name, "input": _json_value(c.input),
         **{name: render(c, d) for name, d in dialects.items()}} for c in cases]}


def dumps(table: dict[str, Any]) -> str:
    return json.dumps(table, indent=2, ensure_ascii=False) + "\n"


def _pretty(value: Any) -> list[str]:
    return json.dumps(value, indent=2, ensure_ascii=False).splitlines()


def differences(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """One readable entry per differing case and dialect (empty when the tables agree)."""
    want = {c["case"]: c for c in expected.get("cases", [])}
    have = {c["case"]: c for c in actual["cases"]}
    problems = [f"case {name!r}: in the table but no longer generated (stale)"
                for name in want if name not in have]
    for name, case in have.items():
        if name not in want:
            problems.append(f"case {name!r}: generated but missing from the table")
            continue
        for key in ("input", *DIALECTS):
            if want[name].get(key) != case.get(key):
                diff = difflib.unified_diff(_pretty(want[name].get(key)), _pretty(case.get(key)),
                                            "expected", "actual", lineterm="", n=2)
                problems.append(f"case {name!r}, {key}:\n  " + "\n  ".join(diff))
    if not problems and [c["case"] for c in expected["cases"]] != list(have):
        problems.append("cases are in a different order than the table")
    return problems


def validate_all(suite: str, cases: Sequence[Case], *, directory: Path | None = None) -> dict[str, Any]:
    """Check (or with ``KGDB_UPDATE_GOLDENS=1`` rewrite) the golden table of ``suite``.

    Returns the actual table so the caller can lint it (:func:`assert_neo4j_lints_clean`) or
    run its statements live.
    """
    path = (directory or GOLDENS_DIR) / f"{suite}.json"
    actual = actual_table(suite, cases)
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dumps(actual), encoding="utf-8")
        return actual
    regenerate = f"{UPDATE_ENV}=1 pytest <this test>, then review `git diff {path.name}`"
    assert path.is_file(), f"golden table {path} does not exist: run {regenerate}"
    expected = json.loads(path.read_text(encoding="utf-8"))
    problems = differences(expected, actual)
    assert not problems, (f"golden table {path} differs from the generated Cypher "
                          f"({len(problems)} difference(s)); if intended, run {regenerate}\n\n"
                          + "\n\n".join(problems))
    return actual


def statements_of(table: dict[str, Any], dialect: str) -> list[str]:
    """Every Cypher text of ``dialect`` in ``table`` (unsupported and errors left out)."""
    texts: list[str] = []
    for case in table["cases"]:
        value = case[dialect]
        for op in value if isinstance(value, list) else [value]:
            if "cypher" in op:
                texts.append(cypher_text(op["cypher"]))
    return texts


def assert_neo4j_lints_clean(table: dict[str, Any], *, skip: Sequence[str] = ()) -> None:
    """Every Neo4j statement of ``table`` passes the official Neo4j front-end with no
    diagnostic; skips the test (with the reason) where the linter is not installed.
    ``skip`` names cases whose text the linter cannot judge (say why at the call)."""
    reason = lint_available()
    if reason:
        pytest.skip(reason)
    kept = {"cases": [c for c in table["cases"] if c["case"] not in skip]}
    texts = statements_of(kept, "neo4j")
    assert texts, "no Neo4j statement to lint"
    problems = [format_diagnostics(q, diags)
                for q, diags in zip(texts, lint_queries(texts), strict=True) if diags]
    assert not problems, "\n\n".join(problems)
