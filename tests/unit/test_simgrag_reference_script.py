"""benchmarks/simgrag_reference.py: the side-by-side with the SimGRAG authors' retriever (their
code is not part of kgdb; what is kgdb's is checked here)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from kgdb.dsl.pattern import pattern_from_triples
from kgdb.errors import KgdbError
from kgdb.retrieve.metaqa import oracle_pattern, oracle_triples, read_questions
from tests.conftest import shared_data

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "simgrag_reference.py"


def _module():
    spec = importlib.util.spec_from_file_location("simgrag_reference", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kg_is_built_as_the_authors_loader_builds_it(tmp_path: Path) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_text("Heat|directed_by|Michael Mann\nHeat|starred_actors|Al Pacino\n"
                  "Heat|directed_by|Michael Mann\nThief|directed_by|Michael Mann\n",
                  encoding="utf-8")
    graph = _module().load_kg(kb)
    assert graph["Heat"] == {"directed by": ["Michael Mann"], "starred actors": ["Al Pacino"]}
    assert sorted(graph["Michael Mann"]["directed by"]) == ["Heat", "Thief"]
    assert graph["Al Pacino"] == {"starred actors": ["Heat"]}


def test_a_malformed_kb_line_is_named(tmp_path: Path) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_text("Heat|directed_by|Michael Mann\nHeat directed_by\n", encoding="utf-8")
    with pytest.raises(KgdbError, match=r"kb.txt:2: expected head\|relation\|tail"):
        _module().load_kg(kb)


def test_the_reference_gets_the_patterns_kgdb_retrieves() -> None:
    for hops in (1, 2, 3):
        for question in read_questions(shared_data("metaqa", f"dev_{hops}hop.tsv"))[:20]:
            triples = oracle_triples(question)
            assert len(triples) == hops
            assert pattern_from_triples(triples) == oracle_pattern(question)
            named = {n for t in triples for n in (t[0], t[2]) if not n.startswith("UNKNOWN")}
            assert named == {question.topic}


def test_a_missing_checkout_is_one_line_and_exit_1(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--code", str(tmp_path / "none"),
                          "--kb", str(tmp_path / "kb.txt"), "--questions",
                          str(tmp_path / "dev.tsv"), "--engines", ""],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert run.stderr.strip().count("\n") == 0 and "Traceback" not in run.stderr
    assert "no src/retriever.py" in run.stderr
