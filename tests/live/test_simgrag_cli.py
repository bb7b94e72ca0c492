"""`kgdb pattern` and `kgdb ask` against the scripted OpenAI-compatible server: realistic,
malformed, slow and rate-limited replies; one-line errors, exit 1, never a traceback."""

from __future__ import annotations

import json
import time

import pytest

from kgdb.cli import main
from kgdb.statement import Statement
from tests.conftest import engine_env
from tests.live.test_simgrag_retrieval import _movie_graph
from tests.support.simgrag_graph import build_graph

pytestmark = pytest.mark.live

PATTERN_REPLY = '''{
    "divided": [
        "the director of Tokyo Godfathers",
    ],
    "triples": [
        ("Tokyo Godfathers", "directed by", "UNKNOWN director 1"),
    ]
}'''
ANSWER_REPLY = "According to graph [1], the director is Satoshi Kon."


@pytest.fixture
def graph(cli_store, embedder, monkeypatch):
    store = cli_store
    build_graph(store, embedder, _movie_graph())
    monkeypatch.setattr("kgdb.embed.default_embedder", lambda *a, **k: embedder)
    return store


class Run:
    def __init__(self, code, out, err):
        self.exit_code, self.output, self.err = code, out, err


@pytest.fixture
def kgdb(capsys):
    """Run ``kgdb ARGS`` in-process through the real entry point (``kgdb.cli.main``)."""

    def run(*args):
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        assert "Traceback" not in out.out + out.err
        return Run(code, out.out, out.err)

    return run


