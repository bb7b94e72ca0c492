"""The generated pages are current (docs/reference/ from the code, benchmarks/RESULTS.md from
the results files), results files carry what makes runs comparable, and the package's own
data (its name, version, bundled examples, the clone-shadowing note) works from any folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgdb import docs_gen, results
from kgdb.cli import cli
from kgdb.errors import KgdbError
from kgdb.package import DISTRIBUTION, copy_examples, example, example_names, shadowing_note, version

ROOT = Path(__file__).resolve().parents[2]


def test_reference_pages_are_current() -> None:
    stale = docs_gen.stale_pages(ROOT / "docs" / "reference")
    assert not stale, f"stale: {', '.join(p.name for p in stale)}: run `python -m kgdb.docs_gen`"


def test_the_check_fails_in_one_line_naming_the_command(tmp_path: Path) -> None:
    for name in docs_gen.GENERATORS:
        (tmp_path / f"{name}.md").write_text(docs_gen.render(name), encoding="utf-8")
    assert docs_gen.main(["--dir", str(tmp_path), "--check"]) == 0
    (tmp_path / "cli.md").write_text("old\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "kgdb.docs_gen", "--dir", str(tmp_path),
                           "--check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"stale: {tmp_path / 'cli.md'}: run `python -m kgdb.docs_gen`"]


def test_reference_pages_cover_every_command_variable_solver_and_endpoint() -> None:
    from kgdb.config import Environment
    from kgdb.retrieve.registry import SOLVERS

    cli_page = docs_gen.render("cli")
    for verb in ("kgdb load triples", "kgdb bench retrieve", "kgdb examples copy", "kgdb serve"):
        assert f"`{verb}`" in cli_page, verb
    assert "| `--results` |" in cli_page  # the bench/eval option
    configuration = docs_gen.render("configuration")
    assert all(f"| `{name}` |" in configuration for name in Environment.model_fields)
    solvers = docs_gen.render("solvers")
    for solver in SOLVERS.values():
        assert f"## `{solver.name}`" in solvers
        for option in solver.options.model_fields:
            if option != "solver":
                assert f"| `{option}` |" in solvers, (solver.name, option)
    http = docs_gen.render("http")
    for path in ("## `POST /ask`", "## `GET /livez`", "### `AskRequest`"):
        assert path in http


def test_results_page_is_current() -> None:
    text = results.render(results.read_results(ROOT / "benchmarks" / "results"))
    assert (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8") == text, \
        "run `python -m kgdb.results render`"


def test_transcribed_results_say_where_they_came_from() -> None:
    found = results.read_results(ROOT / "benchmarks" / "results")
    transcribed = [d for d in found if d["source"] == "transcribed"]
    assert len(transcribed) >= 21
    for doc in transcribed:
        assert doc["file"].startswith(doc["date"]) and doc["file"].endswith(f"{doc['what']}.json")
        assert "README.md at" in doc["transcribed_from"] and len(doc["commit"]) == 40
        assert doc["table"]["rows"] and all(len(r) == len(doc["table"]["columns"])
                                            for r in doc["table"]["rows"]), doc["file"]
        assert (ROOT / doc["described_in"]).is_file(), doc["described_in"]


def test_a_results_file_holds_what_makes_runs_comparable(tmp_path: Path) -> None:
    doc = results.result_document("bench-demo", {"p50_ms": 1.5}, engine="falkordb",
                                  command=["kgdb", "bench", "x"], load_at_start=[1.0, 1.0, 1.0])
    first = results.write_result(tmp_path, doc)
    second = results.write_result(tmp_path, doc)  # the same day again: a second file
    assert first.name == f"{doc['date']}-bench-demo.json"
    assert second.name == f"{doc['date']}-bench-demo-2.json"
    stored = json.loads(first.read_text())
    assert stored["commit"] and len(stored["commit"]) == 40  # this clone's HEAD
    assert stored["versions"][DISTRIBUTION] == version()
    assert stored["machine"]["cores"] == os.cpu_count() and stored["load"]["at_end"]
    page = results.render(results.read_results(tmp_path))
    assert f"Current: `{second.name}`" in page and f"- `{first.name}`" in page
    assert "| p50_ms | 1.5 |" in page
    with pytest.raises(ValueError, match="lowercase words"):
        results.result_document("Bad Name", {}, engine=None, command=[], load_at_start=None)
    (tmp_path / "junk.json").write_text("{}")
    with pytest.raises(ValueError, match=r"junk\.json: not a results file"):
        results.read_results(tmp_path)


def test_bench_writes_its_report_with_results(tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["bench", "embed", "--texts", "8", "--rounds", "1", "--json",
                                   "--results", str(tmp_path)])
    assert out.exit_code == 0, out.output
    written = list(tmp_path.glob("*-bench-embed.json"))
    assert len(written) == 1
    stored = json.loads(written[0].read_text())
    assert stored["what"] == "bench-embed" and stored["source"] == "tool"
    assert stored["command"][:3] == ["kgdb", *sys.argv[1:3]] or stored["command"][0] == "kgdb"
    report = json.loads(out.stdout[out.stdout.index("{"):])
    assert stored["result"] == report


def test_bundled_examples_from_any_folder(tmp_path: Path) -> None:
    assert {"one_hop_director.lf", "count_math.lf", "hypertension.rules"} <= set(example_names())
    assert example("count_math.lf").read_text(encoding="utf-8").strip()
    with pytest.raises(KgdbError, match=r"no bundled example 'nope\.lf': the examples are"):
        example("nope.lf")
    (tmp_path / "count_math.lf").write_text("mine\n")
    written = copy_examples(tmp_path)
    assert (tmp_path / "count_math.lf").read_text() == "mine\n"  # kept, not overwritten
    assert len(written) == len(example_names()) - 1
    out = CliRunner().invoke(cli, ["examples"])
    assert out.exit_code == 0 and "one_hop_director.lf\t" in out.output
    blocked = tmp_path / "file"
    blocked.write_text("")
    out = CliRunner().invoke(cli, ["examples", "copy", str(blocked / "sub")])
    assert out.exit_code == 1 and "cannot create the folder" in out.output


def test_a_clone_folder_named_kgdb_is_explained_in_one_line(tmp_path: Path) -> None:
    clone = tmp_path / "kgdb"
    (clone / "kgdb").mkdir(parents=True)
    (clone / "pyproject.toml").write_text("")
    note = shadowing_note(clone / "kgdb")
    assert note is not None and "\n" not in note
    assert "module 'kgdb' has no attribute 'connect'" in note and DISTRIBUTION in note
    other = tmp_path / "kgdb-retrieval"
    (other / "kgdb").mkdir(parents=True)
    (other / "pyproject.toml").write_text("")
    assert shadowing_note(other / "kgdb") is None
    assert shadowing_note(tmp_path / "kgdb-no-clone" / "kgdb") is None


def test_a_clone_folder_named_kgdb_does_shadow_the_package(tmp_path: Path) -> None:
    """What the note explains, reproduced: beside a folder named kgdb (no __init__.py), a
    script imports that folder as a namespace package, not kgdb's code."""
    (tmp_path / "kgdb" / "docs").mkdir(parents=True)
    script = "import kgdb; print(hasattr(kgdb, 'connect'), list(kgdb.__path__))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("False") and str(tmp_path / "kgdb") in done.stdout


def test_the_version_is_the_distributions() -> None:
    import kgdb

    assert version() == kgdb.__version__
    out = CliRunner().invoke(cli, ["--version"])
    assert out.exit_code == 0 and version() in out.output
