"""The retrieval graph on hostile corpora (issue 35), both engines: one document of 1,000
look-alike names keeps a bounded number of synonym edges, its incremental update equals a
fresh build where the bound decides, and ppr answers on it; names in any script are phrases,
so ppr's recall@2 on such a corpus is the transliterated corpus's."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest

from kgdb.cypher import pagerank as cy
from kgdb.documents.ppr_graph import SYNONYM_NEIGHBOURS, build_graph
from kgdb.procedures import falkordb as udf
from kgdb.retrieve.ppr import PprOptions, PprSolver
from kgdb.stored.ppr_options import TITLE_WEIGHT
from tests.live.test_ppr import CORPUS, QUESTION, _load, _same_projection, _state

pytestmark = pytest.mark.live

_SYLLABLES = ["ba", "ke", "lo", "mi", "nu", "ra", "te", "vo", "si", "da", "go", "pe"]
_PARTS = ["".join(p).capitalize() for p in itertools.product(_SYLLABLES, repeat=3)]
random.Random(35).shuffle(_PARTS)
LOOKALIKES = [f"Archduke Maximilian Vornhelm von Kesselburg {p}" for p in _PARTS[:1100]]
"""Names whose embeddings all have a cosine above 0.8 (every pair of a sample of 80 did)."""


def _court(names: list[str]) -> dict[str, str]:
    return {"id": "court", "title": "The Kesselburg Court",
            "text": " ".join(f"{n} attended the court." for n in names)}


def _synonym_count(store: Any) -> int:
    return int(store.run(f"MATCH (:{cy.PHRASE})-[r:{cy.SYNONYM}]->(:{cy.PHRASE}) "
                         "RETURN count(r) AS n").value(0))


def test_lookalike_names_stay_sparse_and_ppr_answers(store: Any, embedder: Any,
                                                     tmp_path: Path) -> None:
    if store.dialect.NAME == "falkordb":
        udf.install(store)
    _load(store, embedder, tmp_path, [*CORPUS, _court(LOOKALIKES[:1000])])
    report = build_graph(store, embedder)
    phrases = len(store.run(cy.phrase_names()).records())
    assert phrases >= 1000
    # unbounded: 499,500 edges among the look-alikes alone; bounded: at most 16 per phrase
    assert 1000 <= report.synonyms <= SYNONYM_NEIGHBOURS * phrases
    assert _synonym_count(store) == report.synonyms
    evidence = PprSolver().retrieve(store, embedder, QUESTION,
                                    PprOptions(seed_passages=4, sentences=2))
    assert {d.id for d in evidence.documents[:3]} >= {"snow", "tennessee"}
    one = PprSolver().retrieve(store, embedder, f"Did {LOOKALIKES[417]} attend the court?",
                               PprOptions(seed_passages=4, sentences=2))
    assert one.documents[0].id == "court"
    # an update that removes 400 names and adds 100 more: equal to a fresh build, edge for
    # edge (the nearest names of the kept ones change on both sides of it)
    _load(store, embedder, tmp_path, [*CORPUS, _court(LOOKALIKES[400:1100])])
    update = build_graph(store, embedder)
    assert update.mode == "incremental" and update.phrases_removed >= 400
    incremental = _state(store)
    _same_projection(store, TITLE_WEIGHT)
    assert build_graph(store, embedder, full=True).mode == "full"
    assert _state(store) == incremental
    evidence = PprSolver().retrieve(store, embedder, QUESTION,
                                    PprOptions(seed_passages=4, sentences=2))
    assert {d.id for d in evidence.documents[:3]} >= {"snow", "tennessee"}


def test_udf_takes_a_block_of_many_edges(falkordb_store: Any) -> None:
    """A block's edges are not bounded by the 50,000 items of other lists (one chunk naming
    thousands of phrases, or a phrase with thousands of synonyms)."""
    udf.install(falkordb_store)
    n, fan = 64, 60_000
    adj = [1 + i % (n - 1) for i in range(fan)] + [0] * (n - 1)
    offsets = [0, fan, *range(fan + 1, fan + n)]
    prob = [1.0 / fan] * fan + [1.0] * (n - 1)
    block = ["v1", list(range(100, 100 + n)), [1] * n, offsets, adj, prob]
    rows = falkordb_store.run(
        "UNWIND kgdb.pprStored('hostile-block', ['v1'], [$block], [100], [1.0], 0.5, 1e-9, 3, "
        "[], []) AS r RETURN r.node AS node, r.score AS score", {"block": block}).records()
    assert rows[0]["node"] == 100 and len(rows) == 3


# Each question needs two documents: the person's (naming the city) and the city's.
PEOPLE = [
    ("Łukasz Żebrowski", "Lukasz Zebrowski", "Łódź", "Lodz", "Ner"),
    ("Čeněk Šťastný", "Cenek Stastny", "České Budějovice", "Ceske Budejovice", "Vltava"),
    ("İlkay Şahinoğlu", "Ilkay Sahinoglu", "Şanlıurfa", "Sanliurfa", "Karakoyun"),
    ("Jānis Bērziņš", "Janis Berzins", "Ķekava", "Kekava", "Daugava"),
    ("Žygimantas Čiurlys", "Zygimantas Ciurlys", "Šiauliai", "Siauliai", "Kulpė"),
    ("Αλέξανδρος Παπαδόπουλος", "Alexandros Papadopoulos", "Θεσσαλονίκη", "Thessaloniki",
     "Axios"),
    ("Дмитрий Соколов", "Dmitry Sokolov", "Новосибирск", "Novosibirsk", "Ob"),
    ("Ģirts Ļaviņš", "Girts Lavins", "Ludza", "Ludza", "Ludzas"),
]


def _scripts_corpus(native: bool) -> tuple[list[dict[str, str]], list[tuple[str, set[str]]]]:
    records, questions = [], []
    for i, (person, person_t, city, city_t, river) in enumerate(PEOPLE):
        p, c = (person, city) if native else (person_t, city_t)
        records.append({"id": f"person{i}", "title": p,
                        "text": f"{p} was a painter. {p} was born in {c} and worked there."})
        records.append({"id": f"city{i}", "title": c,
                        "text": f"{c} is a town on a river. The {river} flows through {c}."})
        questions.append((f"Which river flows through the town where {p} was born?",
                          {f"person{i}", f"city{i}"}))
    return records, questions


def _recall_at_2(store: Any, embedder: Any, questions: list[tuple[str, set[str]]]) -> float:
    total = 0.0
    for question, gold in questions:
        evidence = PprSolver().retrieve(store, embedder, question,
                                        PprOptions(seed_passages=4, sentences=2))
        total += len({d.id for d in evidence.documents[:2]} & gold) / len(gold)
    return total / len(questions)


def test_names_in_any_script_recall_as_transliterated(store: Any, embedder: Any,
                                                      tmp_path: Path) -> None:
    if store.dialect.NAME == "falkordb":
        udf.install(store)
    from kgdb.documents.pipeline import delete_documents

    recall = {}
    for native in (False, True):
        records, questions = _scripts_corpus(native)
        if native:  # the transliterated corpus goes first
            delete_documents(store, [r["id"] for r in records])
        _load(store, embedder, tmp_path, records)
        build_graph(store, embedder, full=True)
        names = {str(r["id"]) for r in store.run(cy.phrase_names()).records()}
        assert {r["title"].casefold() for r in records} <= names
        recall[native] = _recall_at_2(store, embedder, questions)
    assert recall[True] == recall[False], recall
    assert recall[True] >= 0.9, recall
