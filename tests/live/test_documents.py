"""Documents into the graph on both engines: readers and identity, chunks, the gazetteer's
mutual index, updates that replace, deletes that keep what other loads asserted, and a load
killed with SIGKILL that a second run finishes into the state of an uninterrupted load."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kgdb.cli import cli
from kgdb.documents.model import ExtractedEntity, ExtractedRelation, Extraction
from kgdb.documents.pipeline import DocumentOptions, delete_documents, load_documents
from kgdb.errors import LoadError
from kgdb.load.triples import load_triples
from kgdb.retrieve.entities import EntitiesOptions
from kgdb.retrieve.evidence import documents_of
from kgdb.retrieve.hybrid import HybridOptions
from kgdb.retrieve.registry import solver_named
from tests.conftest import engine_env, shared_data

pytestmark = pytest.mark.live
ROOT = Path(__file__).resolve().parents[2]

KISMET = """\
# Kismet

Kismet is a 1944 film directed by William Dieterle. It stars Marlene Dietrich.

## Production

The film was shot at MGM. William Dieterle had directed Juarez before; Juarezville is a town.

## Reception

Critics praised MARLENE DIETRICH's dance.
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def triples(store: Any, embedder: Any, tmp_path: Path, rows: list[str]) -> None:
    kb = write(tmp_path / "kb.txt", "".join(f"{r}\n" for r in rows))
    load_triples(store, embedder, kb, sep="|", progress=False)


def snapshot(store: Any) -> dict[str, Any]:
    """Every node and relationship without embeddings, sorted: two loads compare equal."""
    nodes = store.run("MATCH (n) RETURN labels(n) AS labels, properties(n) AS props").records()
    rels = store.run("MATCH (a)-[r]->(b) RETURN type(r) AS type, coalesce(a.id, a.key) AS a, "
                     "coalesce(b.id, b.key) AS b, properties(r) AS props").records()

    def clean(props: dict[str, Any]) -> dict[str, Any]:
        return {k: (sorted(v) if k == "chunks" and isinstance(v, list) else v)
                for k, v in props.items()
                if k != "embedding"}

    return {"nodes": sorted(json.dumps([sorted(r["labels"]), clean(r["props"])], sort_keys=True,
                                       default=str) for r in nodes),
            "rels": sorted(json.dumps([r["type"], r["a"], r["b"], clean(r["props"])],
                                      sort_keys=True, default=str) for r in rels)}


def mentions(store: Any) -> list[tuple[str, str]]:
    rows = store.run("MATCH (e:Entity)-[:supporting_chunks]->(c:Chunk) "
                     "RETURN e.id AS e, c.id AS c ORDER BY c, e").records()
    return [(r["e"], r["c"]) for r in rows]


def test_markdown_chunks_gazetteer_update_and_delete(store, embedder, tmp_path: Path) -> None:
    triples(store, embedder, tmp_path, ["Kismet|directed_by|William Dieterle",
                                        "Kismet|starred_actors|Marlene Dietrich",
                                        "Juarez|directed_by|William Dieterle"])
    doc = write(tmp_path / "kismet.md", KISMET)
    options = DocumentOptions(extract="gazetteer")
    report = load_documents(store, embedder, [doc], options=options, progress=False)
    assert (report.documents, report.written, report.chunks) == (1, 1, 3)
    chunks = store.run("MATCH (d:Document {id: 'kismet'})-[h:hasChunk]->(c:Chunk) "
                       "RETURN c.id AS id, c.headings AS headings, h.position AS position "
                       "ORDER BY position").records()
    assert [c["id"] for c in chunks] == ["kismet#0000#000", "kismet#0001#000", "kismet#0002#000"]
    assert chunks[1]["headings"] == ["Kismet", "Production"]
    assert store.run("MATCH (d:Document) RETURN d.title").value() == "Kismet"
    # word boundaries (Juarezville is not Juarez) and case (MARLENE DIETRICH is not matched)
    assert mentions(store) == [
        ("Kismet", "kismet#0000#000"), ("Marlene Dietrich", "kismet#0000#000"),
        ("William Dieterle", "kismet#0000#000"), ("Juarez", "kismet#0001#000"),
        ("William Dieterle", "kismet#0001#000")]
    before = snapshot(store)
    # unchanged: nothing is written
    again = load_documents(store, embedder, [doc], options=options, progress=False)
    assert (again.unchanged, again.written, again.chunks) == (1, 0, 0)
    assert snapshot(store) == before
    # ignoring case is an option, and a change of options reloads the document
    report = load_documents(store, embedder, [doc], options=DocumentOptions(
        extract="gazetteer", ignore_case=True), progress=False)
    assert report.written == 1
    assert ("Marlene Dietrich", "kismet#0002#000") in mentions(store)
    # a changed document replaces its chunks
    write(doc, KISMET.replace("## Reception\n\nCritics praised MARLENE DIETRICH's dance.\n", ""))
    load_documents(store, embedder, [doc], options=options, progress=False)
    assert store.run("MATCH (c:Chunk) RETURN count(c)").value() == 2
    assert store.run("MATCH ()-[r:supporting_chunks]->() RETURN count(r)").value() == 5
    # delete: the document goes, the entities the triples load made stay
    delete_documents(store, ["kismet"])
    assert store.run("MATCH (n) WHERE n:Document OR n:Chunk RETURN count(n)").value() == 0
    assert store.run("MATCH (e:Entity) RETURN count(e)").value() == 4
    assert store.run("MATCH ()-[r:directed_by]->() RETURN count(r)").value() == 2
    with pytest.raises(LoadError, match="no document with id 'kismet'"):
        delete_documents(store, ["kismet"])


