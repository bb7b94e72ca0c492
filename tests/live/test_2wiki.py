"""A slice of the held-out corpus (data/2wiki-100) through the document pipeline and the
document solvers, both engines: its titles are the documents eval scores, and the mutual index
finds the entities a comparison question names."""

from __future__ import annotations

import json
from pathlib import Path

from kgdb.documents.pipeline import DocumentOptions, load_documents
from kgdb.retrieve.documents import evaluate, parse_modes, read_questions
from kgdb.retrieve.hybrid import HybridOptions
from kgdb.retrieve.registry import solver_named

DATA = Path(__file__).resolve().parents[2] / "data" / "2wiki-100"
SLICE = 4  # questions; their 40 context passages


def test_a_slice_of_2wiki_loads_and_ranks(store, embedder, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in
            (DATA / "questions.jsonl").read_text(encoding="utf-8").splitlines()][:SLICE]
    wanted = {t for r in rows for t in r["context"]}
    passages = [p for p in json.loads((DATA / "corpus.json").read_text(encoding="utf-8"))
                if p["title"] in wanted]
    corpus = tmp_path / "slice.json"
    corpus.write_text(json.dumps(passages), encoding="utf-8")
    report = load_documents(store, embedder, [corpus], options=DocumentOptions(
        extract="gazetteer", title_entity=True), progress=False)
    assert report.documents == len(wanted) == 40
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = evaluate(store, embedder, read_questions(questions), ks=(2, 10),
                      modes=parse_modes(("vector", "hybrid")))
    # every supporting title is a loaded document: at 10 of 40 documents, dense search
    # already finds most of them, and the fusion keeps what it found
    assert result.recall["vector"]["recall@10"] >= 0.75
    assert result.recall["hybrid"]["recall@10"] >= result.recall["vector"]["recall@10"]
    # "Which film was released first, Aas Ka Panchhi or Phoolwari?": both titles are
    # entities named by one document each, so their documents lead the fused ranking
    evidence = solver_named("hybrid").retrieve(store, embedder, rows[1]["question"],
                                               HybridOptions())
    assert [e["id"] for e in evidence.detail["entities"]] == ["Aas Ka Panchhi", "Phoolwari"]
    assert {d.id for d in evidence.documents[:2]} == {"Aas Ka Panchhi", "Phoolwari"}
