"""``--extract llm`` against the scripted OpenAI-compatible server: realistic and messy replies,
self-correction, failures, schema constraints, the reply cache, concurrency and 429s."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from kgdb.config import environment
from kgdb.documents.extract_llm import (
    DROP_DANGLING_RELATION,
    DROP_ENTITY_TYPE,
    DROP_EVENT_TYPE,
    DROP_RELATION_TYPE,
    LlmExtractor,
    parse_reply,
)
from kgdb.documents.llm_cache import ExtractionCache, default_cache_path
from kgdb.documents.model import (
    Chunk,
    ExtractedEntity,
    ExtractedEvent,
    ExtractedRelation,
    Extraction,
)
from kgdb.errors import ConfigError, KgdbError, LlmError

REALISTIC = """```json
{
  "entities": [
    {"name": "Jay Chou", "type": "Person", "description": "A Taiwanese singer and songwriter.",
     "semantic_type": "singer"},
    {"name": "Universal Music Group", "type": "Organization",
     "description": "The record company Jay Chou signed with.", "semantic_type": "record label"},
    {"name": "Taipei", "type": "Location", "description": "The city where Jay Chou was born.",
     "semantic_type": "city"}
  ],
  "relations": [
    {"head": "Jay Chou", "relation": "record company", "tail": "Universal Music Group"},
    {"head": "Jay Chou", "relation": "born in", "tail": "Taipei"}
  ],
  "events": [
    {"name": "Jay Chou's 2004 concert tour", "type": "Concert Tour",
     "arguments": {"performer": "Jay Chou", "place": "Taipei"},
     "description": "A concert tour that started in Taipei."}
  ]
}
```"""

TEXT = ("Jay Chou, born in Taipei, signed with Universal Music Group. His 2004 concert tour "
        "started in Taipei.")


@pytest.fixture(autouse=True)
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Every test gets its own KGDB_HOME (the reply cache lives there)."""
    monkeypatch.setenv("KGDB_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def chunk(n: int = 0, text: str = TEXT, headings: tuple[str, ...] = ()) -> Chunk:
    return Chunk(id=f"doc#{n:04d}#000", document_id="doc", position=n, text=text,
                 headings=headings)


def run(extractor: LlmExtractor, chunks: list[Chunk]) -> dict[str, Extraction]:
    out: dict[str, Extraction] = {}
    for extraction in extractor.extract(chunks):
        assert extraction.chunk_id not in out, "one extraction per chunk"
        out[extraction.chunk_id] = extraction
    return out


def only(extractor: LlmExtractor, one: Chunk | None = None) -> Extraction:
    one = one or chunk()
    results = run(extractor, [one])
    assert list(results) == [one.id]
    return results[one.id]


def user_message(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


# --- realistic reply ---------------------------------------------------------------------------

def test_realistic_reply_becomes_entities_relations_and_events(scripted_llm) -> None:
    scripted_llm.push(REALISTIC)
    extractor = LlmExtractor()
    got = only(extractor, chunk(headings=("Biography", "Early life")))
    assert got.entities == (
        ExtractedEntity("Jay Chou", "Person", "A Taiwanese singer and songwriter.", "singer"),
        ExtractedEntity("Universal Music Group", "Organization",
                        "The record company Jay Chou signed with.", "record label"),
        ExtractedEntity("Taipei", "Location", "The city where Jay Chou was born.", "city"),
    )
    assert got.relations == (
        ExtractedRelation("Jay Chou", "record company", "Universal Music Group"),
        ExtractedRelation("Jay Chou", "born in", "Taipei"),
    )
    assert got.events == (ExtractedEvent(
        "Jay Chou's 2004 concert tour", "Concert Tour",
        (("performer", "Jay Chou"), ("place", "Taipei")), "A concert tour that started in Taipei."),)
    assert extractor.stats.to_json() == {"requests": 1, "retries": 0, "cached": 0,
                                         "tokens_in": 1, "tokens_out": 1, "failed_chunks": 0}
    request = scripted_llm.requests[0]
    assert request["model"] == "scripted-model" and request["temperature"] == 0
    system = request["messages"][0]["content"]
    assert request["messages"][0]["role"] == "system"
    assert all(word in system for word in ("entities", "relations", "events", "semantic_type",
                                           "description", "arguments", "JSON"))
    assert "types (the only ones allowed" not in system  # open extraction
    assert user_message(request) == f"Section: Biography > Early life\nChunk:\n{TEXT}"


# --- what models really return ---------------------------------------------------------------

ALICE_BOB = (ExtractedEntity("Alice", "Person"), ExtractedEntity("Bob", "Person"))
KNOWS = (ExtractedRelation("Alice", "knows", "Bob"),)


@pytest.mark.parametrize("reply", [
    pytest.param('```json\n{"entities": [{"name": "Alice", "type": "Person"}, {"name": "Bob", '
                 '"type": "Person"}], "relations": [{"head": "Alice", "relation": "knows", '
                 '"tail": "Bob"}], "events": []}\n```', id="json-fence"),
    pytest.param('Sure! Here is what I found in the chunk:\n\n{"entities": [{"name": "Alice", '
                 '"type": "Person"}, {"name": "Bob", "type": "Person"}], "relations": [{"head": '
                 '"Alice", "relation": "knows", "tail": "Bob"}]}\n\nLet me know if you need more '
                 '(e.g. [events]).', id="prose-before-and-after"),
    pytest.param('{"entities": [{"name": "Alice", "type": "Person",}, {"name": "Bob", "type": '
                 '"Person"},], "relations": [{"head": "Alice", "relation": "knows", "tail": '
                 '"Bob",},], "events": [],}', id="trailing-commas"),
    pytest.param('[{"name": "Alice", "type": "Person"}, {"name": "Bob", "type": "Person"}, '
                 '{"head": "Alice", "relation": "knows", "tail": "Bob"}]', id="top-level-list"),
    pytest.param('{"ENTITIES": [{"Name": "Alice", "Type": "Person"}, {"NAME": "Bob", "TYPE": '
                 '"Person"}], "Relations": [{"Subject": "Alice", "Predicate": "knows", "Object": '
                 '"Bob"}]}', id="keys-in-other-case-and-spelling"),
    pytest.param('{"entities": [{"name": "Alice", "type": "Person", "description": null, '
                 '"semantic_type": null}, {"name": "Bob", "type": "Person"}], "relations": '
                 '[{"head": "Alice", "relation": "knows", "tail": "Bob"}], "events": null}',
                 id="nulls-and-missing-fields"),
    pytest.param('{"entities": [{"name": "Alice", "type": "Person"}, {"name": " alice ", "type": '
                 'null}, {"name": "Bob", "type": "Person"}, {"name": "BOB", "type": "Person"}], '
                 '"relations": [{"head": "Alice", "relation": "knows", "tail": "Bob"}, {"head": '
                 '"ALICE", "relation": "knows", "tail": "bob"}]}', id="duplicates"),
    pytest.param("<think>The chunk mentions two people.</think>\n{'entities': [{'name': 'Alice', "
                 "'type': 'Person'}, {'name': 'Bob', 'type': 'Person'}], 'relations': "
                 "[['Alice', 'knows', 'Bob']], 'events': None}", id="python-literals-and-think"),
])
def test_messy_replies_parse_without_a_retry(scripted_llm, reply: str) -> None:
    scripted_llm.push(reply)
    extractor = LlmExtractor()
    got = only(extractor)
    assert (got.entities, got.relations, got.events) == (ALICE_BOB, KNOWS, ())
    assert extractor.stats.requests == 1 and extractor.stats.retries == 0


def test_numbers_as_names_become_strings(scripted_llm) -> None:
    scripted_llm.push('{"entities": [{"name": 1947, "type": "Year"}, {"name": 3.0, "type": null},'
                      ' {"name": "Alice", "type": "Person"}], "relations": [{"head": "Alice", '
                      '"relation": "born in", "tail": 1947}], "events": [{"name": 42, '
                      '"arguments": {"year": 1947, "who": ["Alice", null]}}]}')
    got = only(LlmExtractor())
    assert [(e.name, e.type) for e in got.entities] == [("1947", "Year"), ("3", None),
                                                         ("Alice", "Person")]
    assert got.relations == (ExtractedRelation("Alice", "born in", "1947"),)
    assert got.events == (ExtractedEvent("42", None, (("year", "1947"), ("who", "Alice"))),)


def test_unlisted_relation_endpoints_are_added_as_untyped_entities(scripted_llm) -> None:
    scripted_llm.push('{"entities": [{"name": "Alice", "type": "Person"}], "relations": '
                      '[{"head": "alice", "relation": "works for", "tail": "Acme"}], "events": '
                      '[{"name": "Merger", "arguments": [{"role": "buyer", "entity": "Acme"}, '
                      '{"role": "target", "entity": "Initech"}]}]}')
    extractor = LlmExtractor()
    got = only(extractor)
    assert got.entities == (ExtractedEntity("Alice", "Person"), ExtractedEntity("Acme"),
                            ExtractedEntity("Initech"))
    assert got.relations == (ExtractedRelation("Alice", "works for", "Acme"),)
    assert got.events[0].arguments == (("buyer", "Acme"), ("target", "Initech"))
    assert extractor.added_entities == 2 and not extractor.dropped


def test_items_without_names_are_counted_not_fatal() -> None:
    parsed = parse_reply('{"entities": [{"type": "Person"}, {"name": ""}, {"name": "ok\\u0000"},'
                         ' {"name": "Fine"}], "relations": [{"head": "Fine", "relation": null, '
                         '"tail": "x"}]}')
    assert parsed.entities == (ExtractedEntity("Fine"),)
    assert parsed.relations == () and parsed.dropped == {"unusable item": 4}


# --- unusable output: self-correction, then a clear failure ---------------------------------

def test_malformed_reply_is_shown_back_and_corrected(scripted_llm) -> None:
    bad = 'Here you go: {"entities": [{"name": "Alice", "type": "Person"}'
    scripted_llm.push(bad, '{"entities": [{"name": "Alice", "type": "Person"}]}')
    extractor = LlmExtractor()
    got = only(extractor)
    assert got.entities == (ExtractedEntity("Alice", "Person"),)
    assert len(scripted_llm.requests) == 2
    retry = scripted_llm.requests[1]["messages"]
    assert retry[:2] == scripted_llm.requests[0]["messages"]
    assert retry[-2] == {"role": "assistant", "content": bad}
    assert "could not be used: invalid JSON" in retry[-1]["content"]
    assert extractor.stats.requests == 2 and extractor.stats.retries == 1
    assert extractor.stats.tokens_in == 2 and extractor.stats.tokens_out == 2


def test_reply_of_the_wrong_shape_is_retried_with_what_was_expected(scripted_llm) -> None:
    scripted_llm.push('{"answer": "Alice knows Bob", "confidence": 0.9}',
                      '{"entities": [{"name": "Alice"}]}')
    only(LlmExtractor())
    assert ('expected a JSON object with "entities", "relations" and "events", got an object '
            "with the keys 'answer', 'confidence'") in scripted_llm.requests[1]["messages"][-1][
                "content"]


def test_exhausted_attempts_raise_an_error_naming_the_chunk(scripted_llm) -> None:
    scripted_llm.default = "I cannot help with that."
    extractor = LlmExtractor(attempts=2)
    with pytest.raises(LlmError) as info:
        run(extractor, [chunk(7)])
    message = str(info.value)
    assert "'doc#0007#000'" in message and "could not be parsed after 2 attempts" in message
    assert "no JSON object found" in message and isinstance(info.value, KgdbError)
    assert len(scripted_llm.requests) == 2
    assert extractor.stats.failed_chunks == 1 and extractor.stats.requests == 2


def test_on_error_skip_counts_the_chunk_and_goes_on(scripted_llm) -> None:
    good = '{"entities": [{"name": "Alice"}]}'
    scripted_llm.default = lambda body: good if "fine" in user_message(body) else "no JSON"
    extractor = LlmExtractor(on_error="skip", attempts=2)
    got = run(extractor, [chunk(0, "a fine chunk"), chunk(1, "a bad chunk"),
                          chunk(2, "another fine chunk")])
    assert sorted(got) == ["doc#0000#000", "doc#0002#000"]
    assert extractor.stats.failed_chunks == 1 and extractor.stats.requests == 4
    # nothing of the failed chunk was cached: a second run asks for it again
    again = LlmExtractor(on_error="skip", attempts=2)
    run(again, [chunk(1, "a bad chunk")])
    assert again.stats.requests == 2 and again.stats.cached == 0


def test_endpoint_failure_names_the_chunk(scripted_llm, monkeypatch) -> None:
    monkeypatch.setenv("KGDB_LLM_RETRIES", "0")
    scripted_llm.default = {"status": 500, "content": "model crashed"}
    with pytest.raises(LlmError, match=r"chunk 'doc#0000#000': .*HTTP 500: .*model crashed"):
        run(LlmExtractor(), [chunk()])


def test_bad_arguments_are_config_errors(scripted_llm, monkeypatch) -> None:
    with pytest.raises(ConfigError, match="on_error"):
        LlmExtractor(on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="concurrency"):
        LlmExtractor(concurrency=0)
    monkeypatch.setenv("KGDB_EXTRACT_CONCURRENCY", "0")
    with pytest.raises(ConfigError, match=r"^KGDB_EXTRACT_CONCURRENCY='0': .*greater than or equal to 1"):
        LlmExtractor()
    monkeypatch.setenv("KGDB_EXTRACT_CONCURRENCY", "many")
    with pytest.raises(ConfigError, match="KGDB_EXTRACT_CONCURRENCY='many'"):
        LlmExtractor()
    monkeypatch.setenv("KGDB_EXTRACT_CONCURRENCY", "7")
    assert LlmExtractor().concurrency == 7
    monkeypatch.delenv("KGDB_EXTRACT_CONCURRENCY")
    assert environment().KGDB_EXTRACT_CONCURRENCY == 4 == LlmExtractor().concurrency


# --- schema-constrained extraction -----------------------------------------------------------

def test_schema_types_are_in_the_prompt_and_undeclared_ones_dropped(scripted_llm) -> None:
    scripted_llm.push(json.dumps({
        "entities": [
            {"name": "Alice", "type": "person"},                  # case differs: normalised
            {"name": "Acme", "type": "ORGANIZATION"},
            {"name": "Blue", "type": "Color"},                    # undeclared: dropped
            {"name": "Bob", "type": None},                        # no type: kept
        ],
        "relations": [
            {"head": "Alice", "relation": "Works For", "tail": "Acme"},   # -> works_for
            {"head": "Alice", "relation": "likes", "tail": "Blue"},       # undeclared relation
            {"head": "Bob", "relation": "works_for", "tail": "Blue"},     # Blue was dropped
            {"head": "Bob", "relation": "WORKS-FOR", "tail": "Carol"},    # Carol added
        ],
        "events": [
            {"name": "Hiring", "type": "hiring", "arguments": {"employer": "Acme",
                                                               "colour": "Blue"}},
            {"name": "Party", "type": "Celebration", "arguments": {}},     # undeclared event
        ],
    }))
    extractor = LlmExtractor(entity_types=["Person", "Organization"],
                             relation_types=["works_for", "founded"], event_types=["Hiring"])
    got = only(extractor)
    system = scripted_llm.requests[0]["messages"][0]["content"]
    assert "Entity types (the only ones allowed" in system and "Person, Organization" in system
    assert "Relation types (the only ones allowed" in system and "works_for, founded" in system
    assert "Event types (the only ones allowed" in system and ": Hiring" in system
    assert got.entities == (ExtractedEntity("Alice", "Person"),
                            ExtractedEntity("Acme", "Organization"), ExtractedEntity("Bob"),
                            ExtractedEntity("Carol"))
    assert got.relations == (ExtractedRelation("Alice", "works_for", "Acme"),
                             ExtractedRelation("Bob", "works_for", "Carol"))
    assert got.events == (ExtractedEvent("Hiring", "Hiring", (("employer", "Acme"),)),)
    assert extractor.dropped == {DROP_ENTITY_TYPE: 1, DROP_RELATION_TYPE: 1,
                                 DROP_DANGLING_RELATION: 1, DROP_EVENT_TYPE: 1,
                                 "event argument naming a dropped entity": 1}
    assert extractor.added_entities == 1


def test_a_different_schema_is_a_different_prompt_and_cache_entry(scripted_llm) -> None:
    scripted_llm.default = '{"entities": [{"name": "Alice", "type": "Person"}]}'
    first = LlmExtractor(entity_types=["Person"])
    run(first, [chunk()])
    other = LlmExtractor(entity_types=["Person", "Place"])
    run(other, [chunk()])
    assert other.stats.requests == 1 and other.stats.cached == 0
    assert first.fingerprint["model"] == "scripted-model" == other.fingerprint["model"]
    assert first.fingerprint != other.fingerprint
    assert first.fingerprint == LlmExtractor(entity_types=["Person"]).fingerprint
    json.dumps(first.fingerprint)


# --- the reply cache ---------------------------------------------------------------------------

def test_second_run_is_answered_from_the_cache(scripted_llm, home: Path, monkeypatch) -> None:
    scripted_llm.default = lambda body: REALISTIC.replace("Jay Chou", user_message(body)[-5:])
    chunks = [chunk(n, f"{TEXT} Part {n}.") for n in range(3)]
    first = LlmExtractor()
    before = run(first, chunks)
    assert first.stats.requests == 3 and first.stats.cached == 0
    assert len(scripted_llm.requests) == 3

    second = LlmExtractor()
    assert run(second, chunks) == before
    assert len(scripted_llm.requests) == 3
    assert second.stats.to_json() == {"requests": 0, "retries": 0, "cached": 3, "tokens_in": 0,
                                      "tokens_out": 0, "failed_chunks": 0}

    # a cached run needs no endpoint at all
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    assert run(LlmExtractor(), chunks) == before

    # one chunk's text changed: one request
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    changed = [*chunks[:2], chunk(2, f"{TEXT} Part 2, revised.")]
    third = LlmExtractor()
    run(third, changed)
    assert third.stats.requests == 1 and third.stats.cached == 2
    assert len(scripted_llm.requests) == 4

    path = default_cache_path()
    assert path == home / "cache" / "extractions.sqlite"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


def test_cache_is_keyed_by_model(scripted_llm, monkeypatch) -> None:
    scripted_llm.default = '{"entities": [{"name": "Alice"}]}'
    run(LlmExtractor(), [chunk()])
    monkeypatch.setenv("KGDB_LLM_MODEL", "another-model")
    other = LlmExtractor()
    run(other, [chunk()])
    assert other.stats.requests == 1 and scripted_llm.requests[-1]["model"] == "another-model"


def test_only_replies_that_parsed_are_cached(scripted_llm, tmp_path: Path) -> None:
    cache = ExtractionCache(tmp_path / "replies.sqlite")
    scripted_llm.push("not JSON", '{"entities": [{"name": "Alice"}]}')
    extractor = LlmExtractor(cache=cache)
    only(extractor)
    assert cache.count() == 1
    prompt, message = extractor.system_prompt, extractor.chunk_message(chunk())
    assert cache.get("scripted-model", prompt, message) == '{"entities": [{"name": "Alice"}]}'
    cache.close()


def test_no_cache_when_disabled(scripted_llm, home: Path) -> None:
    scripted_llm.default = '{"entities": [{"name": "Alice"}]}'
    run(LlmExtractor(cache=False), [chunk()])
    again = LlmExtractor(cache=False)
    run(again, [chunk()])
    assert again.stats.requests == 1 and not default_cache_path().exists()


def test_cache_is_shared_by_threads_and_connections(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "c" / "replies.sqlite"
    one, two = ExtractionCache(path), ExtractionCache(path)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: (one if n % 2 else two).put("m", "p", f"chunk {n}", f"r{n}"),
                      range(200)))
    assert one.count() == two.count() == 200
    assert two.get("m", "p", "chunk 17") == "r17" and one.get("m", "p", "chunk 200") is None
    one.close()
    two.close()


# --- concurrency and rate limits ---------------------------------------------------------------

def test_requests_run_concurrently(scripted_llm) -> None:
    scripted_llm.default = {"content": '{"entities": [{"name": "Alice"}]}', "delay": 0.5}
    chunks = [chunk(n, f"chunk number {n}") for n in range(8)]
    extractor = LlmExtractor(concurrency=4)
    started = time.perf_counter()
    got = run(extractor, chunks)
    elapsed = time.perf_counter() - started
    assert sorted(got) == sorted(c.id for c in chunks)
    assert elapsed < 2.5, f"8 replies of 0.5 s at concurrency 4 took {elapsed:.2f} s"
    assert extractor.stats.requests == 8 and len(scripted_llm.requests) == 8


def test_stopping_early_sends_no_more_requests(scripted_llm) -> None:
    scripted_llm.default = {"content": '{"entities": [{"name": "Alice"}]}', "delay": 0.2}
    chunks = [chunk(n, f"chunk number {n}") for n in range(40)]
    stream = LlmExtractor(concurrency=2).extract(chunks)
    next(stream)
    stream.close()
    assert len(scripted_llm.requests) <= 6  # the window (2 x concurrency) and the one answered


def test_429_is_backed_off_and_retried(scripted_llm) -> None:
    scripted_llm.push({"status": 429, "content": "slow down"}, REALISTIC)
    extractor = LlmExtractor()
    got = only(extractor)
    assert got.entities[0].name == "Jay Chou"
    assert len(scripted_llm.requests) == 2
    assert extractor.stats.requests == 1 and extractor.stats.retries == 1
    assert extractor.stats.failed_chunks == 0
