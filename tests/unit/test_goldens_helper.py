"""The golden-table helper itself (tests/support/goldens.py): it records both dialects side by
side, records "unsupported" as a value, fails with expected against actual, and rewrites."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgdb.dialects import Dialect
from kgdb.errors import UnsupportedFeatureError
from kgdb.statement import Statement
from tests.support.goldens import UPDATE_ENV, Case, statements_of, validate_all


def only_neo4j(dialect: Dialect) -> Statement:
    if dialect.NAME != "neo4j":
        raise UnsupportedFeatureError("a test construct", dialect.NAME)
    return Statement("MATCH (n)\nRETURN n.x = $v", {"v": 1})


CASES = [Case("label", {"label": "A b"}, lambda d: Statement(f"MATCH (n:{d.ident('A b')}) RETURN n")),
         Case("only_neo4j", {}, only_neo4j)]


def test_update_writes_then_check_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(UPDATE_ENV, "1")
    validate_all("t", CASES, directory=tmp_path)
    table = json.loads((tmp_path / "t.json").read_text())
    label, unsupported = table["cases"]
    assert label["falkordb"] == {"cypher": "MATCH (n:`A b`) RETURN n", "params": {}}
    assert unsupported["falkordb"] == {"unsupported": "a test construct"}
    assert unsupported["neo4j"] == {"cypher": ["MATCH (n)", "RETURN n.x = $v"], "params": {"v": 1}}
    monkeypatch.delenv(UPDATE_ENV)
    assert statements_of(validate_all("t", CASES, directory=tmp_path), "neo4j") == [
        "MATCH (n:`A b`) RETURN n", "MATCH (n)\nRETURN n.x = $v"]


def test_mismatch_shows_expected_and_actual(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(UPDATE_ENV, "1")
    validate_all("t", CASES, directory=tmp_path)
    monkeypatch.delenv(UPDATE_ENV)
    changed = [CASES[0], Case("only_neo4j", {}, lambda d: Statement("RETURN $v", {"v": 2}))]
    with pytest.raises(AssertionError) as info:
        validate_all("t", changed, directory=tmp_path)
    message = str(info.value)
    assert "case 'only_neo4j', falkordb" in message and "case 'only_neo4j', neo4j" in message
    assert '-  "unsupported": "a test construct"' in message and '+  "cypher": "RETURN $v"' in message
    assert f"{UPDATE_ENV}=1" in message
    with pytest.raises(AssertionError, match="stale"):
        validate_all("t", CASES[:1], directory=tmp_path)
    with pytest.raises(AssertionError, match="does not exist"):
        validate_all("missing", CASES, directory=tmp_path)
