"""``kgdb bench corpus``: a larger corpus from a base and real distractors, reproducibly."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kgdb.cli import cli
from kgdb.documents.readers import read_corpus


def write(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_base_then_distractors_repeated_under_new_ids(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", [
        {"title": "A", "text": "A one."}, {"title": "A", "text": "A two."},
        {"title": "B", "text": "B."}])
    extra = write(tmp_path / "extra.json", [{"title": "X", "text": "X."},
                                            {"title": "Y", "text": "Y."},
                                            {"title": "Z", "text": "Z."}])
    out = tmp_path / "out.json"
    result = CliRunner().invoke(cli, ["bench", "corpus", str(base), str(extra), "--passages",
                                      "8", "--distinct", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "8 passages, 7 documents" in result.output
    records = json.loads(out.read_text(encoding="utf-8"))
    assert [(r["id"], r["title"], r["text"]) for r in records] == [
        ("A", "A", "A one."), ("A", "A", "A two."), ("B", "B", "B."),
        ("x1:X", "X", "X."), ("x1:Y", "Y", "Y."), ("x2:X", "X", "X."), ("x2:Y", "Y", "Y."),
        ("x3:X", "X", "X.")]
    docs = read_corpus(out)  # a corpus kgdb load documents reads: the base unchanged
    assert [(d.id, len(d.sections)) for d in docs][:2] == [("A", 2), ("B", 1)]
    default = tmp_path / "ten.json"
    assert CliRunner().invoke(cli, ["bench", "corpus", str(base), str(extra), "-o",
                                    str(default)]).exit_code == 0
    assert len(json.loads(default.read_text(encoding="utf-8"))) == 30  # 10x the base


def test_too_few_passages_is_a_one_line_error(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", [{"title": "A", "text": "A."}])
    result = CliRunner().invoke(cli, ["bench", "corpus", str(base), "-o",
                                      str(tmp_path / "o.json")])
    assert result.exit_code == 1
    assert "give a corpus of extra documents" in result.output
    assert "Traceback" not in result.output
