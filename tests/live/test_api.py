"""The Python API (kgdb.connect / kgdb.KnowledgeBase) on both engines, and the README's
quick start run as written from a fresh KGDB_HOME in a folder outside the clone: it prints the
evidence and the logical form's answer (a bundled example), and leaves no server running."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import kgdb
from kgdb.engine import EmbeddedServer
from tests.conftest import ROOT

pytestmark = pytest.mark.live
RULES = ROOT / "dsl" / "examples" / "hypertension.rules"


def readme_quick_start() -> str:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```python\n(import kgdb\n.*?)```", text, re.S)
    assert block, "the README's Python quick start is missing"
    return block.group(1)


def test_quick_start_runs_as_written_and_stops_its_server(tmp_path: Path) -> None:
    code = readme_quick_start()
    assert len(code.strip().splitlines()) <= 10
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items()
           if k not in ("KGDB_URI", "NEO4J_URI", "NEO4J_PASSWORD", "KGDB_GRAPH")}
    elsewhere = tmp_path / "elsewhere"  # not the clone: the installed package alone
    elsewhere.mkdir()
    (elsewhere / "quickstart.py").write_text(code, encoding="utf-8")
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, "quickstart.py"], capture_output=True, text=True,
                          cwd=elsewhere, timeout=600, env={**env, "KGDB_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "1 Kismet directed_by William Dieterle 0.499", lines
    assert [line.split()[0] for line in lines[:-1]] == ["1", "2", "3"]
    assert lines[-1] == "William Dieterle"
    assert done.stderr == ""  # no warning, no progress bar on the happy path
    assert (home / "falkordb").is_dir()  # it did start one ...
    assert EmbeddedServer(home).status() is None  # ... and stopped it on close


def test_every_method_on_both_engines(cli_store: Any) -> None:
    store = cli_store
    with kgdb.connect() as kb:
        assert kb.engine == store.dialect.NAME
        assert kb.database == store.address
        report = kb.load_sample()
        assert report.triples == 442
        found = kb.retrieve("Who starred in Kismet?",
                            pattern=[("Kismet", "starred_actors", "UNKNOWN actor 1")], k=2)
        assert found.solver == "pattern" and found.score_kind == "gsd"
        assert {r.head for r in found.rows()} == {"Kismet"}
        assert [r.rank for r in found.rows()] == [1, 2]
        assert found.statements and "timings_ms" in found.to_json()
        lf = kb.logical_form(ROOT / "dsl" / "examples" / "count_math.lf")
        assert [v.text for v in lf.outputs["nums"]] == ["23"]
        inline = kb.logical_form("Retrieval(s=s1:Movie[Kismet], p=p1:release_year, o=o1)\n"
                                 "Output(o1)\n")
        assert [v.text for v in inline.outputs["o1"]] == ["1944"]
        judged = kb.judge(RULES, {"SystolicPressure": 160, "DiastolicPressure": 95})
        assert {c.concept.name for c in judged} >= {"Grade 2 Hypertension", "Hypertension"}
        kb.cypher("CREATE (:Patient {id: 'p1', SystolicPressure: 150, DiastolicPressure: 85})",
                  write=True)
        applied = kb.apply_rules(RULES, label="Patient")
        assert applied.ruleset == "hypertension"
        rows = kb.cypher("MATCH (:Patient {id: $id})-[:belongTo]->(c:Concept) RETURN c.id AS c",
                         {"id": "p1"})
        assert any("Grade 1 Hypertension" in r["c"] for r in rows), rows
        with pytest.raises(kgdb.KgdbError, match=re.escape("expected 'head|relation|tail'")):
            kb.retrieve("x", pattern=["only|two"])
    with pytest.raises(kgdb.KgdbError, match="closed"):
        _ = kb.store


def test_tutorial_runs_as_written(tmp_path: Path) -> None:
    """docs/tutorial.md: every python block, in order, in one interpreter, from a folder
    outside the clone."""
    text = (ROOT / "docs" / "tutorial.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 6
    env = {k: v for k, v in os.environ.items()
           if k not in ("KGDB_URI", "NEO4J_URI", "NEO4J_PASSWORD", "KGDB_GRAPH")}
    done = subprocess.run([sys.executable, "-c", "\n".join(blocks)], capture_output=True,
                          text=True, cwd=tmp_path, timeout=600,
                          env={**env, "KGDB_HOME": str(tmp_path / "home"),
                               "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("falkordb\n442 ")
    assert "graph 'tutorial'" in out
    assert "1 Kismet directed_by William Dieterle" in out
    assert "'Witness for the Prosecution'" in out
    assert "no entity named 'Tom Hanks'; nearest: Tom Reed (0.9" in out
    assert "['Grade 2 Hypertension', 'Hypertension']" in out
    assert "[{'director': 'William Dieterle'}]" in out
    assert EmbeddedServer(tmp_path / "home").status() is None
