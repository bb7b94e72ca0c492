"""Documents against a hostile or careless model and random edits (issue 24):

- deletion is exact: random loads, updates and deletes of documents extracted by the real
  LLM extractor (the scripted OpenAI server answers each chunk with the extraction the chunk
  spells out) over a triples base end in the graph a fresh build of the remaining documents
  gives: concepts, ``belongTo`` and ``isA`` edges, descriptions, synonyms, facts, entities;
- one bad model item (a relation or role named with a backtick, over 256 characters, or as
  one of kgdb's structural types) is dropped with a warning naming the chunk, never fatal,
  also when the reply comes from the extraction cache.
"""

from __future__ import annotations

import itertools
import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest

from kgdb.documents.extract_llm import DROP_RELATION_NAME, LlmExtractor
from kgdb.documents.pipeline import DocumentOptions, delete_documents, load_documents
from kgdb.load.triples import load_triples
from tests.live.test_hostile_surfaces import hostile_figures  # noqa: F401 (prints the tally)
from tests.support.hostile import TALLY

pytestmark = pytest.mark.live

BASE = ["Alpha Film|directed_by|Gamma Person", "Beta Film|located_in|Epsilon Place"]
POOL = {"Alpha Film": "film", "Beta Film": "drama film", "Gamma Person": "person",
        "Delta Person": "film director", "Epsilon Place": "place", "Zeta Thing": "thing",
        "Eta Film": "drama film"}
"""Names (the triples base has the first ones) and their semantic types: each name keeps one
spelling as its first mention and one semantic type, so a build's choices do not depend on
the order of the documents."""
RELATIONS = ["directed_by", "starred_actors", "located_in"]


def _reply(body: dict[str, Any]) -> str:
    """The scripted model: the chunk is the extraction it asks for."""
    return body["messages"][-1]["content"].split("Chunk:\n", 1)[1]


def _document(rng: random.Random, version: int) -> str:
    names = rng.sample(sorted(POOL), rng.randint(1, 4))
    entities: list[dict[str, Any]] = []
    for name in names:
        entity: dict[str, Any] = {"name": name}
        if rng.random() < 0.6:
            entity["description"] = f"{name} as told in version {version}"
        if rng.random() < 0.7:
            entity["semantic_type"] = POOL[name]
        entities.append(entity)
        if rng.random() < 0.4:  # another spelling: a synonym
            entities.append({"name": name.upper()})
    relations = [[a, rng.choice(RELATIONS), b] for a, b in itertools.pairwise(names)
                 if rng.random() < 0.7]
    if rng.random() < 0.3:  # a bad item: dropped, never fatal
        relations.append([names[0], rng.choice(["a`b", "belongTo", "r" * 300]), "Zeta Thing"])
    return json.dumps({"entities": entities, "relations": relations})


def _state(store: Any) -> dict[str, Any]:
    """What extraction decides, by id (embeddings and load markers aside)."""
    entities = {r["id"]: (r["d"], sorted(r["s"] or []))
                for r in store.run("MATCH (e:Entity) RETURN e.id AS id, e.description AS d, "
                                   "e.synonyms AS s").records()}
    facts = sorted((r["h"], r["r"], r["t"], sorted(r["c"] or []))
                   for r in store.run("MATCH (h:Entity)-[r]->(t:Entity) RETURN h.id AS h, "
                                      "type(r) AS r, t.id AS t, r.chunks AS c").records())
    belongs = sorted((r["e"], r["c"]) for r in store.run(
        "MATCH (e:Entity)-[:belongTo]->(c:Concept) RETURN e.id AS e, c.id AS c").records())
    concepts = sorted(str(r["c"]) for r in store.run(
        "MATCH (c:Concept) RETURN c.id AS c").records())
    broader = sorted((r["a"], r["b"]) for r in store.run(
        "MATCH (a:Concept)-[:isA]->(b:Concept) RETURN a.id AS a, b.id AS b").records())
    return {"entities": entities, "facts": facts, "belongTo": belongs, "concepts": concepts,
            "isA": broader}


