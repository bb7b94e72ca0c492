"""data/2wiki-1000 (its README.md): HippoRAG's whole 2WikiMultiHopQA corpus, read through
kgdb's document reader; data/2wiki-100 is its prefix and every one of those questions' titles
is a passage. Its build script rebuilds the corpus and checks the questions' order."""

from __future__ import annotations

import collections
import json
import runpy
from pathlib import Path

from kgdb.documents.readers import read_documents

DATA = Path(__file__).resolve().parents[2] / "data"
HERE = DATA / "2wiki-1000"


def _corpus() -> list[dict]:
    return json.loads((HERE / "corpus.json").read_text(encoding="utf-8"))


def _first_100() -> list[dict]:
    return [json.loads(line) for line in
            (DATA / "2wiki-100" / "questions.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_corpus_is_hipporags_and_2wiki_100_is_its_prefix() -> None:
    corpus = _corpus()
    titles = collections.Counter(p["title"] for p in corpus)
    assert (len(corpus), max(titles.values())) == (6119, 1)
    assert all(set(p) == {"title", "text"} and p["text"].strip() for p in corpus)
    small = json.loads((DATA / "2wiki-100" / "corpus.json").read_text(encoding="utf-8"))
    assert corpus[:772] == small
    rows = _first_100()
    first_seen = list(dict.fromkeys(t for r in rows for t in r["context"]))
    assert first_seen == [p["title"] for p in corpus[:772]]
    assert all(t in titles for r in rows for t in r["supporting"])
    documents = read_documents([HERE / "corpus.json"])
    assert [d.id for d in documents] == [p["title"] for p in corpus]


def test_the_build_script_rebuilds_and_checks(tmp_path: Path) -> None:
    corpus = _corpus()
    source = tmp_path / "2wikimultihopqa_corpus.json"
    source.write_text(json.dumps(corpus), encoding="utf-8")
    build = runpy.run_path(str(HERE / "build.py"))["main"]
    out = tmp_path / "out"
    out.mkdir()
    assert build(["--corpus", str(source), "--out", str(out)]) == 0
    assert (out / "corpus.json").read_bytes() == (HERE / "corpus.json").read_bytes()
    # HippoRAG's questions format; the 100 questions rebuild 2wiki-100's records exactly
    rows = _first_100()
    original = [{"_id": r["id"], "type": r["type"], "question": r["question"],
                 "answer": r["answer"], "evidences": [],
                 "context": [[t, [f"sentence about {t}."]] for t in r["context"]],
                 "supporting_facts": [[t, 0] for t in r["supporting"]]} for r in rows]
    questions = tmp_path / "2wikimultihopqa.json"
    questions.write_text(json.dumps(original), encoding="utf-8")
    assert build(["--corpus", str(source), "--questions", str(questions),
                  "--out", str(out)]) == 0
    assert (out / "questions.jsonl").read_text(encoding="utf-8") == \
        (DATA / "2wiki-100" / "questions.jsonl").read_text(encoding="utf-8")
    # questions out of the corpus's order, or a passage missing, fail
    questions.write_text(json.dumps(original[::-1]), encoding="utf-8")
    assert build(["--corpus", str(source), "--questions", str(questions),
                  "--out", str(out)]) == 1
    source.write_text(json.dumps(corpus[1:]), encoding="utf-8")
    (out / "questions.jsonl").unlink()
    assert build(["--corpus", str(source), "--out", str(out)]) == 1