def test_corpus_records_sharing_a_title_are_one_document(store, embedder,
                                                         tmp_path: Path) -> None:
    first = "Kismet is a 1944 American film in Technicolor, made by Metro-Goldwyn-Mayer."
    second = "It was directed by William Dieterle and stars Marlene Dietrich as Jamilla."
    corpus = write(tmp_path / "corpus.json", json.dumps([
        {"title": "Kismet", "text": first},
        {"title": "Juarez", "text": "Juarez is a 1939 film."},
        {"title": "Kismet", "text": second}]))
    report = load_documents(store, embedder, [corpus],
                            options=DocumentOptions(title_entity=True, chunk_size=100),
                            progress=False)
    assert (report.documents, report.chunks) == (2, 3)
    rows = store.run("MATCH (c:Chunk {document: 'Kismet'}) RETURN c.id AS id, c.text AS text "
                     "ORDER BY id").records()
    assert rows == [{"id": "Kismet#0000#000", "text": first},
                    {"id": "Kismet#0001#000", "text": second}]
    # the title entity is supported by every chunk of its document
    assert store.run("MATCH (:Entity {id: 'Kismet'})-[:supporting_chunks]->(c) "
                     "RETURN count(c)").value() == 2
    # paragraphs that fit together within the size share a chunk
    load_documents(store, embedder, [corpus], options=DocumentOptions(
        title_entity=True, chunk_size=200), progress=False)
    assert store.run("MATCH (c:Chunk {document: 'Kismet'}) RETURN c.text").value() == \
        f"{first}\n\n{second}"
    delete_documents(store, ["Kismet", "Juarez"])
    assert store.run("MATCH (n) WHERE n:Entity OR n:Chunk OR n:Document "
                     "RETURN count(n)").value() == 0


class Scripted:
    """An extractor that returns fixed extractions by chunk text (the LLM extractor's place)."""

    name = "scripted"
    fingerprint = "scripted-v1"

    def __init__(self, by_text: dict[str, Extraction]) -> None:
        from kgdb.documents.model import ExtractionStats

        self.by_text = by_text
        self.stats = ExtractionStats()

    def extract(self, chunks):  # type: ignore[no-untyped-def]
        for c in chunks:  # every scripted paragraph the chunk contains
            found = [x for text, x in self.by_text.items() if text in c.text]
            yield Extraction(c.id, tuple(e for x in found for e in x.entities),
                             tuple(r for x in found for r in x.relations))


