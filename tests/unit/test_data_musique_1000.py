"""data/musique-1000/build.py (its README.md): on HippoRAG's MuSiQue format, here the shared
MuSiQue-100 (HippoRAG's data/musique_train.json and its corpus, byte for byte), it writes
records kgdb's eval reads with the same supporting documents, and it fails on a corpus that
lacks a supporting paragraph or has a passage of no question."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

from kgdb.retrieve.documents import read_questions
from tests.conftest import shared_data

BUILD = Path(__file__).resolve().parents[2] / "data" / "musique-1000" / "build.py"


def test_the_build_script_on_hipporags_format(tmp_path: Path) -> None:
    questions = shared_data("musique-100", "questions.json")
    corpus = shared_data("musique-100", "corpus.json")
    build = runpy.run_path(str(BUILD))["main"]
    out = tmp_path / "out"
    out.mkdir()
    assert build(["--questions", str(questions), "--corpus", str(corpus), "--out", str(out)]) == 0
    written = json.loads((out / "corpus.json").read_text(encoding="utf-8"))
    assert written == json.loads(corpus.read_text(encoding="utf-8"))
    assert len(written) == 1890 and len({p["title"] for p in written}) == 1764
    ours, theirs = read_questions(out / "questions.jsonl"), read_questions(questions)
    assert [(q.question, q.supporting) for q in ours] == [(q.question, q.supporting) for q in theirs]
    assert sum(len(q.supporting) for q in ours) == 235
    # a supporting paragraph missing from the corpus, or a stray passage, fails
    items = json.loads(questions.read_text(encoding="utf-8"))
    support = next(p for p in items[0]["paragraphs"] if p["is_supporting"])
    short = [p for p in written if (p["title"], p["text"]) !=
             (support["title"], support["paragraph_text"])]
    bad = tmp_path / "short.json"
    bad.write_text(json.dumps(short), encoding="utf-8")
    assert build(["--questions", str(questions), "--corpus", str(bad), "--out", str(out)]) == 1
    bad.write_text(json.dumps([*written, {"title": "Stray", "text": "no question's"}]),
                   encoding="utf-8")
    assert build(["--questions", str(questions), "--corpus", str(bad), "--out", str(out)]) == 1
