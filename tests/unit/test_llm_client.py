"""The OpenAI-compatible client against the scripted server: replies, 429s, slow replies,
malformed output with bounded self-correcting retries."""

from __future__ import annotations

import json

import pytest

from kgdb.errors import ConfigError, LlmError
from kgdb.llm import ChatClient, LlmSettings, OutputParseError


def parse_json_list(text: str) -> list:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OutputParseError(f"not JSON: {exc.msg}") from None
    if not isinstance(value, list):
        raise OutputParseError("expected a JSON list")
    return value


def test_reply(scripted_llm) -> None:
    scripted_llm.push("hello")
    assert ChatClient().complete([{"role": "user", "content": "hi"}]) == "hello"
    assert scripted_llm.requests[0]["model"] == "scripted-model"


def test_429_is_retried(scripted_llm) -> None:
    scripted_llm.push({"status": 429}, "after the storm")
    assert ChatClient().complete([{"role": "user", "content": "hi"}]) == "after the storm"
    assert len(scripted_llm.requests) == 2


def test_persistent_429_is_one_clear_error(scripted_llm) -> None:
    scripted_llm.default = {"status": 429}
    with pytest.raises(LlmError, match="429"):
        ChatClient().complete([{"role": "user", "content": "hi"}])


def test_slow_reply_times_out(scripted_llm, monkeypatch) -> None:
    monkeypatch.setenv("KGDB_LLM_TIMEOUT", "0.5")
    monkeypatch.setenv("KGDB_LLM_RETRIES", "0")
    scripted_llm.push({"content": "late", "delay": 2})
    with pytest.raises(LlmError, match=r"did not answer within 0\.5 s"):
        ChatClient().complete([{"role": "user", "content": "hi"}])


def test_malformed_output_is_shown_back_and_retried(scripted_llm) -> None:
    scripted_llm.push("Sure! Here it is: [1, 2", "[1, 2]")
    client = ChatClient()
    assert client.complete_parsed([{"role": "user", "content": "a list"}],
                                  parse_json_list) == [1, 2]
    retry = scripted_llm.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "Sure! Here it is: [1, 2"}
    assert "could not be used: not JSON" in retry[-1]["content"]


def test_malformed_output_gives_up_after_bounded_attempts(scripted_llm) -> None:
    scripted_llm.default = "never a list"
    with pytest.raises(LlmError, match="could not be parsed after 3 attempts: not JSON"):
        ChatClient().complete_parsed([{"role": "user", "content": "x"}], parse_json_list)
    assert len(scripted_llm.requests) == 3


def test_unreachable_endpoint(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("KGDB_LLM_RETRIES", "0")
    with pytest.raises(LlmError, match=r"cannot reach the LLM at http://127\.0\.0\.1:9/v1"):
        ChatClient().complete([{"role": "user", "content": "hi"}])


def test_no_endpoint_configured(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="no LLM endpoint configured"):
        ChatClient(LlmSettings.from_env())


def test_openai_embedder_through_the_endpoint(scripted_llm, tmp_path) -> None:
    from kgdb.embed import CachedEmbedder, EmbeddingCache, OpenAIEmbedder

    embedder = CachedEmbedder(OpenAIEmbedder("text-embedding-3-small"),
                              EmbeddingCache(tmp_path / "c.sqlite"))
    first = embedder.embed(["a", "b", "a"])
    assert first.shape == (3, 8) and (first[0] == first[2]).all()
    assert embedder.misses == 2
    again = embedder.embed(["b"])
    assert (again[0] == first[1]).all() and embedder.misses == 2


def test_metered_view_counts_its_own_requests_and_tokens(scripted_llm) -> None:
    scripted_llm.push({"content": "one", "prompt_tokens": 7, "completion_tokens": 2},
                      {"status": 429}, {"content": "two", "prompt_tokens": 5,
                                        "completion_tokens": 3})
    client = ChatClient()
    metered = client.metered()
    assert metered.complete([{"role": "user", "content": "a"}]) == "one"
    assert metered.complete([{"role": "user", "content": "b"}]) == "two"
    assert metered.usage is not None and metered.usage.to_json() == {
        "requests": 2, "tokens_in": 12, "tokens_out": 5, "http_retries": 1}
    assert client.usage is None and client.metered().usage.requests == 0  # type: ignore[union-attr]


def test_stream_yields_pieces_and_counts_usage(scripted_llm) -> None:
    scripted_llm.push({"content": "William Dieterle directed it.", "prompt_tokens": 40})
    metered = ChatClient().metered()
    pieces = list(metered.stream([{"role": "user", "content": "who?"}]))
    assert len(pieces) == 4 and "".join(pieces) == "William Dieterle directed it."
    assert scripted_llm.requests[-1]["stream"] is True
    assert metered.usage is not None and metered.usage.to_json() == {
        "requests": 1, "tokens_in": 40, "tokens_out": 4, "http_retries": 0}


def test_stream_failures_are_llm_errors(scripted_llm) -> None:
    scripted_llm.push({"status": 500}, {"status": 500}, {"status": 500}, {"content": "   "})
    with pytest.raises(LlmError, match="HTTP 500"):
        list(ChatClient().stream([{"role": "user", "content": "a"}]))
    with pytest.raises(LlmError, match="empty reply"):
        list(ChatClient().stream([{"role": "user", "content": "a"}]))
