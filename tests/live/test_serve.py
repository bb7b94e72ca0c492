"""``kgdb serve`` on both engines, in-process (FastAPI's test client for most calls, a real port
where a client library must connect): tokens and scopes, every endpoint, tenants that never
see each other's data, hostile input, a fuzz run of the OpenAPI document, and the database
restarting under the service."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kgdb.config import Settings
from kgdb.load.triples import load_triples
from kgdb.serve.app import ServeConfig, create_app
from kgdb.serve.tokens import TokenFile
from tests.conftest import _falkordb_store, engine_env
from tests.support.hostile import CORPUS

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "dsl" / "examples" / "hypertension.rules"
FILMS = """Kismet|directed_by|William Dieterle
Kismet|starred_actors|Marlene Dietrich
Kismet|release_year|1944
Blonde Venus|directed_by|Josef von Sternberg
Blonde Venus|starred_actors|Marlene Dietrich
Tokyo Godfathers|directed_by|Satoshi Kon
Paprika|directed_by|Satoshi Kon
"""
SECRET = """Zorblax Saga|directed_by|Quentin Quuxman
Zorblax Saga|starred_actors|Velma Vexley
"""
SECRET_WORDS = ("Quuxman", "Vexley")
"""In the other tenant's data, never in a question asked here."""
PATTERN = {"divided": ["Kismet was directed by someone"],
           "triples": [["Kismet", "directed_by", "UNKNOWN director 1"]]}