def test_extracted_facts_alignment_and_provenance(store, embedder, tmp_path: Path) -> None:
    triples(store, embedder, tmp_path, ["Juarez|directed_by|William Dieterle"])
    a = write(tmp_path / "a.txt", "Kismet was directed by William Dieterle.")
    b = write(tmp_path / "b.txt", "kismet stars Marlene Dietrich.\n\nJuarez was directed by "
                                  "William Dieterle.")
    extractor = Scripted({
        "Kismet was directed by William Dieterle.": Extraction("", (
            ExtractedEntity("Kismet", "Movie", "a 1944 film", "film"),
            ExtractedEntity("william dieterle", "Person")),
            (ExtractedRelation("Kismet", "directed_by", "william dieterle"),)),
        "kismet stars Marlene Dietrich.": Extraction("", (
            ExtractedEntity("kismet", "Movie"), ExtractedEntity("Marlene Dietrich", "Person")),
            (ExtractedRelation("kismet", "starred_actors", "Marlene Dietrich"),)),
        "Juarez was directed by William Dieterle.": Extraction("", (
            ExtractedEntity("Juarez"), ExtractedEntity("William Dieterle")),
            (ExtractedRelation("Juarez", "directed_by", "William Dieterle"),)),
    })
    options = DocumentOptions(extract="llm", chunk_size=100)
    report = load_documents(store, embedder, [a, b], options=options, extractor=extractor,
                            progress=False)
    # "kismet" and "Kismet" are one new entity; "william dieterle" is the graph's entity
    assert report.entities_created == 2  # Kismet, Marlene Dietrich
    kismet = store.run("MATCH (e:Entity {id: 'Kismet'}) RETURN e.extracted AS x, "
                       "e.synonyms AS s, e.description AS d").records()[0]
    assert kismet == {"x": True, "s": ["kismet"], "d": "a 1944 film"}
    assert store.run("MATCH (:Entity {id: 'Kismet'})-[:belongTo]->(c:Concept) "
                     "RETURN c.id").value() == "SemanticType/film"
    facts = store.run("MATCH (h)-[r]->(t:Entity) WHERE r.chunks IS NOT NULL OR type(r) = "
                      "'directed_by' RETURN h.id AS h, type(r) AS r, t.id AS t, "
                      "r.chunks AS chunks, r.extracted AS x ORDER BY h, r").records()
    assert facts == [
        {"h": "Juarez", "r": "directed_by", "t": "William Dieterle", "chunks": ["b#0000#000"],
         "x": None},  # asserted by the triples load first: not extracted
        {"h": "Kismet", "r": "directed_by", "t": "William Dieterle", "chunks": ["a#0000#000"],
         "x": True},
        {"h": "Kismet", "r": "starred_actors", "t": "Marlene Dietrich",
         "chunks": ["b#0000#000"], "x": True}]
    # a triples load that meets an extracted fact asserts it: deleting a keeps it
    triples(store, embedder, tmp_path, ["Kismet|directed_by|William Dieterle"])
    delete_documents(store, ["a"])
    assert store.run("MATCH (:Entity {id: 'Kismet'})-[r:directed_by]->() "
                     "RETURN r.asserted").value() is True
    # deleting b removes what only b supported; what triples asserted stays
    delete_documents(store, ["b"])
    left = store.run("MATCH (h:Entity)-[r]->(t:Entity) RETURN h.id + ' ' + type(r) + ' ' + "
                     "t.id AS f ORDER BY f").records()
    assert [r["f"] for r in left] == ["Juarez directed_by William Dieterle",
                                     "Kismet directed_by William Dieterle"]
    assert store.run("MATCH (e:Entity {id: 'Marlene Dietrich'}) RETURN count(e)").value() == 0
    assert store.run("MATCH (e:Entity {id: 'Kismet'}) RETURN count(e)").value() == 1
    # what only the documents said goes with them, though Kismet (asserted by triples) stays:
    # its semantic type, the belongTo edge, the description and the synonym (issue 24)
    assert store.run("MATCH (c:Concept) RETURN count(c)").value() == 0
    assert store.run("MATCH ()-[b:belongTo]->() RETURN count(b)").value() == 0
    kismet = store.run("MATCH (e:Entity {id: 'Kismet'}) RETURN e.description AS d, "
                       "e.synonyms AS s").records()[0]
    assert kismet["d"] is None and not kismet["s"]


