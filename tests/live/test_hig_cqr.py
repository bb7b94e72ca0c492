"""KG-Retriever's retrieval on the hierarchical index graph (``--solver document-graph``) and
KG-CQR's contextual query retrieval (``--solver triple-context``) on both engines: the entity-level
statement equals a reference computed from the stored graph, the LLM steps run against the
scripted OpenAI-compatible server (realistic, malformed, slow and 429 replies), and the
evaluation modes run without an LLM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from kgdb.cli import cli
from kgdb.documents.knn import build_knn
from kgdb.documents.pipeline import DocumentOptions, load_documents
from kgdb.documents.triple_index import index_triples
from kgdb.retrieve.document_graph import DocumentGraphOptions, DocumentGraphSolver, collaboration

pytestmark = pytest.mark.live

CORPUS = [
    {"title": "Kismet", "text": "Kismet is a 1944 film directed by William Dieterle. "
                                "Marlene Dietrich and Ronald Colman star in it."},
    {"title": "William Dieterle", "text": "William Dieterle was a German-born film director "
                                          "who worked in Hollywood; he directed Kismet."},
    {"title": "Marlene Dietrich", "text": "Marlene Dietrich was a German-born actress and "
                                          "singer. She starred in Kismet and Blonde Venus."},
    {"title": "Ronald Colman", "text": "Ronald Colman was an English actor. He starred in "
                                       "Kismet and Lost Horizon."},
    {"title": "Blonde Venus", "text": "Blonde Venus is a 1932 film starring Marlene Dietrich, "
                                      "directed by Josef von Sternberg."},
    {"title": "Josef von Sternberg", "text": "Josef von Sternberg was an Austrian-American "
                                             "film director who directed Blonde Venus."},
    {"title": "Lost Horizon", "text": "Lost Horizon is a 1937 film by Frank Capra starring "
                                      "Ronald Colman."},
    {"title": "Volcano", "text": "A volcano is a rupture in the crust of a planet through "
                                 "which magma escapes."},
    {"title": "Magma", "text": "Magma is molten rock beneath the surface; a volcano "
                               "releases it."},
]


@pytest.fixture
def hig_store(cli_store, embedder, tmp_path: Path) -> Any:
    corpus = tmp_path / "films.json"
    corpus.write_text(json.dumps(CORPUS), encoding="utf-8")
    load_documents(cli_store, embedder, [corpus], options=DocumentOptions(
        extract="gazetteer", title_entity=True, mention_facts=True), progress=False)
    build_knn(cli_store, label="Document", k=2)
    index_triples(cli_store, embedder, progress=False)
    return cli_store


def _vec(value: Any) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64)
    return v / np.linalg.norm(v)


def _reference(store: Any, vector: np.ndarray, settings: DocumentGraphOptions
               ) -> list[tuple[str, str, str, float]]:
    """KG-level retrieval from the stored graph, in Python."""
    documents = {c.id: c.weight for c in collaboration(store, vector, settings)}
    rows = store.run("MATCH (d:Document)-[:hasChunk]->(:Chunk)<-[:supporting_chunks]-(e:Entity) "
                     "RETURN d.id AS d, e.id AS e, e.embedding AS v").records()
    scores: dict[str, float] = {}
    for r in rows:
        if r["d"] in documents:
            s = documents[r["d"]] * float(np.dot(_vec(r["v"]), vector))
            scores[r["e"]] = max(scores.get(r["e"], -9.0), s)
    kept = {e: s for e, s in scores.items() if s > settings.threshold}
    facts = store.run("MATCH (h:Entity)-[r]->(t:Entity) WHERE r.ttr IS NOT NULL "
                      "RETURN h.id AS h, type(r) AS type, t.id AS t").records()
    out = []
    for f in facts:
        s = max(kept.get(f["h"], -9.0), kept.get(f["t"], -9.0))
        if s > -9.0:
            out.append((f["h"], f["type"], f["t"], s))
    out.sort(key=lambda x: (-x[3], x[0], x[1], x[2]))
    return out[:settings.facts]


@pytest.mark.parametrize("strategy", ["onehop", "attentive", "multihop"])
def test_entity_level_retrieval_equals_the_reference(hig_store, embedder, strategy: str
                                                     ) -> None:
    for question in ("Who directed Kismet?", "Which films did Marlene Dietrich star in?",
                     "What does a volcano release?"):
        vector = embedder.embed([question])[0]
        for n, t, lam in ((1, 30, 0.1), (2, 3, 0.0), (3, 30, 0.3)):
            settings = DocumentGraphOptions(strategy=strategy,  # type: ignore[arg-type]
                                            seeds=n, facts=t, threshold=lam)
            evidence = DocumentGraphSolver().retrieve(hig_store, embedder, question, settings)
            assert len(evidence.detail["candidates"]) >= n  # type: ignore[arg-type]
            expected = _reference(hig_store, vector, settings)
            got = [(x.head_id, x.relation, x.tail_id, x.score) for x in evidence.facts]
            assert [g[:3] for g in got] == [e[:3] for e in expected], (question, n, t, lam)
            assert all(abs(g[3] - e[3]) < 1e-4 for g, e in zip(got, expected, strict=True))
            chunk_docs = {p.document for p in evidence.passages}
            assert chunk_docs <= {c.split("#")[0] for x in evidence.facts for c in x.chunks}
    evidence = DocumentGraphSolver().retrieve(hig_store, embedder, "Who directed Kismet?",
                                              DocumentGraphOptions(strategy=strategy))  # type: ignore[arg-type]
    assert any(x.text == "Kismet mentions William Dieterle" for x in evidence.facts)


def test_ask_hig_through_the_llm(hig_store, scripted_llm) -> None:
    scripted_llm.push({"status": 429}, {"content": "William Dieterle", "delay": 0.3})
    result = CliRunner().invoke(cli, ["ask", "Who directed Kismet?", "--solver",
                                      "document-graph", "--strategy", "attentive", "--seeds",
                                      "2", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["answer"] == "William Dieterle" and out["solver"] == "document-graph"
    assert out["documents"][0]["id"] == "Kismet"
    prompt = scripted_llm.requests[-1]["messages"][0]["content"]
    assert "Kismet mentions William Dieterle" in prompt and "Who directed Kismet?" in prompt
    assert {"documents", "facts", "chunks", "answer"} <= set(out["timings_ms"])


def test_ask_cqr_through_the_llm(hig_store, scripted_llm) -> None:
    scripted_llm.push(
        "Relevant passages: the first ones",                    # malformed: shown the error
        "```json\n[0, 1]\n```",                                 # the filter keeps two facts
        {"status": 429},
        {"content": "Kismet (1944) was directed by William Dieterle.", "delay": 0.2},  # context
        "William Dieterle")                                     # the answer
    result = CliRunner().invoke(cli, ["ask", "Who directed Kismet?", "--solver",
                                      "triple-context", "--nearest-facts", "4", "--passages",
                                      "3", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["answer"] == "William Dieterle"
    assert len(out["extracted"]) == 4 and out["kept"] == 2
    assert out["context"] == "Kismet (1944) was directed by William Dieterle."
    assert len(out["passages"]) == 3 and out["passages"][0]["document"] in {
        "Kismet", "William Dieterle"}
    retry = scripted_llm.requests[1]["messages"]
    assert "could not be used" in retry[-1]["content"]
    assert "Who directed Kismet?" in scripted_llm.requests[-1]["messages"][0]["content"]


def test_cqr_without_an_llm_and_the_evaluation_modes(hig_store, embedder,
                                                     tmp_path: Path) -> None:
    from kgdb.retrieve.passages import nearest_passages
    from kgdb.retrieve.triple_context import TripleContextOptions, TripleContextSolver, fuse

    vector = embedder.embed(["Who directed Kismet?"])[0]
    evidence = TripleContextSolver().retrieve(hig_store, embedder, "Who directed Kismet?",
                                              TripleContextOptions(nearest_facts=3, passages=4))
    assert evidence.detail["kept"] == 3 and len(evidence.detail["extracted"]) == 3  # type: ignore[arg-type]
    context = str(evidence.detail["context"])
    assert context == ". ".join(f.sentence for f in evidence.facts) + "."
    fused = fuse(vector, embedder.embed([context])[0], 0.7)
    assert abs(float(np.linalg.norm(fused)) - 1.0) < 1e-9
    paper = TripleContextSolver().retrieve(hig_store, embedder, "Who directed Kismet?",
                                           TripleContextOptions(nearest_facts=3, passages=4,
                                                                ranking="vector"))
    assert [p.id for p in paper.passages] == [p.id for p in nearest_passages(hig_store,
                                                                             fused, 4)]
    # the default ranking: the chunks nearest either vector by cos(q) + 0.1 cos(fused)
    ids = list(dict.fromkeys(p.id for v in (vector, fused)
                             for p in nearest_passages(hig_store, v, 4)))
    stored = {str(r["id"]): np.asarray(r["e"], dtype=np.float64) for r in hig_store.run(
        "MATCH (c:Chunk) WHERE c.id IN $ids RETURN c.id AS id, c.embedding AS e",
        {"ids": ids}).records()}

    def cos(a: Any, b: Any) -> float:
        return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))

    score = {i: cos(vector, e) + 0.1 * cos(fused, e) for i, e in stored.items()}
    assert [p.id for p in evidence.passages] == sorted(score, key=lambda i: (-score[i], i))[:4]
    assert [p.score for p in evidence.passages] == pytest.approx(
        [score[p.id] for p in evidence.passages], abs=1e-5)

    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in [
        {"question": "Who directed Kismet?", "supporting": ["Kismet", "William Dieterle"]},
        {"question": "What does a volcano release?", "supporting": ["Volcano", "Magma"]}]),
        encoding="utf-8")
    run = CliRunner().invoke(cli, ["eval", "retrieval", "--questions", str(questions),
                                   "--mode", "vector,triple-context", "--mode",
                                   "document-graph:facts=0", "--mode",
                                   "document-graph:facts=0,strategy=attentive",
                                   "--k", "2,5", "--json"])
    assert run.exit_code == 0, run.output
    report = json.loads(run.output)
    assert set(report["recall"]) == {"vector", "triple-context", "document-graph:facts=0",
                                     "document-graph:facts=0,strategy=attentive"}
    assert report["recall"]["triple-context"]["recall@5"] == 1.0
    assert set(report["latency_ms"]) >= {"embed", "triple-context", "document-graph:facts=0"}


def test_bad_settings_and_no_triple_texts(cli_store, embedder, scripted_llm) -> None:
    bad = CliRunner().invoke(cli, ["ask", "q", "--solver", "triple-context", "--alpha", "2"])
    assert bad.exit_code == 2 and "--alpha" in bad.output
    other = CliRunner().invoke(cli, ["retrieve", "q", "--solver", "vector", "--seeds", "2"])
    assert other.exit_code == 2 and "--seeds is an option of document-graph" in other.output
    from pydantic import ValidationError

    from kgdb.retrieve.triple_context import TripleContextError, TripleContextOptions, TripleContextSolver

    with pytest.raises(TripleContextError, match="kgdb index triples first"):
        TripleContextSolver().retrieve(cli_store, embedder, "q", TripleContextOptions())
    with pytest.raises(ValidationError, match="strategy"):
        DocumentGraphOptions(strategy="twohop")  # type: ignore[arg-type]


def test_bench_retrieve_documents_reports_latency_per_mode(hig_store, tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "Who directed Kismet?",
                                     "supporting": ["Kismet"]}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["bench", "retrieve", "--documents", str(questions),
                                      "--mode", "vector,triple-context", "--mode",
                                      "document-graph:facts=0,strategy=attentive", "--mode",
                                      "document-graph:strategy=multihop", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert set(report["latency_ms"]) == {
        "embed", "vector", "document-graph:facts=0,strategy=attentive",
        "document-graph:strategy=multihop", "triple-context"}
    assert all(v["p50"] >= 0 and v["p90"] >= v["p50"] for v in report["latency_ms"].values())
    missing = CliRunner().invoke(cli, ["bench", "retrieve"])
    assert missing.exit_code == 2 and "give --questions (MetaQA) or --documents" in missing.output


MUSIQUE_RECALL = {  # benchmarks/RESULTS.md, recall-musique-100-document-solvers
    "vector": (0.5, 0.64, 0.705),
    "entities": (0.2933, 0.3033, 0.3033),
    "hybrid": (0.5158, 0.6533, 0.7158),  # fused by scores: above vector, not below it
    "hybrid:fusion=rrf": (0.4825, 0.63, 0.7042),
    "document-graph:facts=0": (0.4917, 0.64, 0.705),
    "document-graph:facts=0,strategy=attentive": (0.4917, 0.64, 0.705),
    "document-graph:facts=0,strategy=multihop": (0.4917, 0.64, 0.705),
    "document-graph": (0.4975, 0.6367, 0.705),
    "document-graph:strategy=attentive": (0.4975, 0.6367, 0.71),
    "document-graph:strategy=multihop": (0.4975, 0.6367, 0.71),
    "triple-context": (0.5067, 0.6317, 0.6992),
    "triple-context:ranking=vector": (0.4425, 0.5925, 0.6692),
}


@pytest.mark.slow
def test_musique_every_mode_without_an_llm(cli_store) -> None:
    """The issue's check: MuSiQue-100 loaded as the documents issue does, plus mention facts
    with their triple texts and the document layer, supports every retrieval mode without an
    LLM, with the recall the README reports (the same on both engines)."""
    from tests.conftest import shared_data

    corpus = shared_data("musique-100", "corpus.json")
    questions = shared_data("musique-100", "questions.json")
    for args in (["load", "documents", str(corpus), "--extract", "gazetteer", "--title-entity",
                  "--mention-facts", "--ttr", "--no-progress"], ["index", "knn"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
    modes = [arg for mode in MUSIQUE_RECALL for arg in ("--mode", mode)]
    result = CliRunner().invoke(cli, ["eval", "retrieval", "--questions", str(questions),
                                      *modes, "--json"])
    assert result.exit_code == 0, result.output
    recall = json.loads(result.output)["recall"]
    got = {m: tuple(r[f"recall@{k}"] for k in (2, 5, 10)) for m, r in recall.items()}
    assert set(got) == set(MUSIQUE_RECALL)
    for mode, expected in MUSIQUE_RECALL.items():
        # within one question's share: float32 near-ties among chunks may order differently
        # (seen once for cqr on Neo4j: recall@5 0.5975 against 0.5925)
        assert all(abs(g - e) <= 0.011 for g, e in zip(got[mode], expected, strict=True)), \
            (mode, got[mode], expected)


def test_a_document_read_as_deleted_is_left_out(hig_store, embedder) -> None:
    """On Neo4j a read sees each commit as it comes (read committed): a document the vector
    search found and a writer then deleted is read with no id. The load test caught it once
    in 8,662 answers as a document "None"; a document without an id is what such a read
    sees, so it stands in for the race here, on both engines."""
    from kgdb.statement import Statement

    vector = embedder.embed(["a volcano releases magma"])[0].tolist()
    options = DocumentGraphOptions(strategy="multihop", seeds=20)
    before = collaboration(hig_store, vector, options)
    assert "Magma" in {c.id for c in before}
    hig_store.run(Statement("MATCH (d:Document {id: 'Magma'}) SET d.id = null", write=True))
    after = collaboration(hig_store, vector, options)
    assert "None" not in {c.id for c in after} and None not in {c.id for c in after}
    assert {c.id for c in after} == {c.id for c in before} - {"Magma"}
