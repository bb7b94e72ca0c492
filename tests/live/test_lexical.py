"""Lexical retrieval on both engines: ``kgdb index fulltext`` builds the index over chunks'
text and titles (English stemming and stop words), the ``keyword`` solver searches it, no
question is query syntax (hypothesis over hostile strings), each engine's scorer is what
:attr:`Dialect.LEXICAL_SCORER` says (Neo4j's BM25 equals Lucene's formula computed here;
FalkorDB's TF-IDF ignores a chunk's length), and ``hybrid`` and ``ppr`` fuse the lexical
scores when asked."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgdb.cli import cli
from kgdb.documents.fulltext import build_fulltext
from kgdb.documents.pipeline import DocumentOptions, load_documents
from kgdb.retrieve.hybrid import HybridOptions, HybridSolver
from kgdb.retrieve.keyword import KeywordOptions, KeywordSolver, LexicalError, lexical_rows, query_terms

RECORDS = [
    {"id": "curie", "title": "Marie Curie", "text": "She studied radioactivity in Paris."},
    {"id": "fermi", "title": "Enrico Fermi", "text": "He built the first nuclear reactor."},
    {"id": "noether", "title": "Emmy Noether", "text": "Her theorem links symmetries and "
                                                       "conservation laws."},
    {"id": "lovelace", "title": "Ada Lovelace", "text": "She wrote the first program for "
                                                        "the analytical engine."},
    {"id": "bohr", "title": "Niels Bohr", "text": "He studied atoms in Copenhagen."},
]


def _load(store: Any, embedder: Any, tmp_path: Path, records: list[dict[str, str]]) -> None:
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    load_documents(store, embedder, [path], options=DocumentOptions(), progress=False)


def _keyword(store: Any, embedder: Any, question: str, k: int = 5) -> list[tuple[str, float]]:
    evidence = KeywordSolver().retrieve(store, embedder, question, KeywordOptions(passages=k))
    return [(d.id, float(d.score or 0.0)) for d in evidence.documents]


def test_keyword_solver_searches_text_and_titles(cli_store: Any, embedder: Any,
                                                 tmp_path: Path) -> None:
    """Before the index: the solver says what to run. After ``kgdb index fulltext``: stems
    match (studies/studied), titles match, stop words alone find nothing, a re-run is
    unchanged, and a chunk loaded later is found without a rebuild."""
    store = cli_store
    _load(store, embedder, tmp_path, RECORDS)
    with pytest.raises(LexicalError, match="kgdb index fulltext"):
        _keyword(store, embedder, "radioactivity")
    result = CliRunner().invoke(cli, ["index", "fulltext", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["mode"] in ("created", "rebuilt") and report["chunks"] == 5
    assert report["scorer"] == store.dialect.LEXICAL_SCORER
    again = CliRunner().invoke(cli, ["index", "fulltext"])
    assert again.exit_code == 0 and "up to date" in again.output, again.output
    assert _keyword(store, embedder, "Who studies radioactivity?")[0][0] == "curie"
    assert {d for d, _ in _keyword(store, embedder, "studying")} == {"curie", "bohr"}
    assert [d for d, _ in _keyword(store, embedder, "emmy")] == ["noether"]  # title only
    assert _keyword(store, embedder, "the of and is it") == []
    _load(store, embedder, tmp_path, [*RECORDS, {"id": "meitner", "title": "Lise Meitner",
                                                 "text": "She explained nuclear fission."}])
    assert [d for d, _ in _keyword(store, embedder, "fission")] == ["meitner"]


HOSTILE = st.lists(st.sampled_from([*'+-&|!(){}[]^"~*?:\\/,.<>;@#$%=\'` \n',
                                    "AND", "OR", "NOT", "TO", "studied", "Paris", "title",
                                    "text", "@title:", "-Paris", "atoms*", "\"Paris"]),
                   max_size=12).map("".join)


def test_no_question_is_query_syntax(store: Any, embedder: Any, tmp_path: Path) -> None:
    """Any question runs, and finds exactly what its words alone find: quotes, operators and
    field names in it are data."""
    _load(store, embedder, tmp_path, RECORDS)
    build_fulltext(store)

    @settings(max_examples=40, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(HOSTILE)
    def check(question: str) -> None:
        found = [(r["chunk"], r["score"]) for r in lexical_rows(store, question, 10)]
        plain = [(r["chunk"], r["score"]) for r in
                 lexical_rows(store, " ".join(query_terms(question)), 10)]
        assert found == plain

    check()


def _lucene_bm25(docs: list[list[str]], query: list[str], k1: float = 1.2,
                 b: float = 0.75) -> list[float]:
    """Lucene's BM25Similarity (9.x: idf ln(1 + (N - n + 0.5) / (n + 0.5)), tf f / (f + k1
    (1 - b + b dl / avgdl)), no (k1 + 1) factor), summed over the query's terms."""
    n_docs = len(docs)
    avgdl = sum(len(d) for d in docs) / n_docs
    out = []
    for d in docs:
        score = 0.0
        for term in query:
            n = sum(1 for x in docs if term in x)
            f = d.count(term)
            if f:
                idf = math.log(1 + (n_docs - n + 0.5) / (n + 0.5))
                score += idf * f / (f + k1 * (1 - b + b * len(d) / avgdl))
        out.append(score)
    return out


