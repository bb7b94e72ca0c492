"""data/2wiki-100, the held-out corpus (its README.md): the questions read through kgdb's eval
reader, every supporting and context title is a passage, and the counts are the documented
ones. Its build script reproduces both files from HippoRAG's format."""

from __future__ import annotations

import collections
import json
import runpy
from pathlib import Path

from kgdb.retrieve.documents import read_questions

DATA = Path(__file__).resolve().parents[2] / "data" / "2wiki-100"


def _rows() -> list[dict]:
    return [json.loads(line) for line in
            (DATA / "questions.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_questions_and_their_passages_agree() -> None:
    rows = _rows()
    corpus = json.loads((DATA / "corpus.json").read_text(encoding="utf-8"))
    titles = collections.Counter(p["title"] for p in corpus)
    assert (len(rows), len(corpus), max(titles.values())) == (100, 772, 1)
    assert len({r["id"] for r in rows}) == 100
    assert collections.Counter(r["type"] for r in rows) == {
        "compositional": 45, "comparison": 25, "bridge_comparison": 23, "inference": 7}
    for r in rows:
        assert len(r["context"]) == 10 and set(r["supporting"]) <= set(r["context"])
        assert all(t in titles for t in r["context"])
        assert len(r["supporting"]) == (4 if r["type"] == "bridge_comparison" else 2)
    # every passage is some question's context: the corpus is exactly the contexts
    assert set(titles) == {t for r in rows for t in r["context"]}
    questions = read_questions(DATA / "questions.jsonl")
    assert [q.question for q in questions] == [r["question"] for r in rows]
    assert sum(len(q.supporting) for q in questions) == 246


def test_the_build_script_rebuilds_both_files(tmp_path: Path) -> None:
    rows = _rows()
    corpus = json.loads((DATA / "corpus.json").read_text(encoding="utf-8"))
    # HippoRAG's format: contexts with sentences, supporting facts by sentence (a title twice)
    original = [{"_id": r["id"], "type": r["type"], "question": r["question"],
                 "answer": r["answer"], "evidences": [],
                 "context": [[t, [f"sentence about {t}."]] for t in r["context"]],
                 "supporting_facts": [[t, 0] for t in r["supporting"]] + [[r["supporting"][0], 1]]}
                for r in rows]
    source = tmp_path / "2wikimultihopqa.json"
    source.write_text(json.dumps(original + original[:5]), encoding="utf-8")
    extra = [{"title": "Not a context title", "text": "left out"}]
    full = tmp_path / "2wikimultihopqa_corpus.json"
    full.write_text(json.dumps(corpus + extra), encoding="utf-8")
    build = runpy.run_path(str(DATA / "build.py"))["main"]
    out = tmp_path / "out"
    out.mkdir()
    assert build(["--corpus", str(full), "--questions", str(source), "--out", str(out)]) == 0
    assert (out / "questions.jsonl").read_text(encoding="utf-8") == \
        (DATA / "questions.jsonl").read_text(encoding="utf-8")
    assert json.loads((out / "corpus.json").read_text(encoding="utf-8")) == corpus
    # a missing passage is reported and fails
    full.write_text(json.dumps(corpus[1:]), encoding="utf-8")
    assert build(["--corpus", str(full), "--out", str(out)]) == 1
