"""``kgdb neo4j import`` and ``kgdb bench scale --bulk``: what fails before any server is
touched fails in one line (the import itself: tests/live/test_neo4j_import.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kgdb.cli import cli


def _one_line(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output, result.output
    return result.output


def test_import_of_a_missing_file(tmp_path: Path) -> None:
    line = _one_line(["neo4j", "import", str(tmp_path / "none.txt"), "--home",
                      str(tmp_path / "neo4j")])
    assert "none.txt: no such triples file" in line
    assert not (tmp_path / "neo4j").exists()


def test_import_memory_sizes_are_checked(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["neo4j", "import", str(tmp_path / "kb.txt"), "--heap",
                                      "lots"])
    assert result.exit_code == 2 and "'lots' is not a size like 512m or 6g" in result.output


def test_bench_bulk_needs_a_kgdb_started_neo4j(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGDB_HOME", str(tmp_path))
    monkeypatch.delenv("KGDB_URI", raising=False)
    monkeypatch.delenv("NEO4J_URI", raising=False)
    assert "the embedded engine has no offline importer" in _one_line(
        ["bench", "scale", "--bulk", "--entities", "100"])
    monkeypatch.setenv("KGDB_URI", "bolt://127.0.0.1:1")
    assert "is not a Neo4j that kgdb started (kgdb neo4j start)" in _one_line(
        ["bench", "scale", "--bulk", "--entities", "100"])


def test_bench_reindex_needs_reuse() -> None:
    assert "--reindex rebuilds the vector index of a kept graph: add --reuse" in _one_line(
        ["bench", "scale", "--reindex", "exact", "--entities", "100"])