def _load(store: Any, embedder: Any, text: str, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.txt"
    path.write_text(text, encoding="utf-8")
    load_triples(store, embedder, path, progress=False)


class Service:
    """The app with its tokens: ``call(method, path, token=..., graph=..., **kw)``."""

    def __init__(self, app: Any, tokens: dict[str, str], graph: str, other: str | None) -> None:
        from fastapi.testclient import TestClient

        self.app, self.tokens, self.graph, self.other = app, tokens, graph, other
        self.client = TestClient(app, raise_server_exceptions=False)

    def call(self, method: str, path: str, *, token: str | None = "reader",
             graph: str | None = None, **kwargs: Any) -> Any:
        headers = dict(kwargs.pop("headers", {}))
        if token:
            headers["Authorization"] = f"Bearer {self.tokens[token]}"
        headers.setdefault("X-Kgdb-Graph", graph or self.graph)
        return self.client.request(method, path, headers=headers, **kwargs)


def _service(store: Any, embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             *, allow_writes: bool, other: str | None = None) -> Service:
    for name, value in engine_env(store).items():
        monkeypatch.setenv(name, value)
    graph = "neo4j" if store.dialect.NAME == "neo4j" else store.graph_name
    tokens = TokenFile(tmp_path / "tokens.json", [])
    secrets = {"reader": tokens.add("reader", ("read",), (graph,)),
               "writer": tokens.add("writer", ("read", "write"), (graph,))}
    if other:
        secrets["other"] = tokens.add("other", ("read",), (other,))
    assert oct((tmp_path / "tokens.json").stat().st_mode & 0o777) == "0o600"
    from kgdb.cli.rules import read_rules

    config = ServeConfig(Settings.from_env(), TokenFile.load(tmp_path / "tokens.json"),
                         allow_writes=allow_writes, timeout_s=20, max_rows=50,
                         rulesets={"hypertension": read_rules(RULES)})
    return Service(create_app(config, embedder=embedder), secrets, graph, other)


@pytest.fixture
def films(cli_store: Any, embedder: Any, tmp_path: Path) -> Any:
    _load(cli_store, embedder, FILMS, tmp_path, "films")
    return cli_store


@pytest.fixture
def service(films: Any, embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
            ) -> Service:
    return _service(films, embedder, tmp_path, monkeypatch, allow_writes=False)


# ---------------------------------------------------------------------- tokens and scopes
def test_tokens_scopes_and_tenants(service: Service, films: Any, embedder: Any,
                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert service.call("GET", "/livez", token=None).json() == {"status": "ok"}
    missing = service.call("GET", "/health", token=None)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert service.call("GET", "/health", headers={"Authorization": "Bearer nope"},
                        token=None).status_code == 401
    assert service.call("GET", "/health", headers={"Authorization": "Basic abc"},
                        token=None).status_code == 401
    outside = service.call("GET", "/health", graph="elsewhere")
    assert outside.status_code == 403 and "may not use 'elsewhere'" in outside.json()[
        "error"]["message"]
    # writes: refused on a read-only server, and for a read token
    apply = {"ruleset": "hypertension", "label": "Entity"}
    assert service.call("POST", "/rules/apply", token="writer", json=apply).status_code == 403
    (tmp_path / "w").mkdir()
    writable = _service(films, embedder, tmp_path / "w", monkeypatch, allow_writes=True)
    denied = writable.call("POST", "/rules/apply", token="reader", json=apply)
    assert denied.status_code == 403 and "no write scope" in denied.text
    done = writable.call("POST", "/rules/apply", token="writer", json=apply)
    assert done.status_code == 200, done.text
    assert done.json()["ruleset"] == "hypertension"
    # a read endpoint never writes, whatever it is asked to run
    program = "Step1: x\nAction1: Retrieval(s=s1:Entity[Kismet], p=p1:directed_by, o=o1)\n" \
              "Output(o1)"
    assert service.call("POST", "/lf/run", json={"program": program}).status_code == 200


def test_health_reports_engine_indexes_and_procedures(service: Service) -> None:
    health = service.call("GET", "/health").json()
    assert health["status"] == "ok" and health["graph"] == service.graph
    assert health["engine"]["engine"] in ("neo4j", "falkordb")
    assert any(i["kind"] == "vector" and i["label"] == "Entity" for i in health["indexes"])
    assert "procedures" in health and health["rulesets"] == ["hypertension"]


# ---------------------------------------------------------------------- endpoints
def test_ask_retrieve_and_csv(service: Service, scripted_llm: Any) -> None:
    scripted_llm.push(json.dumps(PATTERN), "William Dieterle directed Kismet [1].")
    asked = service.call("POST", "/ask", json={"question": "Who directed Kismet?"})
    assert asked.status_code == 200, asked.text
    out = asked.json()
    assert out["answer"] == "William Dieterle directed Kismet [1]."
    assert out["evidence"][0] == {"rank": 1, "head": "Kismet", "relation": "directed_by",
                                  "tail": "William Dieterle", "score": out["evidence"][0][
                                      "score"], "source": "subgraph 1"}
    assert out["statements"] and {"vector", "match", "answer"} <= set(out["timings_ms"])
    assert "Kismet" in scripted_llm.requests[-1]["messages"][0]["content"]

    body = {"question": "Who directed Kismet?",
            "options": {"pattern": PATTERN["triples"], "k": 2}}
    retrieved = service.call("POST", "/retrieve", json=body)
    assert retrieved.status_code == 200, retrieved.text
    assert "answer" not in retrieved.json()
    assert retrieved.json()["evidence"][0]["tail"] == "William Dieterle"
    csv_text = service.call("POST", "/retrieve?format=csv", json=body)
    assert csv_text.headers["content-type"].startswith("text/csv")
    lines = csv_text.text.splitlines()
    assert lines[0] == "rank,head,relation,tail,score,source"
    assert lines[1].startswith("1,Kismet,directed_by,William Dieterle,")
    relayed = service.call("POST", "/relay/ask-evidence", json=body).json()
    assert relayed[0]["head"] == "Kismet" and set(relayed[0]) == {
        "rank", "head", "relation", "tail", "score", "source"}


def _events(text: str) -> list[tuple[str, Any]]:
    """Server-sent events as ``(event, data)``."""
    out = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((fields["event"], json.loads(fields["data"])))
    return out


def test_ask_streams_events_with_llm_usage(service: Service, scripted_llm: Any) -> None:
    answer = "William Dieterle directed Kismet [1]."
    scripted_llm.push({"content": json.dumps(PATTERN), "prompt_tokens": 50,
                       "completion_tokens": 20},
                      {"content": answer, "prompt_tokens": 70, "chunk_delay": 0.05})
    with service.client.stream("POST", "/ask", json={"question": "Who directed Kismet?",
                                                     "stream": True},
                               headers={"Authorization": f"Bearer {service.tokens['reader']}",
                                        "X-Kgdb-Graph": service.graph}) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        events = _events(reply.read().decode())
    kinds = [k for k, _ in events]
    assert kinds[0] == "evidence" and kinds[-1] == "done"
    assert set(kinds[1:-1]) == {"token"} and len(kinds) - 2 == len(answer.split())
    assert events[0][1]["evidence"][0]["tail"] == "William Dieterle"
    assert "".join(d["text"] for k, d in events if k == "token") == answer
    done = events[-1][1]
    assert done["answer"] == answer and done["verdict"] is None
    assert done["llm"] == {"requests": 2, "tokens_in": 120,
                           "tokens_out": 20 + len(answer.split()), "http_retries": 0}
    assert {"embed", "pattern", "answer"} <= set(done["timings_ms"])
    # the whole answer reports the same usage; the relay's row too
    scripted_llm.push({"content": json.dumps(PATTERN), "prompt_tokens": 50,
                       "completion_tokens": 20}, {"content": answer, "prompt_tokens": 70,
                                                  "completion_tokens": 9})
    whole = service.call("POST", "/ask", json={"question": "Who directed Kismet?"}).json()
    assert whole["llm"] == {"requests": 2, "tokens_in": 120, "tokens_out": 29,
                            "http_retries": 0}
    scripted_llm.push(json.dumps(PATTERN), answer)
    row = service.call("POST", "/relay/ask", json={"question": "Who directed Kismet?"}).json()
    assert row[0]["answer"] == answer and (row[0]["llm_requests"], row[0]["tokens_in"],
                                           row[0]["tokens_out"]) == (2, 2, 2)
    # an LLM failing after the evidence is the last event, in the service's words
    scripted_llm.push(json.dumps(PATTERN), {"status": 400, "content": "secret upstream"})
    failed = _events(service.call("POST", "/ask", json={"question": "Who directed Kismet?",
                                                        "stream": True}).text)
    assert [k for k, _ in failed] == ["evidence", "error"]
    assert "secret upstream" not in json.dumps(failed[-1][1])
    assert failed[-1][1]["error"]["status"] == 502
    refused = service.call("POST", "/ask?format=html", json={"question": "q", "stream": True})
    assert refused.status_code == 400
    schema = service.app.openapi()["paths"]["/ask"]["post"]
    assert "text/event-stream" in schema["responses"]["200"]["content"]


def test_evidence_exports_from_the_service(service: Service) -> None:
    import xml.etree.ElementTree as ET

    body = {"question": "Who directed Kismet?",
            "options": {"pattern": PATTERN["triples"], "k": 2}}
    graphml = service.call("POST", "/retrieve?format=graphml", json=body)
    assert graphml.status_code == 200 and graphml.headers["content-type"].startswith(
        "application/graphml+xml")
    root = ET.fromstring(graphml.content)
    ns = "{http://graphml.graphdrawing.org/xmlns}"
    assert {"Kismet", "William Dieterle"} <= {
        d.text for d in root.iter(f"{ns}data") if d.get("key") == "name"}
    mermaid = service.call("POST", "/retrieve?format=mermaid", json=body)
    assert mermaid.text.startswith("flowchart LR") and '"William Dieterle (UNKNOWN ' \
        'director 1)"' in mermaid.text
    page = service.call("POST", "/retrieve?format=html", json=body)
    assert page.headers["content-type"].startswith("text/html")
    assert "script-src" not in page.headers["content-security-policy"]
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert "<svg" in page.text and "William Dieterle" in page.text
    assert page.headers["x-kgdb-truncated"] == "false"
    bad = service.call("POST", "/retrieve?format=pdf", json=body)
    assert bad.status_code == 422 and "format" in bad.json()["error"]["message"]


def test_exports_of_a_passage_solver_draw_passages_documents_and_mentions(
        films: Any, embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: the mermaid export of a passage solver was just ``flowchart LR``."""
    import xml.etree.ElementTree as ET

    from kgdb.documents.pipeline import DocumentOptions, load_documents

    (tmp_path / "kismet.txt").write_text("Kismet is a 1944 film directed by William "
                                         "Dieterle.\n", encoding="utf-8")
    load_documents(films, embedder, [tmp_path / "kismet.txt"],
                   options=DocumentOptions(extract="gazetteer"), progress=False)
    service = _service(films, embedder, tmp_path, monkeypatch, allow_writes=False)
    body = {"question": "Who directed Kismet?", "options": {"solver": "vector",
                                                            "passages": 1}}
    mermaid = service.call("POST", "/retrieve?format=mermaid", json=body).text
    assert re.search(r'^    (n\d+)\[\["1\. kismet#35;0000#35;000"\]\]$', mermaid, re.M), mermaid
    assert re.search(r'^    n\d+\[\("kismet"\)\]$', mermaid, re.M)
    drawn = {line.split('"')[1] for line in mermaid.splitlines() if re.match(
        r"    n\d+\[\"", line)}
    assert {"Kismet", "William Dieterle"} <= drawn  # the entities the passage mentions
    mentioned = len(re.findall(r'-->\|"mentions"\|', mermaid))
    assert mentioned == len(drawn)  # every entity drawn, from the one passage
    root = ET.fromstring(service.call("POST", "/retrieve?format=graphml", json=body).content)
    ns = "{http://graphml.graphdrawing.org/xmlns}"
    kinds = [str(d.text) for d in root.iter(f"{ns}data") if d.get("key") == "kind"]
    assert sorted(kinds) == ["document"] + ["entity"] * mentioned + ["passage"]
    page = service.call("POST", "/retrieve?format=html", json=body).text
    assert '<g class="node passage">' in page and '<g class="legend">' in page


def test_solvers_say_whether_the_server_has_an_llm(service: Service,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert service.call("GET", "/solvers").json()["llm"] is False
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert service.call("GET", "/solvers").json()["llm"] is True


def test_page_endpoints_explore_graphs_and_solvers(service: Service) -> None:
    page = service.call("GET", "/", token=None)
    assert page.status_code == 200 and "<script src=\"/ui/app.js\"" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert service.call("GET", "/ui/app.js", token=None).headers["content-type"].startswith(
        "text/javascript")
    assert service.call("GET", "/ui/tokens.json", token=None).status_code == 401
    assert service.call("GET", "/ui/..%2Ftokens.py").status_code == 404
    listed = service.call("GET", "/graphs", headers={"X-Kgdb-Graph": "elsewhere"}).json()
    assert listed["graphs"] == [service.graph] and listed["writes"] is False
    solvers = service.call("GET", "/solvers").json()["solvers"]
    pattern = next(s for s in solvers if s["name"] == "pattern")
    assert pattern["schema"]["properties"]["k"]["maximum"] == 1000
    assert next(s for s in solvers if s["name"] == "vector")["retrieval_llm"] is None
    explored = service.call("POST", "/explore", json={"id": "Kismet", "limit": 2}).json()
    assert explored["node"]["name"] == "Kismet" and "embedding" not in explored["node"][
        "properties"]
    assert explored["capped"] is True and len(explored["neighbours"]) == 2  # 3 facts
    every = service.call("POST", "/explore", json={"id": "Kismet", "limit": 10}).json()
    assert not every["capped"] and {(n["relation"], n["name"], n["outgoing"])
                                    for n in every["neighbours"]} == {
        ("directed_by", "William Dieterle", True), ("starred_actors", "Marlene Dietrich", True),
        ("release_year", "1944", True)}
    missing = service.call("POST", "/explore", json={"id": "Nobody"})
    assert missing.status_code == 404 and "no entity with id 'Nobody'" in missing.text
    assert service.call("POST", "/mentions", json={"chunks": ["none#0"]}).json() == {
        "mentions": {}}


def test_logical_form_rules_and_embeddings(service: Service, embedder: Any) -> None:
    program = ("Step1: who directed Kismet\n"
               "Action1: Retrieval(s=s1:Entity[Kismet], p=p1:directed_by, o=o1)\nOutput(o1)")
    run = service.call("POST", "/lf/run", json={"program": program})
    assert run.status_code == 200, run.text
    assert [r["value"] for r in run.json()["rows"]] == ["William Dieterle"]
    bad = service.call("POST", "/lf/run", json={"program": "Step1: x\nAction1: Retreival(s=s1)"})
    assert bad.status_code == 400 and "Retrieval" in bad.json()["error"]["message"]

    facts = {"SystolicPressure": 160, "DiastolicPressure": 95}
    judged = service.call("POST", "/rules/eval", json={"ruleset": "hypertension",
                                                      "facts": facts})
    assert judged.status_code == 200, judged.text
    assert [c["name"] for c in judged.json()["conclusions"]] == ["Grade 2 Hypertension",
                                                                 "Hypertension"]
    inline = service.call("POST", "/rules/eval", json={"rules": RULES.read_text(),
                                                      "facts": facts})
    assert [{k: v for k, v in c.items() if k != "location"} for c in
            inline.json()["conclusions"]] == [{k: v for k, v in c.items() if k != "location"}
                                              for c in judged.json()["conclusions"]]
    assert inline.json()["conclusions"][0]["location"] == "<request>:6"
    unknown = service.call("POST", "/rules/eval", json={"ruleset": "hypertensoin",
                                                       "facts": facts})
    assert unknown.status_code == 404 and "did you mean 'hypertension'" in unknown.text

    from openai import OpenAI  # the real client: the endpoint is OpenAI-shaped

    client = OpenAI(base_url=str(service.client.base_url) + "/v1",
                    api_key=service.tokens["reader"], http_client=service.client)
    reply = client.embeddings.create(model="kgdb", input=["Kismet", "Paprika"])
    assert [d.index for d in reply.data] == [0, 1]
    expected = embedder.embed(["Kismet", "Paprika"])
    assert np.allclose([d.embedding for d in reply.data], expected, atol=1e-6)


def test_dify_external_knowledge(service: Service) -> None:
    body = {"knowledge_id": service.graph, "query": "Who directed Kismet?",
            "retrieval_setting": {"top_k": 3, "score_threshold": 0.0}}
    found = service.call("POST", "/retrieval", json=body, headers={"X-Kgdb-Graph": "ignored"})
    assert found.status_code == 200, found.text
    assert found.json() == {"records": found.json()["records"]}
    denied = service.call("POST", "/retrieval", json={**body, "knowledge_id": "elsewhere"})
    assert denied.status_code == 403 and denied.json()["error_code"] == 1002
    anonymous = service.call("POST", "/retrieval", json=body, token=None)
    assert anonymous.status_code == 401 and anonymous.json()["error_code"] == 1001


# ---------------------------------------------------------------------- tenants
def test_no_endpoint_reads_another_tenant(falkordb_store: Any, embedder: Any,
                                          embedded_home: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          scripted_llm: Any) -> None:
    """On FalkorDB graphs: Neo4j Community has one user database (the database check itself
    runs on both engines in test_tokens_scopes_and_tenants)."""
    store = falkordb_store
    _load(store, embedder, FILMS, tmp_path, "films")
    for other in _falkordb_store(embedded_home):
        _load(other, embedder, SECRET, tmp_path, "secret")
        service = _service(store, embedder, tmp_path, monkeypatch, allow_writes=False,
                           other=other.graph_name)
        question = "Who directed Zorblax Saga?"
        pattern = [["Zorblax Saga", "directed_by", "UNKNOWN director 1"]]
        scripted_llm.push(json.dumps({"divided": [question], "triples": pattern}),
                          "I do not know.")
        replies = [
            service.call("POST", "/ask", json={"question": question}),
            service.call("POST", "/retrieve", json={"question": question,
                                                    "options": {"pattern": pattern}}),
            service.call("POST", "/relay/ask-evidence",
                         json={"question": question, "options": {"pattern": pattern}}),
            service.call("POST", "/lf/run", json={"program": (
                "Step1: x\nAction1: Retrieval(s=s1:Entity[Zorblax Saga], p=p1:directed_by, "
                "o=o1)\nOutput(o1)")}),
            service.call("POST", "/retrieval", json={
                "knowledge_id": service.graph, "query": question,
                "retrieval_setting": {"top_k": 10, "score_threshold": 0.0}}),
            service.call("GET", "/health"),
        ]
        for reply in replies:
            assert reply.status_code in (200, 400), reply.text
            assert not any(word in reply.text for word in SECRET_WORDS), reply.text
        # the context the model was given came from this tenant only
        for request in scripted_llm.requests:
            assert not any(w in json.dumps(request["messages"]) for w in SECRET_WORDS)
        # and the other tenant's token reads its own graph, not this one
        theirs = service.call("POST", "/retrieve", token="other", graph=other.graph_name,
                              json={"question": question, "options": {"pattern": pattern}})
        assert theirs.status_code == 200 and "Quentin Quuxman" in theirs.text
        assert service.call("GET", "/health", token="other").status_code == 403


# ---------------------------------------------------------------------- hostile input
def test_hostile_input_is_refused_or_stored_never_run(service: Service, films: Any) -> None:
    before = films.run("MATCH (n) RETURN count(n) AS n").value(0)
    for text in CORPUS.values():
        text = text[:5000]
        if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
            continue  # JSON over HTTP cannot carry a lone surrogate
        for graph in (text, "a`b", "x' OR 1=1"):
            if not graph.isascii() or any(ch in graph for ch in "\r\n\x00") or \
                    graph != graph.strip() or not graph:
                continue  # not sendable as an HTTP header
            reply = service.call("GET", "/health", graph=graph)
            assert reply.status_code in (400, 403), (graph, reply.text)
        body = {"question": text or "?", "options": {"pattern": [[text or "x", "directed_by",
                                                                 "UNKNOWN 1"]]}}
        reply = service.call("POST", "/retrieve", json=body)
        assert reply.status_code in (200, 400, 422), reply.text
        reply = service.call("POST", "/rules/eval", json={"ruleset": "hypertension",
                                                         "facts": {text or "k": text}})
        assert reply.status_code in (200, 400, 422), reply.text
        reply = service.call("POST", "/lf/run", json={"program": text or "x"})
        assert reply.status_code in (200, 400, 422), reply.text
    bad_option = service.call("POST", "/retrieve", json={"question": "q",
                                                         "options": {"solver": "drop"}})
    assert bad_option.status_code == 422
    assert films.run("MATCH (n) RETURN count(n) AS n").value(0) == before


def test_openapi_fuzz_finds_no_server_error(service: Service) -> None:
    """Schemathesis generates requests from the OpenAPI document (valid and invalid bodies,
    parameters, headers): none may end in an internal error (500). 502-504 name a failing
    engine or model, which is not what is fuzzed here."""
    import schemathesis
    from hypothesis import HealthCheck, given, settings

    schema = schemathesis.openapi.from_asgi("/openapi.json", service.app)
    headers = {"Authorization": f"Bearer {service.tokens['reader']}",
               "X-Kgdb-Graph": service.graph}
    failures: list[str] = []
    fuzzed = []
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path in ("/ask", "/relay/ask"):  # the LLM's: tested with the scripted one
            continue
        fuzzed.append(operation.path)

        @given(operation.as_strategy())
        @settings(max_examples=15, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case: Any) -> None:
            response = case.call(headers=headers)
            if response.status_code == 500:
                failures.append(f"{case.method} {case.path}: {response.text[:200]}")

        run()
    assert len(fuzzed) >= 9
    assert not failures, failures[:5]


# ---------------------------------------------------------------------- restarts
def test_service_survives_the_database_restarting(embedder: Any, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """kill -9 of the embedded server under a running service: the next request restarts it
    (a private KGDB_HOME: the session's server is shared by other tests)."""
    from kgdb.engine import connect
    from kgdb.engine.embedded import EmbeddedServer

    monkeypatch.setenv("KGDB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KGDB_GRAPH", "films")
    server = EmbeddedServer(tmp_path / "home")
    try:
        with connect(Settings.from_env()) as films:
            _load(films, embedder, FILMS, tmp_path, "films")
            service = _service(films, embedder, tmp_path, monkeypatch, allow_writes=False)
            body = {"question": "q", "options": {"pattern": PATTERN["triples"]}}
            assert service.call("POST", "/retrieve", json=body).status_code == 200
            state = server.status()
            assert state is not None
            os.kill(state.pid, signal.SIGKILL)
            time.sleep(0.5)
            reply = service.call("POST", "/retrieve", json=body)
            assert reply.status_code == 200, reply.text
            assert reply.json()["evidence"][0]["tail"] == "William Dieterle"
            assert server.status().pid != state.pid  # type: ignore[union-attr]
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("KGDB_LLM_RETRIES", "0")
    yield
