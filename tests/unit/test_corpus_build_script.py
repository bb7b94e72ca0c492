"""benchmarks/corpus_build.py: the build steps it times and the results file it writes (the
steps themselves are kgdb commands, measured live by the script)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from kgdb.results import read_results, write_result

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus_build.py"


def _module():
    spec = importlib.util.spec_from_file_location("corpus_build", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_steps_are_the_load_and_the_indexes_eval_needs() -> None:
    steps = dict(_module().steps(Path("c.json")))
    assert steps["load"] == ["load", "documents", "c.json", "--extract", "gazetteer",
                             "--title-entity", "--mention-facts"]
    assert list(steps) == ["load", "index_fulltext", "index_ppr", "index_rest", "stats"]


def test_times_per_1000_passages_and_reports_in_a_results_file(tmp_path: Path) -> None:
    module = _module()
    records = [module.step_record("load", ["kgdb", "load"], 612.345, '{"documents": 6119}',
                                  6119, 0),
               module.step_record("index_ppr", ["kgdb", "index", "ppr"], 30.0, "not json\n",
                                  6119, 1)]
    assert records[0]["seconds"] == 612.35
    assert records[0]["seconds_per_1000_passages"] == round(612.345 * 1000 / 6119, 2) == 100.07
    assert records[0]["report"] == {"documents": 6119}
    assert records[1]["report"] == "not json" and records[1]["returncode"] == 1
    document = module.build_document("2wiki-1000", Path("c.json"), 6119, records,
                                     "embedded FalkorDB", ["python", "x"], None)
    assert document["what"] == "build-2wiki-1000"
    assert document["result"]["total_seconds"] == 642.35
    assert document["result"]["seconds_per_1000_passages"] == {"load": 100.07,
                                                               "index_ppr": 4.9}
    path = write_result(tmp_path, document)
    (found,) = read_results(tmp_path)
    assert found["file"] == path.name and found["result"] == document["result"]