def test_pattern_json(scripted_llm, kgdb):
    scripted_llm.push("Here is the structure:\n```python\n" + PATTERN_REPLY + "\n```")
    result = kgdb("pattern", "who is the director of Tokyo Godfathers", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["triples"] == [["Tokyo Godfathers", "directed by", "UNKNOWN director 1"]]
    assert data["pattern"]["nodes"][1]["types"] == ["director"]
    prompt = scripted_llm.requests[0]["messages"][0]["content"]
    assert prompt.startswith("You need to segment the given query")


def test_malformed_then_recovered(scripted_llm, kgdb):
    scripted_llm.push("The director is probably Satoshi Kon.",
                      '{"triples": [("Tokyo Godfathers", "directed by")]}',
                      PATTERN_REPLY)
    result = kgdb("pattern", "who is the director of Tokyo Godfathers")
    assert result.exit_code == 0, result.output
    assert "('Tokyo Godfathers', 'directed by', 'UNKNOWN director 1')" in result.output
    assert len(scripted_llm.requests) == 3
    retry = scripted_llm.requests[2]["messages"][-1]["content"]
    assert "triple 1 has 2 item(s)" in retry  # the model is shown its mistake


def test_malformed_fails_after_bounded_retries(scripted_llm, kgdb):
    scripted_llm.push("no idea", "still no idea", "{'triples': 'n/a'}", PATTERN_REPLY)
    result = kgdb("pattern", "who is the director of Tokyo Godfathers")
    assert result.exit_code == 1 and result.output == ""
    lines = result.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("kgdb: error: the model's pattern graph could not be parsed "
                               "after 3 attempts")
    assert len(scripted_llm.requests) == 3


def test_slow_endpoint_times_out(scripted_llm, monkeypatch, kgdb):
    monkeypatch.setenv("KGDB_LLM_TIMEOUT", "1")
    monkeypatch.setenv("KGDB_LLM_RETRIES", "0")
    scripted_llm.push({"content": PATTERN_REPLY, "delay": 3})
    result = kgdb("pattern", "who is the director of Tokyo Godfathers")
    assert result.exit_code == 1
    assert result.err.strip().splitlines() == [
        f"kgdb: error: the LLM at {scripted_llm.base_url} did not answer within 1 s"]
    # let the scripted server finish its late reply (its broken-pipe report is its own)
    time.sleep(2.5)


def test_rate_limits_are_retried_then_reported(scripted_llm, kgdb):
    scripted_llm.push({"status": 429}, {"status": 429}, PATTERN_REPLY)
    assert kgdb("pattern", "who directed Tokyo Godfathers").exit_code == 0
    scripted_llm.push({"status": 429}, {"status": 429}, {"status": 429})
    result = kgdb("pattern", "who directed Tokyo Godfathers")
    assert result.exit_code == 1
    assert "kept answering 429" in result.err and len(result.err.splitlines()) == 1


def test_ask_prints_answer_evidence_and_cypher(graph, scripted_llm, kgdb):
    scripted_llm.push(PATTERN_REPLY, ANSWER_REPLY)
    result = kgdb("ask", "who is the director of Tokyo Godfathers", "--cypher")
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith(ANSWER_REPLY)
    assert "graph [1]  GSD 0.0000" in out
    assert "('Tokyo Godfathers', 'directed_by', 'Satoshi Kon')" in out
    assert "subgraph [1]  GSD 0.0000" in out
    # Neo4j with kgdb's plugin: the whole retrieval is one call, shown as it ran
    native = graph.dialect.SIMGRAG_SEARCH is not None
    assert (f"CALL {graph.dialect.SIMGRAG_SEARCH}" in out if native else
            "MATCH (n0)-[r0]-(n1:`Entity`)" in out and "ORDER BY gsd ASC" in out)
    # the generation prompt carries the verbalised evidence, graph numbers to cite
    prompt = scripted_llm.requests[1]["messages"][0]["content"]
    assert prompt.startswith("Please answer the question based on the given evidences")
    assert 'evidences: {\n    "graph [1]": [\n        ("Tokyo Godfathers", "directed_by", ' \
           '"Satoshi Kon")' in prompt


def test_ask_json_and_engines(graph, scripted_llm, kgdb):
    for engine in ("cypher", "optimized"):
        scripted_llm.push(PATTERN_REPLY, ANSWER_REPLY)
        result = kgdb("ask", "who is the director of Tokyo Godfathers", "--json",
                         "--engine", engine, "--k", "2")
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        assert data["answer"] == ANSWER_REPLY and data["solver"] == "pattern"
        assert data["engine"] == engine
        assert len(data["subgraphs"]) == 2
        assert data["subgraphs"][0]["triples"] == [["Tokyo Godfathers", "directed_by",
                                                   "Satoshi Kon"]]
        assert data["statements"] and all("cypher" in s for s in data["statements"])
        # the one kgdb.simgrag.search call (Neo4j with the plugin) adds its searches' own time
        one_call = engine == "cypher" and graph.dialect.SIMGRAG_SEARCH is not None
        assert {"embed", "vector", "match", "pattern", "answer",
                *(("vector_in_server",) if one_call else ())} == set(data["timings_ms"])


def test_ask_verify(graph, scripted_llm, kgdb):
    scripted_llm.push(
        '{"divided": ["Satoshi Kon directed Tokyo Godfathers"], "triples": '
        '[["Tokyo Godfathers", "directed by", "Satoshi Kon"]]}',
        "Maybe.",  # no verdict: asked again with the reason
        "Graph [1] says so, so the answer is True.")
    result = kgdb("ask", "Satoshi Kon directed Tokyo Godfathers.", "--verify", "--json",
                     "--examples", "factkg")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["verdict"] is True
    assert "'True' or 'False'" in scripted_llm.requests[2]["messages"][-1]["content"]


def test_ask_with_a_malformed_pattern_is_one_line(graph, scripted_llm, kgdb):
    scripted_llm.push("nope", "nope", "nope")
    result = kgdb("ask", "who is the director of Tokyo Godfathers")
    assert result.exit_code == 1
    assert len(result.err.strip().splitlines()) == 1 and "kgdb: error: " in result.err


QUESTIONS = (
    "who directed [Heat]\tMichael Mann\tmovie_to_director\n"
    "which movies share the director of [Tokyo Godfathers]\tPerfect Blue|Paprika\t"
    "movie_to_director_to_movie\n"
    "[Al Pacino] starred in movies directed by whom\tMichael Mann|Christopher Nolan\t"
    "actor_to_movie_to_director\n"
)


def test_eval_metaqa_and_bench(graph, tmp_path, kgdb):
    questions = tmp_path / "dev.tsv"
    questions.write_text(QUESTIONS)
    result = kgdb("eval", "metaqa", "--questions", str(questions), "--patterns", "oracle",
                     "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["questions"] == 3
    assert report["hops"]["1-hop"]["hits@3"] == 1.0
    assert report["hops"]["2-hop"]["hits@3"] == 1.0 and report["hops"]["2-hop"]["hits@1"] == 1.0
    assert set(report["hops"]["2-hop"]["latency_ms"]) == {
        "embed", "vector", "match", "retrieval_excluding_embed"}
    text = kgdb("eval", "metaqa", "--questions", str(questions), "--engine", "optimized")
    assert text.exit_code == 0 and "2-hop: hits@3 100.00%" in text.output
    bench = kgdb("bench", "retrieve", "--questions", str(questions), "--json")
    assert bench.exit_code == 0, bench.output
    assert json.loads(bench.output)["1-hop"]["latency_ms"]["match"]["p50"] > 0


def test_eval_errors_are_one_line(graph, tmp_path, kgdb):
    bad = tmp_path / "bad.tsv"
    bad.write_text("who directed Heat\tMichael Mann\tmovie_to_director\n")
    result = kgdb("eval", "metaqa", "--questions", str(bad))
    assert result.exit_code == 1
    assert result.err.strip() == f"kgdb: error: {bad}:1: no [topic entity] in the question"
    result = kgdb("eval", "metaqa", "--questions", str(bad), "--patterns", "llm")
    assert result.exit_code == 1 and "only 'oracle'" in result.err


def test_real_process_prints_one_line_and_exits_1(scripted_llm):
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    scripted_llm.push("no", "no", "no")
    proc = subprocess.run([sys.executable, "-m", "kgdb", "pattern", "who directed Heat"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "kgdb: error: the model's pattern graph could not be parsed after 3 attempts: no "
        '{"divided": [...], "triples": [...]} object found in the reply']


def test_ask_streams_the_answer_and_reports_llm_usage(graph, scripted_llm, kgdb):
    scripted_llm.push({"content": PATTERN_REPLY, "prompt_tokens": 120, "completion_tokens": 30},
                      {"content": ANSWER_REPLY, "prompt_tokens": 200})
    result = kgdb("ask", "who is the director of Tokyo Godfathers")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(ANSWER_REPLY + "\n")
    assert scripted_llm.requests[1]["stream"] is True  # the answer was streamed
    words = len(ANSWER_REPLY.split())
    assert f"LLM: 2 requests, 320 tokens in, {30 + words} out" in result.output
    scripted_llm.push({"content": PATTERN_REPLY, "prompt_tokens": 120, "completion_tokens": 30},
                      {"content": ANSWER_REPLY, "prompt_tokens": 200, "completion_tokens": 9})
    data = json.loads(kgdb("ask", "who is the director of Tokyo Godfathers", "--json").output)
    assert data["llm"] == {"requests": 2, "tokens_in": 320, "tokens_out": 39, "http_retries": 0}
    assert "stream" not in scripted_llm.requests[-1]


def test_retrieve_exports_every_format(graph, kgdb):
    import xml.etree.ElementTree as ET

    question = ["retrieve", "who directed Tokyo Godfathers",
                "--pattern", "Tokyo Godfathers|directed_by|UNKNOWN director 1", "--k", "2"]
    graphml = kgdb(*question, "--format", "graphml")
    assert graphml.exit_code == 0, graphml.err
    root = ET.fromstring(graphml.output.encode())
    ns = "{http://graphml.graphdrawing.org/xmlns}"
    names = {d.text for d in root.iter(f"{ns}data") if d.get("key") == "name"}
    assert {"Tokyo Godfathers", "Satoshi Kon"} <= names
    mermaid = kgdb(*question, "--format", "mermaid").output
    assert mermaid.startswith("flowchart LR\n") and '"Satoshi Kon (UNKNOWN director 1)"' in mermaid
    page = kgdb(*question, "--format", "html").output
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<script" not in page
    assert "Satoshi Kon" in page and "GSD" not in page.split("<body>")[0]
    as_json = json.loads(kgdb(*question, "--format", "json").output)
    assert as_json["facts"][0]["tail"] == "Satoshi Kon" and as_json["llm"]["requests"] == 0
    both = kgdb(*question, "--json", "--format", "html")
    assert both.exit_code == 2 and "--json and --format html disagree" in both.err


def test_bench_retrieve_side_by_side(falkordb_store, neo4j_store, embedder, tmp_path,
                                     monkeypatch, kgdb):
    """The same graph on both engines: one run, question by question, every engine's phase
    split, the same GSDs everywhere, which path each took, the machine and index states."""
    for store in (falkordb_store, neo4j_store):
        build_graph(store, embedder, _movie_graph())
    monkeypatch.setattr("kgdb.embed.default_embedder", lambda *a, **k: embedder)
    for name, value in {**engine_env(neo4j_store), "KGDB_GRAPH": falkordb_store.graph_name}.items():
        monkeypatch.setenv(name, value)
    questions = tmp_path / "dev.tsv"
    questions.write_text(QUESTIONS)
    result = kgdb("bench", "retrieve", "--questions", str(questions), "--engines",
                  "falkordb,neo4j,neo4j-cypher", "--warmup", "7", "--json")
    assert result.exit_code == 0, result.err
    report = json.loads(result.output)
    warmup = report["warmup"]
    rounds = warmup["rounds_p50_ms"]  # rounds of 7 until no engine gets 10 % faster, <= 35
    assert 7 <= warmup["retrievals"] <= 35 and warmup["retrievals"] % 7 == 0
    assert set(rounds) == {"falkordb", "neo4j", "neo4j-cypher"}
    assert all(len(r) == warmup["retrievals"] // 7 and min(r) > 0 for r in rounds.values())
    assert report["machine"]["cores"] >= 1 and len(report["machine"]["load_average_at_end"]) == 3
    assert set(report["hops"]) == {"1-hop", "2-hop"}
    for row in report["hops"].values():
        n = row["questions"]
        for name in ("falkordb", "neo4j", "neo4j-cypher"):
            assert row[name]["gsds_equal_to_falkordb"] == f"{n}/{n}", row
            assert row[name]["hits@3"] == 1.0
            latency = row[name]["latency_ms"]
            assert set(latency) - {"vector_in_server"} == {"vector", "match", "glue", "total"}
            assert latency["total"]["p50"] >= latency["match"]["p50"] > 0
        # one call per question on the plugin: the searches' own time in the server beside
        assert row["neo4j"]["paths"] == ["vector kgdb.simgrag.search, match kgdb.simgrag.search"]
        server = row["neo4j"]["latency_ms"]["vector_in_server"]["p50"]
        assert 0 < server <= row["neo4j"]["latency_ms"]["vector"]["p50"]
        assert row["neo4j-cypher"]["paths"] == ["vector cypher, match cypher"]
        assert row["neo4j"]["paired_ratio_total_to_falkordb_p50"] > 0
    engines = report["engines"]
    falkordb = engines["falkordb"]["index_state"]  # a small graph: FalkorDB scans it exactly
    assert "HNSW" in falkordb["vector_search"] and {"Entity", "RelationType"} <= set(
        falkordb["full_scan"])
    assert engines["neo4j-cypher"]["index_state"]["vector_search"].startswith("approximate")
    exact = engines["neo4j"]["index_state"]
    assert exact["vector_search"].startswith("exact")
    entity = next(i for i in exact["indexes"] if i["index"] == "kgdb_entity_embedding_vector")
    assert entity["state"] == "current" and entity["rows"] == falkordb_store.run(
        Statement("MATCH (n:Entity) RETURN count(n)")).value(0)
    text = kgdb("bench", "retrieve", "--questions", str(questions), "--engines", "neo4j,falkordb",
                "--warmup", "0")
    assert text.exit_code == 0 and "GSDs equal 1/1" in text.output and "load" in text.output
    assert "warm-up: 0 retrievals per engine" in text.output
    again = kgdb("bench", "retrieve", "--questions", str(questions), "--engines", "falkordb",
                 "--warmup", "2")
    assert again.exit_code == 0 and "warm-up: " in again.output and "falkordb " in again.output
    alone = kgdb("bench", "retrieve", "--questions", str(questions), "--warmup", "5")
    assert alone.exit_code == 2 and "--warmup goes with --engines" in alone.err
    bad = kgdb("bench", "retrieve", "--questions", str(questions), "--engines", "falkordb,mysql")
    assert bad.exit_code == 2 and "--engines: give distinct names among" in bad.err