SCORER_RECORDS = [  # stems equal to the words, titles sharing no word with the texts
    {"id": "d1", "title": "One", "text": "apple"},
    {"id": "d2", "title": "Two", "text": "apple apple banana banana"},
    {"id": "d3", "title": "Three", "text": "apple banana cherry melon"},
    {"id": "d4", "title": "Four", "text": "banana cherry"},
]


def test_each_engine_scores_as_documented(store: Any, embedder: Any, tmp_path: Path) -> None:
    """Neo4j: BM25 exactly (Lucene's formula over the text field; the titles hold none of the
    words). FalkorDB: TF-IDF normalised by the chunk's most frequent term, so three chunks
    whose top term is 'apple' as often as anything score alike whatever their length."""
    _load(store, embedder, tmp_path, SCORER_RECORDS)
    build_fulltext(store)
    found = {r["document"]: float(r["score"]) for r in lexical_rows(store, "apple", 10)}
    assert set(found) == {"d1", "d2", "d3"}
    if store.dialect.NAME == "neo4j":
        docs = [r["text"].split() for r in SCORER_RECORDS]
        expected = dict(zip([r["id"] for r in SCORER_RECORDS], _lucene_bm25(docs, ["apple"]),
                            strict=True))
        for d, score in found.items():
            assert math.isclose(score, expected[d], rel_tol=1e-5), (d, score, expected[d])
        assert "BM25" in store.dialect.LEXICAL_SCORER
    else:
        assert found["d1"] == found["d2"] == found["d3"] > 0
        assert "TF-IDF" in store.dialect.LEXICAL_SCORER


def test_hybrid_and_ppr_fuse_lexical_scores(store: Any, embedder: Any, tmp_path: Path) -> None:
    """With lexical_weight, hybrid adds each document's normalised lexical score (the best
    lexical document gains exactly the weight) and ppr seeds the lexical passages; without
    the index hybrid says so and ranks as before."""
    _load(store, embedder, tmp_path, RECORDS)
    question = "Which theorem is about conservation?"
    plain = HybridSolver().retrieve(store, embedder, question, HybridOptions())
    asked = HybridSolver().retrieve(store, embedder, question,
                                    HybridOptions(lexical_weight=0.5))
    assert "kgdb index fulltext" in str(asked.detail["lexical"])
    assert [d.id for d in asked.documents] == [d.id for d in plain.documents]
    build_fulltext(store)
    fused = HybridSolver().retrieve(store, embedder, question,
                                    HybridOptions(lexical_weight=0.5))
    before = {d.id: d.score for d in plain.documents}
    after = {d.id: d.score for d in fused.documents}
    assert math.isclose(after["noether"] - before["noether"], 0.5, abs_tol=1e-9)
    assert fused.documents[0].id == "noether"
    from kgdb.documents.ppr_graph import build_graph
    from kgdb.retrieve.ppr import PprOptions, PprSolver
    from kgdb.stored.ppr_options import GraphOptions

    build_graph(store, embedder, GraphOptions(0.8, True, True, 20.0), full=True)
    evidence = PprSolver().retrieve(store, embedder, question,
                                    PprOptions(lexical_seed_weight=1.0))
    lexical = [s for s in evidence.detail["seeds"] if s["kind"] == "lexical"]
    assert lexical and lexical[0]["chunk"].startswith("noether") and lexical[0]["weight"] == 1.0
