"""``kgdb lf compile`` / ``kgdb lf run`` / the LF ``ask``, in-process with CliRunner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kgdb.cli.lf import lf
from kgdb.errors import DslSyntaxError
from tests.conftest import ROOT, engine_env

EXAMPLE = ROOT / "dsl" / "examples" / "sort_latest.lf"


def test_compile_needs_no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGDB_URI", "bolt://127.0.0.1:1")  # nothing listens there
    for dialect in ("neo4j", "falkordb"):
        out = CliRunner().invoke(lf, ["compile", str(EXAMPLE), "--dialect", dialect])
        assert out.exit_code == 0, out.output
        assert "// note: compiled without a database" in out.output
        assert "MATCH (n0:`Entity`)-[r0:`directed_by`]->(n1:`Entity`)" in out.output
        assert "ORDER BY" in out.output and '"n1_name": "William Dieterle"' in out.output
        assert "<ids bound to s1 at run time>" in out.output
    out = CliRunner().invoke(lf, ["compile", str(EXAMPLE), "--json"])
    data = json.loads(out.output)
    assert data["linked"] is False and [op["kind"] for op in data["ops"]] == \
        ["match", "sort", "output"]


def test_compile_errors_are_kgdb_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.lf"
    bad.write_text("Retrieval(s=s1, p=p1:r o=o1)\n")
    out = CliRunner().invoke(lf, ["compile", str(bad)])
    assert out.exit_code == 1
    assert isinstance(out.exception, DslSyntaxError)
    assert str(out.exception).startswith(f"{bad}:1:25: unexpected '='")
    out = CliRunner().invoke(lf, ["compile", str(tmp_path / "missing.lf")])
    assert out.exit_code == 1 and "cannot read" in str(out.exception)


def test_run_prints_cypher_and_results(metaqa_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in engine_env(metaqa_store).items():
        monkeypatch.setenv(name, value)
    out = CliRunner().invoke(lf, ["run", str(EXAMPLE)])
    assert out.exit_code == 0, out.output
    assert "-- step 1:Retrieval, 2:Retrieval [cypher]" in out.output
    assert "== output" in out.output and "latest: " in out.output
    out = CliRunner().invoke(lf, ["run", str(EXAMPLE), "--json"])
    data = json.loads(out.output)
    assert len(data["outputs"]["latest"]) == 1
    assert data["trace"][1]["kind"] == "sort" and "LIMIT $limit" in data["trace"][1]["cypher"]


def test_ask(metaqa_store: Any, scripted_llm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgdb.cli import cli

    for name, value in engine_env(metaqa_store).items():
        monkeypatch.setenv(name, value)
    scripted_llm.push("Retrieval(s=s1:Movie[Kismet], p=p1:directed_by, o=o1)\nOutput(o1)",
                      "ANSWER: William Dieterle")
    out = CliRunner().invoke(cli, ["ask", "--solver", "lf",
                                   "Who directed Kismet?", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["answer"] == "William Dieterle" and data["solver"] == "logical-form"


def test_registered_in_kgdb_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kgdb.cli import main

    bad = tmp_path / "bad.lf"
    bad.write_text("Step1: x\nAction1: Retreival(s=s1, p=p1:r, o=o1)\n")
    with pytest.raises(SystemExit) as info:
        main(["lf", "compile", str(bad)])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(f"kgdb: error: {bad}:2:10: unknown function 'Retreival' "
                          "(did you mean 'Retrieval'?)")
    assert "Traceback" not in err
    main(["lf", "compile", str(EXAMPLE), "--dialect", "falkordb"])
    assert "MATCH" in capsys.readouterr().out
