"""The MetaQA acceptance numbers: exact counts after one load and after a second load."""

from __future__ import annotations

import pytest

from kgdb.load.triples import load_triples
from tests.conftest import shared_data

pytestmark = [pytest.mark.live, pytest.mark.slow]

PREDICATES = {"directed_by", "written_by", "starred_actors", "release_year", "in_language",
              "has_tags", "has_genre", "has_imdb_votes", "has_imdb_rating"}


def counts(store) -> dict:
    return {
        "entities": store.run("MATCH (n:Entity) RETURN count(n)").value(),
        "facts": store.run("MATCH (:Entity)-[r]->(:Entity) RETURN count(r)").value(),
        "types": {r["t"] for r in store.run(
            "MATCH (:Entity)-[r]->(:Entity) RETURN DISTINCT type(r) AS t").records()},
        "relation_types": store.run("MATCH (t:RelationType) RETURN count(t)").value(),
    }


def test_metaqa_counts_after_one_and_two_loads(metaqa_store, embedder) -> None:
    first = counts(metaqa_store)
    assert first == {"entities": 43234, "facts": 133582, "types": PREDICATES,
                     "relation_types": 9}
    report = load_triples(metaqa_store, embedder, shared_data("metaqa", "kb.txt"), sep="|",
                          progress=False)
    assert report.triples == 133582 and report.entities_written == 0
    assert counts(metaqa_store) == first


def test_metaqa_linking(metaqa_store, embedder) -> None:
    from kgdb.link import link_entities, link_relations

    found = link_entities(metaqa_store, embedder, ["Kismet", "marlene dietrich"], k=5)
    assert found["Kismet"][0].id == "Kismet"
    assert found["Kismet"][0].distance == pytest.approx(0.0, abs=1e-5)
    assert "Marlene Dietrich" in {c.id for c in found["marlene dietrich"]}
    rel = link_relations(metaqa_store, embedder, ["directed by", "actor"], k=3)
    assert rel["directed by"][0].id == "directed_by"
    assert len(rel["actor"]) == 3
