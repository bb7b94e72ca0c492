"""CLI contract: one-line errors with exit 1, usage errors exit 2, every documented verb exists."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgdb.cli import cli, main

ROOT = Path(__file__).resolve().parents[2]


def run_main(args: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    return int(info.value.code or 0), out.out, out.err


def test_unreachable_neo4j_is_one_line_exit_1(capsys, monkeypatch) -> None:
    monkeypatch.setenv("NEO4J_PASSWORD", "x")
    started = time.monotonic()
    code, _, err = run_main(["--uri", "bolt://127.0.0.1:9", "stats"], capsys)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("kgdb: error: cannot connect to Neo4j at bolt://127.0.0.1:9: ")
    assert time.monotonic() - started < 30


def test_bad_uri_scheme(capsys) -> None:
    code, _, err = run_main(["--uri", "mysql://x", "stats"], capsys)
    assert code == 1 and "unsupported URI 'mysql://x'" in err


def test_usage_errors_exit_2(capsys) -> None:
    code, _, err = run_main(["load", "triples"], capsys)
    assert code == 2 and "Missing argument" in err
    code, _, err = run_main(["cypher", "RETURN 1", "--param", "no-equals"], capsys)
    assert code == 2 and "NAME=VALUE" in err


def test_missing_file_is_a_clean_error(capsys, tmp_path) -> None:
    code, _, err = run_main(["schema", "ddl", str(tmp_path / "nope.schema")], capsys)
    assert code == 1 and "cannot read the schema file" in err and "Traceback" not in err


def test_kgdb_debug_shows_the_chain_of_causes(capsys, tmp_path, monkeypatch) -> None:
    """An error keeps its cause (``raise ... from exc``): without KGDB_DEBUG one line, exit 1;
    with KGDB_DEBUG=1 the traceback of the chain first, then the same line, exit 1."""
    missing = ["schema", "ddl", str(tmp_path / "nope.schema")]
    bad_rules = tmp_path / "bad.rules"
    bad_rules.write_text("Define (s:Foo)-[p:belongTo]->(o: Bar/`x`) {\n  Rule: (\n}\n")
    monkeypatch.delenv("KGDB_DEBUG", raising=False)
    code, _, err = run_main(missing, capsys)
    assert code == 1 and err.splitlines() == [
        f"kgdb: error: {tmp_path / 'nope.schema'}: cannot read the schema file: "
        "No such file or directory"]
    code, _, plain_rules = run_main(["rules", "compile", str(bad_rules)], capsys)
    assert code == 1 and plain_rules.startswith("kgdb: error: ") and "Traceback" not in plain_rules
    monkeypatch.setenv("KGDB_DEBUG", "1")
    code, _, debug = run_main(missing, capsys)
    assert code == 1 and debug.endswith(err)
    chain = debug.removesuffix(err)
    assert chain.startswith("Traceback") and "FileNotFoundError: [Errno 2]" in chain
    assert "The above exception was the direct cause of the following exception" in chain
    assert chain.rstrip().endswith("cannot read the schema file: No such file or directory")
    assert debug.count("kgdb: error:") == 1
    code, _, debug_rules = run_main(["rules", "compile", str(bad_rules)], capsys)
    assert code == 1 and debug_rules.endswith(plain_rules)
    assert "lark.exceptions.Unexpected" in debug_rules and "direct cause" in debug_rules
    assert debug_rules.count("kgdb: error:") == 1


def test_module_entry_point_works() -> None:
    result = subprocess.run([sys.executable, "-m", "kgdb", "--help"], capture_output=True,
                            text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0 and "knowledge-augmented retrieval" in result.stdout


def test_every_verb_in_the_readme_and_docs_exists() -> None:
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
    text = "\n".join(p.read_text() for p in pages)
    runner = CliRunner()
    for verb in sorted(set(re.findall(r"`kgdb ([a-z][a-z0-9]*(?: [a-z]+)?)", text))):
        words = verb.split()
        result = runner.invoke(cli, [*words, "--help"])
        if result.exit_code != 0 and len(words) == 2:  # "kgdb load triples" vs "kgdb stats x"
            result = runner.invoke(cli, [words[0], "--help"])
        assert result.exit_code == 0, f"kgdb {verb}: {result.output}"


def test_neo4j_start_sizes_the_heap_as_told(capsys, monkeypatch, tmp_path) -> None:
    """`kgdb neo4j start --heap 6g --pagecache 1G` reaches the server's lifecycle (started
    here by a stand-in that records the sizes); a size that is none is one usage line."""
    from kgdb.engine.neo4j_local import LocalNeo4j
    from kgdb.errors import EngineConnectionError

    seen = {}

    def ensure_started(self, port=None, **_):
        seen.update(heap=self.heap, pagecache=self.pagecache)
        raise EngineConnectionError("stand-in: not started")

    monkeypatch.setattr(LocalNeo4j, "status", lambda self: None)
    monkeypatch.setattr(LocalNeo4j, "ensure_started", ensure_started)
    code, _, err = run_main(["neo4j", "start", "--home", str(tmp_path), "--heap", "6g",
                             "--pagecache", "1G"], capsys)
    assert code == 1 and "stand-in: not started" in err
    assert seen == {"heap": "6g", "pagecache": "1g"}
    code, _, err = run_main(["neo4j", "start", "--home", str(tmp_path), "--heap", "lots"],
                            capsys)
    assert code == 2 and "'lots' is not a size like 512m or 6g" in err