def load_and_kill(store: Any, env: dict[str, str], args: list[str], *, after: int) -> None:
    """Run ``kgdb load documents ARGS`` in a subprocess and SIGKILL it once ``after`` documents
    are complete (their hash is set)."""
    proc = subprocess.Popen([sys.executable, "-m", "kgdb", "load", "documents", *args,
                             "--no-progress"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if store.run("MATCH (d:Document) WHERE d.hash IS NOT NULL "
                         "RETURN count(d)").value() >= after:
                break
            time.sleep(0.05)
        assert proc.poll() is None, ("the load finished before it could be killed: "
                                     + (proc.stderr.read() if proc.stderr else b"").decode()[-2000:])
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)


def test_killed_load_finishes_into_the_uninterrupted_state(store, embedder,
                                                           tmp_path: Path) -> None:
    triples(store, embedder, tmp_path, [f"Film {i}|directed_by|Director {i % 7}"
                                        for i in range(40)])
    corpus = write(tmp_path / "corpus.jsonl", "".join(
        json.dumps({"title": f"Doc {i}", "text": f"Film {i} was directed by Director {i % 7}. "
                    f"It is not Film {i + 1000}."}) + "\n" for i in range(40)))
    options = DocumentOptions(extract="gazetteer", title_entity=True, batch=1)
    load_documents(store, embedder, [corpus], options=options, progress=False)
    expected = snapshot(store)
    delete_documents(store, [f"Doc {i}" for i in range(40)])
    load_and_kill(store, {**os.environ, **engine_env(store)}, [
        str(corpus), "--extract", "gazetteer", "--title-entity", "--batch", "1"], after=3)
    partial = store.run("MATCH (d:Document) WHERE d.hash IS NOT NULL RETURN count(d)").value()
    assert 3 <= partial < 40
    report = load_documents(store, embedder, [corpus], options=options, progress=False)
    assert report.unchanged >= partial and report.written == 40 - report.unchanged
    assert snapshot(store) == expected


@pytest.mark.parametrize("content, message", [
    ("[1, 2]", "record 1: a record must be an object"),
    ('[{"title": "x", "text": "y", "url": "z"}]', "unknown field 'url'"),
    ('[{"title": "", "text": "y"}]', "needs a non-empty title"),
    ('[{"id": "a#b", "title": "t", "text": "y"}]', "contains '#'"),
    ('{"title": "x"}', "must be a JSON list"),
    ("[{", "corpus.json:1: not JSON"),
])
def test_bad_corpora_are_one_line_errors(cli_store, tmp_path: Path, content: str,
                                         message: str) -> None:
    corpus = write(tmp_path / "corpus.json", content)
    result = CliRunner().invoke(cli, ["load", "documents", str(corpus), "--no-progress"])
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert cli_store.run("MATCH (n) WHERE n:Document OR n:Chunk RETURN count(n)").value() == 0


def test_collisions_and_formats_are_errors(cli_store, tmp_path: Path) -> None:
    write(tmp_path / "a.md", "# A\n\ntext")
    write(tmp_path / "a.txt", "text")
    result = CliRunner().invoke(cli, ["load", "documents", str(tmp_path / "a.md"),
                                      str(tmp_path / "a.txt"), "--no-progress"])
    assert result.exit_code == 1 and "document id 'a' is also the id of" in result.output
    write(tmp_path / "b.doc", "%PDF")
    result = CliRunner().invoke(cli, ["load", "documents", str(tmp_path / "b.doc")])
    assert result.exit_code == 1 and "unknown document format '.doc'" in result.output
    result = CliRunner().invoke(cli, ["delete", "document", "nope"])
    assert result.exit_code == 1 and "no document with id 'nope'" in result.output


def test_musique_corpus_loads(store, embedder) -> None:
    corpus = shared_data("musique-100", "corpus.json")
    report = load_documents(store, embedder, [corpus], options=DocumentOptions(
        title_entity=True), progress=False)
    titles = {r["title"] for r in json.loads(corpus.read_text(encoding="utf-8"))}
    assert report.documents == len(titles) and report.chunks >= 1890
    assert store.run("MATCH (c:Chunk) RETURN count(c)").value() == report.chunks
    again = load_documents(store, embedder, [corpus], options=DocumentOptions(
        title_entity=True), progress=False)
    assert again.written == 0


def test_llm_extraction_end_to_end(cli_store, embedder, scripted_llm, tmp_path: Path) -> None:
    """`kgdb load documents --extract llm` through the OpenAI-compatible API: the schema's types
    constrain the prompt, a model's messy reply is parsed, facts are written with their chunks,
    and a reload after a delete pays nothing (the replies are cached)."""
    store = cli_store
    schema = write(tmp_path / "films.schema", "Movie(Film): EntityType\n"
                   "    relations:\n        directed_by(directed by): Person\n"
                   "Person(Person): EntityType\n")
    assert CliRunner().invoke(cli, ["schema", "apply", str(schema)]).exit_code == 0

    def reply(body: dict[str, Any]) -> str:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        assert "Movie" in system and "directed_by" in system  # the schema constrains
        if "Kismet" in user:
            return ("Sure! Here is the JSON:\n```json\n{\"entities\": [{\"name\": \"Kismet\", "
                    "\"type\": \"movie\", \"semantic_type\": \"film\"}, {\"name\": \"William "
                    "Dieterle\", \"type\": \"Person\"}, {\"name\": \"MGM\", \"type\": "
                    "\"Studio\"},], \"relations\": [{\"head\": \"Kismet\", \"relation\": "
                    "\"Directed By\", \"tail\": \"William Dieterle\"}]}\n```")
        return '{"entities": [], "relations": []}'

    scripted_llm.default = reply
    # a text of its own: the reply cache (in KGDB_HOME) has never seen it
    doc = write(tmp_path / "kismet.txt", "Kismet is a 1944 MGM film directed by William "
                                         f"Dieterle. (run {uuid.uuid4().hex})")
    result = CliRunner().invoke(cli, ["load", "documents", str(doc), "--extract", "llm",
                                      "--no-progress", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["facts"] == 1 and report["extraction"]["requests"] == 1
    fact = store.run("MATCH (h:Entity)-[r:directed_by]->(t:Entity) RETURN h.id AS h, t.id AS t, "
                     "r.chunks AS chunks, labels(h) AS labels").records()
    assert fact == [{"h": "Kismet", "t": "William Dieterle", "chunks": ["kismet#0000#000"],
                     "labels": ["Entity", "Movie"]}]
    assert store.run("MATCH (e:Entity {id: 'MGM'}) RETURN count(e)").value() == 0  # undeclared
    assert CliRunner().invoke(cli, ["delete", "document", "kismet"]).exit_code == 0
    assert store.run("MATCH (e:Entity) RETURN count(e)").value() == 0
    assert store.run("MATCH (c:Concept) WHERE c.extracted RETURN count(c)").value() == 0
    before = len(scripted_llm.requests)
    result = CliRunner().invoke(cli, ["load", "documents", str(doc), "--extract", "llm",
                                      "--no-progress", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["extraction"]["cached"] == 1
    assert len(scripted_llm.requests) == before
    assert store.run("MATCH ()-[r:directed_by]->() RETURN count(r)").value() == 1


def test_dry_run_writes_nothing_and_counts(cli_store, tmp_path: Path) -> None:
    doc = write(tmp_path / "kismet.md", KISMET)
    result = CliRunner().invoke(cli, ["load", "documents", str(doc), "--dry-run", "--json",
                                      "--no-progress"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["dry_run"] and (report["written"], report["chunks"]) == (1, 3)
    assert cli_store.run("MATCH (n) RETURN count(n)").value() == 0


def test_eval_retrieval_modes(cli_store, embedder, tmp_path: Path) -> None:
    corpus = write(tmp_path / "corpus.json", json.dumps([
        {"title": "Kismet", "text": "Kismet is a 1944 film directed by William Dieterle."},
        {"title": "William Dieterle", "text": "William Dieterle was a German-born director."},
        {"title": "Paris", "text": "Paris is the capital of France."},
        {"title": "Volcano", "text": "A volcano is a rupture in the crust of a planet."}]))
    load_documents(cli_store, embedder, [corpus], options=DocumentOptions(
        extract="gazetteer", title_entity=True), progress=False)
    questions = write(tmp_path / "q.jsonl", "".join(json.dumps(q) + "\n" for q in [
        {"question": "Where was the director of Kismet born?",
         "supporting": ["Kismet", "William Dieterle"]},
        {"question": "What is the capital of France?", "supporting": ["Paris"]}]))
    result = CliRunner().invoke(cli, ["eval", "retrieval", "--questions", str(questions),
                                      "--k", "1,2", "--json"])
    assert result.exit_code == 0, result.output
    recall = json.loads(result.output)["recall"]
    assert set(recall) == {"vector", "entities", "hybrid"}
    assert recall["vector"]["recall@2"] == 1.0
    # the mutual index: the question names the title entity Kismet, which Kismet's chunk
    # supports (1 of 2 supporting documents); "France" names no entity (0 of 1)
    assert recall["entities"]["recall@2"] == 0.25
    assert recall["hybrid"]["recall@2"] == 1.0
    # hybrid's fusion by scores, on the same graph: a document scores its best chunk's cosine
    # plus 0.2 x its entity evidence, the sum of 1 / c(e) over the named entities it supports
    question = "Who directed Kismet, and where was William Dieterle born?"
    evidence = solver_named("hybrid").retrieve(cli_store, embedder, question, HybridOptions())
    assert evidence.detail["entities"] == [
        {"id": "Kismet", "name": "Kismet", "documents": 1},
        {"id": "William Dieterle", "name": "William Dieterle", "documents": 2}]
    cosine = {d.id: d.score for d in documents_of(evidence.passages)}
    bonus = {"Kismet": 0.2 * (1 + 1 / 2), "William Dieterle": 0.2 * (1 / 2)}
    expected = {d: s + bonus.get(d, 0.0) for d, s in cosine.items() if s is not None}
    assert {d.id: pytest.approx(d.score) for d in evidence.documents} == expected
    assert [d.id for d in evidence.documents][:2] == ["Kismet", "William Dieterle"]
    ranked = solver_named("entities").retrieve(cli_store, embedder, question, EntitiesOptions())
    assert [(d.id, d.score) for d in ranked.documents] == [
        ("Kismet", 1.5), ("William Dieterle", 0.5)]
    bad = write(tmp_path / "bad.jsonl", '{"question": "x"}\n')
    result = CliRunner().invoke(cli, ["eval", "retrieval", "--questions", str(bad)])
    assert result.exit_code == 1 and "bad.jsonl:1: a question is" in result.output


def test_musique_through_the_llm_resumes_without_paying_twice(
        cli_store, embedder, tmp_path: Path) -> None:
    """Real MuSiQue passages through --extract llm against the scripted endpoint (realistic,
    malformed, truncated, slow and 429 replies); a load killed with SIGKILL and run again asks
    for no chunk that was already answered, and ends with the uninterrupted state."""
    from tests.support.openai_server import ScriptedOpenAI

    store = cli_store
    records = json.loads(shared_data("musique-100", "corpus.json").read_text(encoding="utf-8"))
    records = [r for r in records if r["title"] != "" and len(r["text"]) < 1000][:24]
    corpus = write(tmp_path / "musique24.json", json.dumps(
        [{**r, "text": f"{r['text']} [{uuid.uuid4().hex[:8]}]"} for r in records]))
    answered: list[str] = []
    calls = {"n": 0}

    def reply(body: dict[str, Any]) -> Any:
        # the chunk is in the first user message; a retry adds the parse error after it
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        calls["n"] += 1
        if calls["n"] % 11 == 3:
            return {"status": 429}
        if calls["n"] % 13 == 5:
            return '{"entities": [{"name": "unfinished'  # truncated: shown back to the model
        if calls["n"] % 7 == 2:
            return "I cannot help with that."  # malformed
        record = next(r for r in records if r["text"][:60] in user)
        answered.append(record["title"])
        words = [w.strip(".,()") for w in record["text"].split() if w[:1].isupper()][:3]
        entities = [{"name": record["title"], "type": "Topic", "description": record["text"][:80],
                     "semantic_type": "topic"}] + [{"name": w, "type": None} for w in words
                                                   if len(w) > 2 and w != record["title"]]
        relations = [{"head": record["title"], "relation": "mentions", "tail": e["name"]}
                     for e in entities[1:]]
        return {"content": "```json\n" + json.dumps({"entities": entities,
                                                      "relations": relations}) + "\n```",
                "delay": 0.2}

    with ScriptedOpenAI(default=reply) as server:
        env = {**os.environ, **engine_env(store), "OPENAI_BASE_URL": server.base_url,
               "OPENAI_API_KEY": "k", "KGDB_LLM_MODEL": "scripted", "KGDB_LLM_RETRIES": "2"}
        load_and_kill(store, env, [str(corpus), "--extract", "llm", "--batch", "2"], after=4)
        first = list(answered)
        for name, value in env.items():
            if name.startswith(("OPENAI_", "KGDB_LLM")):
                os.environ[name] = value
        try:
            result = CliRunner().invoke(cli, ["load", "documents", str(corpus), "--extract",
                                              "llm", "--batch", "2", "--no-progress", "--json"])
        finally:
            for name in env:
                if name.startswith(("OPENAI_", "KGDB_LLM")):
                    os.environ.pop(name, None)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    second = answered[len(first):]
    assert not set(first) & set(second), "a chunk answered before the kill was asked again"
    assert sorted(first + second) == sorted(r["title"] for r in records)
    x = report["extraction"]
    # documents finished before the kill are skipped; chunks answered for an unfinished one
    # come from the reply cache; every other chunk is one request (plus retries)
    assert x["requests"] >= len(second) and x["tokens_in"] > 0 and x["failed_chunks"] == 0
    assert x["retries"] >= 1  # the 429s, the truncated and the malformed replies
    assert report["facts"] > 0
    assert store.run("MATCH (:Entity)-[:supporting_chunks]->(c:Chunk) "
                     "RETURN count(DISTINCT c)").value() == len(records)
    assert store.run("MATCH (c:Concept {id: 'SemanticType/topic'})<-[:belongTo]-(e) "
                     "RETURN count(e)").value() == len(records)


def test_kg_retriever_collaboration_modes(cli_store, embedder, tmp_path: Path) -> None:
    """KG-Retriever's document-level collaboration over `kgdb index knn`'s layer: seeds by the
    query, then SIMILAR neighbours (one-hop), weighted and thresholded (attentive, multi-hop)."""
    from kgdb.retrieve.document_graph import DocumentGraphOptions, collaboration

    corpus = write(tmp_path / "corpus.json", json.dumps([
        {"title": "Paris", "text": "Paris is the capital and largest city of France."},
        {"title": "Lyon", "text": "Lyon is the third-largest city of France."},
        {"title": "Marseille", "text": "Marseille is a port city in southern France."},
        {"title": "Volcano", "text": "A volcano is a rupture in the crust of a planet."},
        {"title": "Magma", "text": "Magma is molten rock beneath the surface of a planet."}]))
    load_documents(cli_store, embedder, [corpus], progress=False)
    result = CliRunner().invoke(cli, ["index", "knn", "--label", "Document", "--k", "2"])
    assert result.exit_code == 0, result.output
    vector = embedder.embed(["What is the capital of France?"])[0]

    def ranked(strategy: str, threshold: float = 0.1) -> list[str]:
        options = DocumentGraphOptions(strategy=strategy, seeds=1,  # type: ignore[arg-type]
                                       threshold=threshold)
        return [c.id for c in collaboration(cli_store, vector, options)]

    onehop = ranked("onehop")
    assert onehop[0] == "Paris" and set(onehop[1:]) == {"Lyon", "Marseille"}
    assert ranked("multihop")[0] == "Paris"
    assert ranked("attentive", 0.99) == ["Paris"]  # lambda admits none
    questions = write(tmp_path / "q.jsonl", json.dumps(
        {"question": "Which city is the capital of France?", "supporting": ["Paris"]}) + "\n")
    result = CliRunner().invoke(cli, ["eval", "retrieval", "--questions", str(questions),
                                      "--mode", "document-graph:facts=0,seeds=3",
                                      "--mode", "document-graph:facts=0,strategy=attentive",
                                      "--mode", "document-graph:facts=0,strategy=multihop",
                                      "--k", "1", "--json"])
    assert result.exit_code == 0, result.output
    recall = json.loads(result.output)["recall"]
    assert {m: r["recall@1"] for m, r in recall.items()} == {
        "document-graph:facts=0,seeds=3": 1.0, "document-graph:facts=0,strategy=attentive": 1.0,
        "document-graph:facts=0,strategy=multihop": 1.0}
