"""Every solver ready in one step, on both engines: ``kgdb index`` builds what the registered
solvers need and nothing the second time, ``kgdb stats`` says per solver whether it is ready,
a solver whose index is missing says in one line which command builds it (never the engine's
own error), and ``kgdb retrieve`` prints passages a person reads in 80 columns."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kgdb.cli import cli

pytestmark = pytest.mark.live

ACME = ("Acme Corporation was founded in 1947 by Wile Coyote in Phoenix, Arizona. The company "
        "makes rockets, anvils and giant magnets for customers across the desert. Its chief "
        "executive is Road Runner, who joined the company in 1960 after a long career in "
        "logistics. Acme's factories are in Arizona and Nevada, and its warehouses are in Utah. "
        "Acme sells most of its products by mail order through a catalogue of more than four "
        "thousand items. The catalogue is printed twice a year and mailed to every customer. "
        "Orders arrive by telegram, by post and by carrier pigeon. Acme promises delivery "
        "within a day anywhere in the desert. Its slogan, printed on every crate, is \"a "
        "company for every cliff\". The company has never been profitable.")
DOCUMENTS = {
    "acme.md": f"# Acme Corporation\n\n{ACME}\n",
    "zenith.md": "# Zenith Radio\n\nZenith Radio is a maker of radios and televisions based in "
                 "Chicago. It was founded in 1918 by Ralph Matthews and Karl Hassel. Its most "
                 "famous product was the Trans-Oceanic portable radio.\n",
    "kismet.md": "# Kismet\n\nKismet is a 1944 American film directed by William Dieterle. It "
                 "stars Ronald Colman and Marlene Dietrich. Metro-Goldwyn-Mayer produced it.\n",
}
DOCUMENT_SOLVERS = ("document-graph", "vector", "entities", "hybrid", "ppr")


def write_folder(folder: Path, documents: dict[str, str] = DOCUMENTS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in documents.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def one_line_error(result: Any) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def solver_states(stats_json: str) -> dict[str, str]:
    return {s["solver"]: s["state"] for s in json.loads(stats_json)["solvers"]}


def graph_counts(store: Any) -> tuple[int, int]:
    nodes = store.run("MATCH (n) RETURN count(n) AS n").value()
    edges = store.run("MATCH ()-[r]->() RETURN count(r) AS n").value()
    return int(nodes), int(edges)


def test_a_missing_index_is_one_line_naming_its_command(cli_store: Any, tmp_path: Path) -> None:
    # an empty graph: no chunk vector index at all (FalkorDB's raw error would be "Invalid
    # arguments for procedure 'db.idx.vector.queryNodes'")
    for solver in ("vector", "hybrid", "ppr", "document-graph"):
        line = one_line_error(invoke("retrieve", "who founded Acme?", "--solver", solver))
        assert line == (f"kgdb: error: the {solver} solver needs documents (none loaded): run "
                        "kgdb load documents PATH"), line
    line = one_line_error(invoke("retrieve", "q", "--solver", "pattern",
                                 "--pattern", "Kismet|directed_by|UNKNOWN person 1"))
    assert "needs entities (none loaded): run kgdb load triples FILE" in line, line
    loaded = invoke("load", "documents", str(write_folder(tmp_path / "docs")), "--no-progress")
    assert loaded.exit_code == 0, loaded.output
    assert "next: kgdb index (to build or refresh knn (missing), ppr (missing)" in loaded.output
    expected = {"document-graph": "the document layer (not built): run kgdb index knn",
                "ppr": "the retrieval graph (not built): run kgdb index ppr",
                "triple-context": "triple texts (no facts loaded): run kgdb load triples FILE, "
                                  "then kgdb index triples"}
    for solver, what in expected.items():
        line = one_line_error(invoke("retrieve", "who founded Acme?", "--solver", solver))
        assert line.startswith(f"kgdb: error: the {solver} solver needs {what}"), line
        assert "Invalid arguments" not in line and "procedure" not in line
    ok = invoke("retrieve", "who founded Acme?", "--solver", "vector")  # needs no build
    assert ok.exit_code == 0 and "acme" in ok.output


def test_index_builds_what_is_missing_then_nothing(cli_store: Any, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "docs")
    assert invoke("load", "documents", str(folder), "--no-progress").exit_code == 0
    before = solver_states(invoke("stats", "--json").output)
    assert before["vector"] == "ready" and before["hybrid"] == "ready"
    assert before["document-graph"] == "missing" and before["ppr"] == "missing"
    assert before["pattern"] == "missing"  # no entities: loading triples makes it ready

    first = invoke("index")
    assert first.exit_code == 0, first.output
    assert "[1/4] knn (missing: not built)..." in first.stderr  # piped: one line each
    assert "\r" not in first.stderr
    out = first.stdout.splitlines()
    assert re.match(r"knn: Document layer rebuilt with (vector|gds) \(first build\): 3 of 3",
                    out[0]), out  # gds: Neo4j with Graph Data Science
    assert out[1] == "triples: skipped, needs entities (none loaded): run kgdb load triples FILE"
    assert out[2].startswith("ppr: retrieval graph full: 3 chunks extracted")
    assert any(line.startswith("fulltext: ") for line in out[3:]), out  # keyword's index
    states = solver_states(invoke("stats", "--json").output)
    assert all(states[s] == "ready" for s in DOCUMENT_SOLVERS), states

    counts = graph_counts(cli_store)
    second = invoke("index", "--json")
    assert second.exit_code == 0, second.output
    steps = {s["index"]: s for s in json.loads(second.stdout)["indexes"]}
    assert steps["knn"]["report"]["mode"] == "unchanged"
    assert steps["knn"]["report"]["rewritten"] == 0
    assert steps["ppr"]["report"]["mode"] == "unchanged"
    assert steps["ppr"]["report"]["chunks"] == 0
    assert steps["triples"]["outcome"] == "skipped"
    assert steps["fulltext"]["report"]["mode"] == "unchanged"
    assert graph_counts(cli_store) == counts
    text = invoke("index")
    assert text.stdout.splitlines()[0] == "knn: up to date (3 documents, k=3)"
    assert text.stdout.splitlines()[2] == "ppr: up to date (3 chunks)"

    # a new document: both indexes are stale, kgdb index updates them (not from scratch)
    write_folder(folder, {"wayne.md": "# Wayne Enterprises\n\nWayne Enterprises is a "
                          "conglomerate in Gotham City founded by Solomon Wayne.\n"})
    assert invoke("load", "documents", str(folder), "--no-progress").exit_code == 0
    stats = json.loads(invoke("stats", "--json").output)
    ppr = next(s for s in stats["solvers"] if s["solver"] == "ppr")
    assert ppr["state"] == "stale"
    assert {"index": "ppr", "state": "stale", "detail": "1 of 4 chunks new since the build",
            "command": "kgdb index ppr"} in ppr["indexes"]
    layer = next(s for s in stats["solvers"] if s["solver"] == "document-graph")["indexes"]
    # with 3 documents each had K' = 2 neighbours, with 4 each needs 3: all are recomputed
    assert layer[1] == {"index": "knn", "state": "stale", "command": "kgdb index knn",
                        "detail": "4 of 4 documents new or changed since the build"}
    third = json.loads(invoke("index", "--json").stdout)["indexes"]
    modes = {s["index"]: s["report"]["mode"] for s in third if s["outcome"] == "built"}
    # 1 of 4: not from scratch; the engines keep the full-text index current themselves
    assert modes == {"knn": "incremental", "ppr": "incremental", "fulltext": "unchanged"}
    assert all(s["after"]["state"] == "ready" for s in third if s["outcome"] == "built")


def test_stats_lists_readiness_in_80_columns(cli_store: Any, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "docs")
    loaded = invoke("load", "documents", str(folder), "--index", "--no-progress")
    assert loaded.exit_code == 0, loaded.output
    assert "ppr: retrieval graph full" in loaded.stdout  # --index built them after the load
    assert "next: kgdb index" not in loaded.stdout
    stats = invoke("stats")
    assert stats.exit_code == 0
    lines = stats.stdout.splitlines()
    solvers = lines[lines.index("solvers:") + 1:]
    assert "  ppr             ready" in solvers
    assert "  document-graph  ready" in solvers
    assert "  triple-context  not ready: triple texts (no facts loaded)" in solvers
    assert "                  run: kgdb load triples FILE, then kgdb index triples" in solvers
    assert all(len(line) <= 80 for line in solvers), solvers


def test_retrieve_prints_readable_passages(cli_store: Any, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "docs")
    assert invoke("load", "documents", str(folder), "--index", "--no-progress").exit_code == 0
    for solver in ("vector", "hybrid", "ppr", "document-graph"):
        result = invoke("retrieve", "Who founded Acme Corporation?", "--solver", solver)
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert all(len(line) <= 80 for line in lines), [ln for ln in lines if len(ln) > 80]
        assert "Cypher that ran:" not in result.stdout and "params:" not in result.stdout
        if solver != "document-graph":  # its passages are its facts' chunks: none here
            first = lines.index(next(ln for ln in lines if ln.startswith("passages (")))
            assert lines[first + 1].split()[0] == "1." and lines[first + 1].endswith("acme")
            float(lines[first + 1].split()[1])  # its score
            body = []
            for ln in lines[first + 2:]:
                if not ln.startswith("      "):
                    break
                body.append(ln.strip())
            shown = " ".join(body)
            assert shown.startswith("Acme Corporation was founded in 1947 by Wile Coyote")
            assert shown.endswith(". \u2026")  # cut at a sentence end, marked
            assert "The company has never been profitable." not in shown
        assert any(line.startswith("documents: acme") for line in lines)
    full = invoke("retrieve", "Who founded Acme Corporation?", "--solver", "vector", "--json")
    data = json.loads(full.stdout)
    assert data["passages"][0]["text"].endswith("The company has never been profitable.")
    assert "source" in data["passages"][0]
    assert data["statements"]  # --json keeps the statements unless --no-cypher
    assert "statements" not in json.loads(invoke("retrieve", "Who founded Acme?", "--solver",
                                                 "vector", "--json", "--no-cypher").stdout)
    shown = invoke("retrieve", "Who founded Acme?", "--solver", "vector", "--cypher")
    assert "Cypher that ran:" in shown.stdout and "params:" in shown.stdout


def test_progress_is_whole_lines_when_piped(cli_store: Any, tmp_path: Path) -> None:
    result = invoke("load", "documents", str(write_folder(tmp_path / "docs")))
    assert result.exit_code == 0, result.output
    assert "\r" not in result.stderr
    progress = [ln for ln in result.stderr.splitlines() if ln.startswith("documents: ")]
    assert progress and progress[-1].startswith("documents: 3/3 (100%), ")
    assert "ETA" in progress[-1] and "docs" in progress[-1]