def _build(store: Any, embedder: Any, tmp_path: Path) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_text("".join(f"{r}\n" for r in BASE), encoding="utf-8")
    load_triples(store, embedder, kb, sep="|", progress=False)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_deletion_is_exact_against_a_fresh_build(store: Any, embedder: Any, tmp_path: Path,
                                                 scripted_llm: Any, seed: int) -> None:
    scripted_llm.default = _reply
    rng = random.Random(seed)
    options = DocumentOptions(extract="llm")
    docs = tmp_path / "docs"
    docs.mkdir()
    _build(store, embedder, tmp_path)
    live: dict[str, str] = {}  # document id -> text, in the order last written
    for step in range(8):
        action = rng.choice(["load", "load", "update", "delete"]) if live else "load"
        if action == "delete":
            doc = rng.choice(sorted(live))
            delete_documents(store, [doc])
            del live[doc]
            continue
        doc = f"d{step}" if action == "load" else rng.choice(sorted(live))
        text = _document(rng, step)
        (docs / f"{doc}.txt").write_text(text, encoding="utf-8")
        load_documents(store, embedder, [docs / f"{doc}.txt"], options=options,
                       extractor=LlmExtractor(cache=False), progress=False)
        live.pop(doc, None)
        live[doc] = text
    after_edits = _state(store)
    # a fresh build of what remains: the base, then the documents in the order written
    store.reset()
    _build(store, embedder, tmp_path)
    for doc in live:
        load_documents(store, embedder, [docs / f"{doc}.txt"], options=options,
                       extractor=LlmExtractor(cache=False), progress=False)
    fresh = _state(store)
    differences = [key for key in fresh if fresh[key] != after_edits[key]]
    TALLY.add(f"documents: delete/update vs fresh build [{store.dialect.NAME}]",
              verbatim=len(fresh) - len(differences), failures=len(differences))
    assert not differences, {k: (after_edits[k], fresh[k]) for k in differences}


def test_bad_model_items_are_dropped_not_fatal(store: Any, embedder: Any, tmp_path: Path,
                                               scripted_llm: Any,
                                               caplog: pytest.LogCaptureFixture) -> None:
    from kgdb.documents.llm_cache import ExtractionCache

    bad_names = ["a`b", "x" * 257, "belongTo", "supporting_chunks", "SIMILAR"]
    reply = {"entities": [{"name": "Kismet"}, {"name": "Marlene Dietrich"}],
             "relations": [["Kismet", "starred_actors", "Marlene Dietrich"],
                           *[["Kismet", name, "Marlene Dietrich"] for name in bad_names]],
             "events": [{"name": "Premiere", "arguments": {"place`x": "Kismet",
                                                           "venue": "Marlene Dietrich"}}]}
    doc = tmp_path / "premiere.txt"
    doc.write_text(json.dumps(reply), encoding="utf-8")
    scripted_llm.default = _reply
    cache = ExtractionCache(tmp_path / "extraction.sqlite")
    failures: list[str] = []
    for run in ("model", "cache"):  # the second run reads the reply from the cache
        requests = len(scripted_llm.requests)
        extractor = LlmExtractor(cache=cache)
        with caplog.at_level(logging.WARNING, logger="kgdb"):
            caplog.clear()
            report = load_documents(store, embedder, [doc], options=DocumentOptions(
                extract="llm", title_entity=run == "cache"), extractor=extractor,
                progress=False)
        if run == "cache" and len(scripted_llm.requests) != requests:
            failures.append("the cached reply was not used")
        if extractor.dropped[DROP_RELATION_NAME] != len(bad_names) + 1:
            failures.append(f"{run}: dropped {dict(extractor.dropped)}")
        if not any("premiere#" in r.getMessage() and DROP_RELATION_NAME in r.getMessage()
                   for r in caplog.records):
            failures.append(f"{run}: no warning naming the chunk")
        if not any(DROP_RELATION_NAME in note for note in report.notes):
            failures.append(f"{run}: the report does not say what was dropped")
    types = {r["t"] for r in store.run("MATCH (:Entity)-[r]->(:Entity) RETURN DISTINCT "
                                       "type(r) AS t").records()}
    if not {"starred_actors", "venue"} <= types or types & set(bad_names):
        failures.append(f"stored relation types {types}")
    TALLY.add(f"documents: bad model items [{store.dialect.NAME}]",
              rejected=len(bad_names) + 1 - len(failures), failures=len(failures))
    assert not failures, failures
