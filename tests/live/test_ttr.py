"""KG-CQR's triple text representations (``kgdb index triples``, ``--ttr`` of the loaders) on
both engines: every fact gets its verbalised text and embedding under its type's relationship
vector index, the search by meaning equals a numpy reference, re-runs write only what
changed, and gazetteer loads can give documents' title entities ``mentions`` facts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from kgdb.cli import cli
from kgdb.documents.pipeline import DocumentOptions, delete_documents, load_documents
from kgdb.documents.triple_index import index_triples
from kgdb.link.names import verbalise
from kgdb.retrieve.triple_context import nearest_facts
from kgdb.schema.apply import rebuild_vector_indexes
from kgdb.stored.triples import indexed_types

pytestmark = pytest.mark.live

TRIPLES = """\
Kismet|directed_by|William Dieterle
Kismet|starred_actors|Marlene Dietrich
Kismet|starred_actors|Ronald Colman
Kismet|release_year|1944
The Last Flight|directed_by|William Dieterle
The Last Flight|release_year|1931
Blonde Venus|starred_actors|Marlene Dietrich
Blonde Venus|directed_by|Josef von Sternberg
"""


def _facts(store: Any) -> dict[tuple[str, str, str], dict[str, Any]]:
    rows = store.run("MATCH (h:Entity)-[r]->(t:Entity) "
                     "RETURN h.id AS h, type(r) AS type, t.id AS t, h.name AS head, "
                     "t.name AS tail, r.ttr AS ttr, r.embedding AS embedding").records()
    return {(r["h"], r["type"], r["t"]): r for r in rows}


def _load(tmp_path: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    path = tmp_path / "movies.txt"
    path.write_text(TRIPLES, encoding="utf-8")
    result = CliRunner().invoke(cli, ["load", "triples", str(path), "--format", "tsv",
                                      "--sep", "|", "--ttr", "--no-progress", "--json", *extra])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.output)
    return out


def test_texts_embeddings_indexes_and_search(cli_store, embedder, tmp_path: Path) -> None:
    store = cli_store
    report = _load(tmp_path)
    assert report["ttr"]["written"] == 8 and report["ttr"]["unchanged"] == 0
    assert sorted(report["ttr"]["indexes_created"]) == ["directed_by", "release_year",
                                                         "starred_actors"]
    facts = _facts(store)
    assert len(facts) == 8
    for (_, rel_type, _), row in facts.items():
        assert row["ttr"] == verbalise(row["head"], rel_type, row["tail"])
        stored = np.asarray(row["embedding"], dtype=np.float64)
        assert np.allclose(stored, embedder.embed([row["ttr"]])[0], atol=1e-6)
    assert facts[("Kismet", "directed_by", "William Dieterle")]["ttr"] == \
        "Kismet directed by William Dieterle"
    assert indexed_types(store) == ["directed_by", "release_year", "starred_actors"]

    # the search by meaning equals numpy over every fact (cosine, ties by key)
    question = "Who directed Kismet?"
    q = embedder.embed([question])[0]
    ranked = sorted(facts, key=lambda key: (-float(np.dot(
        np.asarray(facts[key]["embedding"], dtype=np.float64), q)), key))
    for k in (1, 3, 8):
        got = nearest_facts(store, q, k)
        assert [f.key for f in got] == ranked[:k]
        for f in got:
            expected = float(np.dot(np.asarray(facts[f.key]["embedding"], dtype=np.float64), q))
            assert abs(f.score - expected) < 1e-5
    assert got[0].key == ("Kismet", "directed_by", "William Dieterle")
    assert nearest_facts(store, q, 5, types=["release_year"])[0].relation == "release_year"

    # unchanged: nothing written
    again = index_triples(store, embedder, progress=False)
    assert (again.written, again.unchanged, again.indexes_created) == (0, 8, [])


def test_renamed_entity_rewrites_only_its_facts(cli_store, embedder, tmp_path: Path) -> None:
    store = cli_store
    _load(tmp_path)
    store.run("MATCH (e:Entity {id: 'Kismet'}) SET e.name = 'Kismet (1944 film)'", write=True)
    report = index_triples(store, embedder, progress=False)
    assert report.written == 4 and report.unchanged == 4
    assert set(report.indexes_rebuilt) == {"directed_by", "release_year", "starred_actors"}
    q = embedder.embed(["Kismet (1944 film) directed by William Dieterle"])[0]
    got = nearest_facts(store, q, 8)
    assert len({f.key for f in got}) == len(got) == 8  # no stale entry repeats a fact
    assert got[0].text == "Kismet (1944 film) directed by William Dieterle"
    assert got[0].score > 0.999
    # a rebuild of every vector index keeps the relationship indexes relationship indexes
    rebuilt = rebuild_vector_indexes(store)
    assert "-[:directed_by]-(embedding)" in rebuilt
    assert indexed_types(store) == ["directed_by", "release_year", "starred_actors"]
    assert nearest_facts(store, q, 1)[0].text == got[0].text


def test_structural_relations_get_no_text(cli_store, embedder, tmp_path: Path) -> None:
    store = cli_store
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([
        {"title": "Kismet", "text": "Kismet is a 1944 film directed by William Dieterle."},
        {"title": "William Dieterle", "text": "William Dieterle directed Kismet in 1944."},
    ]), encoding="utf-8")
    load_documents(store, embedder, [corpus], options=DocumentOptions(
        extract="gazetteer", title_entity=True, mention_facts=True), progress=False)
    report = index_triples(store, embedder, progress=False)
    assert report.types == 1 and report.facts == 2  # the mentions facts only
    rows = store.run("MATCH ()-[r]->() WHERE r.ttr IS NOT NULL "
                     "RETURN type(r) AS type, r.ttr AS ttr ORDER BY ttr").records()
    assert rows == [{"type": "mentions", "ttr": "Kismet mentions William Dieterle"},
                    {"type": "mentions", "ttr": "William Dieterle mentions Kismet"}]


def test_mention_facts_follow_their_documents(cli_store, embedder, tmp_path: Path) -> None:
    store = cli_store
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([
        {"title": "Kismet", "text": "Kismet stars Marlene Dietrich. Directed by William Dieterle."},
        {"title": "William Dieterle", "text": "A German-born director."},
        {"title": "Marlene Dietrich", "text": "An actress; she starred in Kismet."},
    ]), encoding="utf-8")
    result = CliRunner().invoke(cli, ["load", "documents", str(corpus), "--extract",
                                      "gazetteer", "--title-entity", "--mention-facts", "--ttr",
                                      "--no-progress", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["facts"] == 3 and report["ttr"]["written"] == 3
    rows = store.run("MATCH (h)-[r:mentions]->(t) RETURN h.id AS h, t.id AS t, "
                     "r.chunks AS chunks, r.extracted AS extracted ORDER BY h, t").records()
    assert [(r["h"], r["t"]) for r in rows] == [
        ("Kismet", "Marlene Dietrich"), ("Kismet", "William Dieterle"),
        ("Marlene Dietrich", "Kismet")]
    assert all(r["extracted"] and r["chunks"] for r in rows)
    delete_documents(store, ["Kismet"])
    left = store.run("MATCH (h)-[r:mentions]->(t) RETURN h.id AS h, t.id AS t").records()
    assert left == [{"h": "Marlene Dietrich", "t": "Kismet"}]

    bad = CliRunner().invoke(cli, ["load", "documents", str(corpus), "--mention-facts",
                                   "--no-progress"])
    assert bad.exit_code == 1
    assert "--mention-facts needs --extract gazetteer and --title-entity" in bad.output


@pytest.mark.parametrize("rel_type, words", [
    ("directed_by", "directed by"), ("directedBy", "directed by"),
    ("DIRECTED_BY", "directed by"), ("has_imdb_rating", "has imdb rating"),
    ("mentions", "mentions"), ("isPartOf", "is part of")])
def test_relation_words(rel_type: str, words: str) -> None:
    assert verbalise("A", rel_type, "B") == f"A {words} B"


def test_eval_beam_on_metaqa_style_questions(cli_store, tmp_path: Path) -> None:
    """``kgdb eval beam``: from the topic entity, the ends of paths as long as the question's
    hops, scored by the question against the triple texts."""
    _load(tmp_path)
    questions = tmp_path / "dev_2hop.tsv"
    questions.write_text(
        "who directed the films starring [Marlene Dietrich]\t"
        "William Dieterle|Josef von Sternberg\tactor_to_movie_to_director\n"
        "which year were the films directed by [Josef von Sternberg] released\t"
        "1932\tdirector_to_movie_to_year\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["eval", "beam", "--questions", str(questions),
                                      "--k", "1,3", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    row = report["hops"]["2-hop"]
    assert row["questions"] == 2 and row["hits@3"] == 0.5  # no 1932 release year is stored
    assert row["hits@1"] <= row["hits@3"] and row["latency_ms"]["p50"] > 0
    assert report["hops"]["2-hop"]["misses"][0]["line"] == 2
    bad = CliRunner().invoke(cli, ["eval", "beam", "--questions", str(questions), "--k", "x"])
    assert bad.exit_code == 2 and "not a list of integers" in bad.output


def test_unknown_or_hostile_type_is_one_line(cli_store, tmp_path: Path) -> None:
    _load(tmp_path)
    for name in ("directed_bye", "x`]->() DELETE n //"):
        result = CliRunner().invoke(cli, ["index", "triples", "--type", name])
        assert result.exit_code == 1, result.output
        assert f"no fact of relation type {name!r}" in result.output
        assert "Traceback" not in result.output
    assert "did you mean 'directed_by'" in CliRunner().invoke(
        cli, ["index", "triples", "--type", "directed_bye"]).output
    assert cli_store.run("MATCH ()-[r]->() RETURN count(r)").value() == 8
