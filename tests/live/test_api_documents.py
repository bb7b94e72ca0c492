"""The Python API over documents on both engines: load_documents -> index -> retrieve with
ppr and vector, the solvers' options validated by their models, credentials given to
connect(), file arguments that do not exist (a kgdb error that is a FileNotFoundError), and
docs/python.md's quick start run from another folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import kgdb
from kgdb.errors import ConfigError
from tests.conftest import ROOT
from tests.live.test_index_all import write_folder

pytestmark = pytest.mark.live


def test_load_index_retrieve(cli_store: Any, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "docs")
    with kgdb.connect() as kb:
        with pytest.raises(kgdb.NotReadyError, match="run kgdb load documents PATH"):
            kb.retrieve("Who founded Acme?", solver="vector")
        report = kb.load_documents(folder)
        assert (report.documents, report.written, report.chunks) == (3, 3, 3)
        with pytest.raises(kgdb.NotReadyError,
                           match=r"^the ppr solver needs the retrieval graph \(not built\): "
                                 r"run kgdb index ppr, or kgdb index for every solver$"):
            kb.retrieve("Who founded Acme?", solver="ppr")
        states = {r.solver: r.state for r in kb.readiness()}
        assert states["vector"] == "ready" and states["ppr"] == "missing"
        steps = kb.index()
        assert [(s.name, s.outcome) for s in steps] == [
            ("knn", "built"), ("triples", "skipped"), ("ppr", "built"), ("fulltext", "built")]
        assert all(s.after is not None and s.after.state == "ready" for s in steps
                   if s.outcome == "built")
        again = kb.index("knn", "ppr")
        assert [s.report.mode for s in again] == ["unchanged", "unchanged"]
        for solver in ("ppr", "vector"):
            found = kb.retrieve("Who founded Zenith Radio?", solver=solver, passages=2)
            assert found.solver == solver
            assert found.documents[0].id == "zenith", found.documents
            assert found.passages[0].document == "zenith"
            assert "Ralph Matthews" in found.passages[0].text
            assert len(found.passages) <= 2
        with pytest.raises(ConfigError, match=r"^vector solver: passages: Input should be "
                                              r"less than or equal to 1000$"):
            kb.retrieve("q", solver="vector", passages=5000)
        with pytest.raises(ConfigError, match="damping is not an option of the vector solver"):
            kb.retrieve("q", solver="vector", damping=0.5)
        with pytest.raises(kgdb.KgdbError, match="unknown solver 'pp'"):
            kb.retrieve("q", solver="pp")
        with pytest.raises(ConfigError, match=r"unknown index 'kn' .*did you mean 'knn'"):
            kb.index("kn")
        with pytest.raises(ConfigError, match=r"unknown option 'chunksize'.*'chunk_size'"):
            kb.load_documents(folder, chunksize=300)
        # index=True: a changed folder is loaded and indexed in one call
        write_folder(folder, {"wayne.md": "# Wayne Enterprises\n\nWayne Enterprises is a "
                              "conglomerate in Gotham City founded by Solomon Wayne.\n"})
        kb.load_documents([folder], index=True, chunk_size=800)
        assert {r.solver: r.state for r in kb.readiness()}["ppr"] == "ready"
        assert kb.retrieve("Who founded Wayne Enterprises?", solver="ppr"
                           ).documents[0].id == "wayne"


def test_missing_files_are_file_not_found(cli_store: Any, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # "another folder": dsl/examples is not under it
    with kgdb.connect() as kb:
        with pytest.raises(kgdb.MissingFileError) as caught:
            kb.logical_form("dsl/examples/one_hop_director.lf")
        error = caught.value
        assert isinstance(error, FileNotFoundError) and isinstance(error, kgdb.KgdbError)
        assert error.filename == "dsl/examples/one_hop_director.lf"
        assert str(error) == ("dsl/examples/one_hop_director.lf: no such logical form file "
                              f"(looked for {tmp_path}/dsl/examples/one_hop_director.lf)")
        with pytest.raises(FileNotFoundError, match="plans/director: no such logical form"):
            kb.logical_form("plans/director")  # no "(": a path, not a plan
        with pytest.raises(FileNotFoundError, match="no such logical form file"):
            kb.logical_form(Path("missing.lf"))
        with pytest.raises(FileNotFoundError,
                           match=re.escape("grades.rules: no such rule file")):
            kb.apply_rules("grades.rules")
        with pytest.raises(FileNotFoundError,
                           match=re.escape("grades.rules: no such rule file")):
            kb.judge("grades.rules", {"x": 1})
        with pytest.raises(FileNotFoundError, match="nowhere/: no such file or folder"):
            kb.load_documents(["nowhere/"])
        with pytest.raises(FileNotFoundError,
                           match=re.escape("facts.txt: no such triples file")):
            kb.load("facts.txt")
        with pytest.raises(FileNotFoundError,
                           match=re.escape("movies.schema: no such schema file")):
            kb.apply_schema("movies.schema")
        assert kb.cypher("MATCH (n) RETURN count(n) AS n")[0]["n"] == 0  # nothing written
        # the same plan given by an absolute path, and as text, still runs
        kb.load_sample()
        plan = ROOT / "dsl" / "examples" / "one_hop_director.lf"
        by_path = kb.logical_form(str(plan))
        by_text = kb.logical_form(plan.read_text())
        assert [v.text for v in by_path.outputs["o1"]] == ["William Dieterle"]
        assert [v.text for v in by_text.outputs["o1"]] == ["William Dieterle"]


def test_connect_takes_credentials(neo4j_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KGDB_URI", "NEO4J_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    with kgdb.connect(neo4j_store.uri, user=neo4j_store.username,
                      password=neo4j_store.password) as kb:
        assert kb.engine == "neo4j"
        assert kb.cypher("RETURN 1 AS one") == [{"one": 1}]
    with pytest.raises(kgdb.KgdbError), kgdb.connect(neo4j_store.uri, user="neo4j",
                                                     password="wrong-password") as kb:
        kb.cypher("RETURN 1 AS one")
    with pytest.raises(ConfigError, match="user, password: Neo4j's credentials, but no Neo4j"):
        kgdb.connect(user="neo4j", password="x")


def python_quick_start() -> str:
    text = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(import kgdb\n.*?)```", text, re.S)
    assert block, "docs/python.md's quick start is missing"
    return block.group(1)


def test_quick_start_runs_from_any_folder(falkordb_store: Any, tmp_path: Path) -> None:
    code = python_quick_start()
    assert len(code.strip().splitlines()) <= 8
    write_folder(tmp_path / "my-documents")
    env = {k: v for k, v in os.environ.items()
           if k not in ("KGDB_URI", "NEO4J_URI", "NEO4J_PASSWORD")}
    env.update(KGDB_GRAPH=f"quick_{uuid.uuid4().hex[:8]}", PYTHONPATH=str(ROOT))
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              cwd=tmp_path, timeout=900, env=env)
    finally:
        from kgdb.config import Settings
        from kgdb.engine import connect

        connect(Settings.from_env(graph=env["KGDB_GRAPH"])).drop()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].split()[1] == "acme", lines  # score, document, source
    assert 1 <= len(lines) <= 3
