"""The hostile suite against the service (HTTP and MCP) and the LLM client: a careless or
hostile client, a hostile model (the scripted OpenAI server) and a hostile tenant. Each case
ends in the documented refusal or a correct answer; anything else counts as a failure in the
per-surface figures printed at the end of the run (tests/support/hostile.py).

Classes (issue 24): errors that say what, never how; read-only tenants without side
effects; body limits and auth before the body; per-tenant embedding caches, a fair model and
a whole-request deadline; NaN/Infinity and broken text refused as renderable 422s; model
replies of any shape as 502 / one line; every list capped by --max-rows.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.live.test_hostile_surfaces import hostile_figures  # noqa: F401 (prints the tally)
from tests.live.test_serve import FILMS, PATTERN, Service, _load, _service
from tests.support.hostile import TALLY

pytestmark = pytest.mark.live

SECRET_KEY = "sk-LEAKED-upstream-key-123"
PASSWORD = "s3cret-pass"


class Surface:
    """Counts one surface's cases for the printed figures: each check is correct or not."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.failures: list[str] = []
        self.correct = 0

    def check(self, ok: bool, what: str) -> None:
        if ok:
            self.correct += 1
        else:
            self.failures.append(what)

    def done(self) -> None:
        TALLY.add(self.name, verbatim=0, rejected=self.correct, failures=len(self.failures))
        assert not self.failures, self.failures[:8]


def _engine(service: Service) -> str:
    return "neo4j" if service.graph == "neo4j" else "falkordb"


def _clean(reply: Any, *secrets: str) -> bool:
    """An error body that says what, never how: one line, a request id matching the header,
    none of the secrets, no URL, no path, no port."""
    text = reply.text
    try:
        error = reply.json()["error"]
    except (ValueError, KeyError):
        return False
    message = error["message"]
    return ("\n" not in message and error.get("request_id") == reply.headers.get("x-request-id")
            and not any(s and s in text for s in secrets) and "://" not in text
            and "Traceback" not in text and "/tmp/" not in text and "/work/" not in text)


@pytest.fixture
def service(films: Any, embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
            ) -> Service:
    return _service(films, embedder, tmp_path, monkeypatch, allow_writes=False)


@pytest.fixture
def films(cli_store: Any, embedder: Any, tmp_path: Path) -> Any:
    _load(cli_store, embedder, FILMS, tmp_path, "films")
    return cli_store


def _leaky_llm(scripted_llm: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """OPENAI_BASE_URL with credentials in it (as a careless operator writes it)."""
    url = scripted_llm.base_url.replace("http://", f"http://admin:{PASSWORD}@")
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    return url


# ---------------------------------------------------------------------- errors: what, not how
def test_llm_failures_say_what_never_how(service: Service, scripted_llm: Any,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    url = _leaky_llm(scripted_llm, monkeypatch)
    port = url.rsplit(":", 1)[1].split("/")[0]
    surface = Surface(f"http errors: LLM failures [{_engine(service)}]")
    scripted_llm.default = {"status": 401, "content": f"invalid key {SECRET_KEY} at {url}"}
    for solver in ("simgrag", "lf", "hig", "cqr"):
        for path in ("/ask", "/relay/ask"):
            reply = service.call("POST", path, json={"question": "Who directed Kismet?",
                                                     "options": {"solver": solver}})
            llm_first = solver in ("simgrag", "lf")
            if path == "/relay/ask" and reply.status_code == 200 and "error" in reply.json()[0]:
                # a relay's refusal is one row {error} (APOC shows no error body)
                relayed = reply.json()[0]["error"]
                surface.check(not any(s in relayed for s in (SECRET_KEY, PASSWORD, port))
                              and "://" not in relayed and "\n" not in relayed
                              and (not llm_first or relayed.startswith(
                                  "the LLM endpoint failed (HTTP 401) (status 502, request ")),
                              f"{path} {solver}: {relayed[:200]}")
                continue
            if reply.status_code == 200:  # a solver that answered without the model
                surface.check(SECRET_KEY not in reply.text, f"{path} {solver}: leaked")
                continue
            # simgrag and lf ask the model first; hig and cqr may stop earlier (no index)
            surface.check(reply.status_code in (400, 502) and _clean(reply, SECRET_KEY,
                                                                    PASSWORD, port)
                          and (not llm_first or reply.json()["error"]["message"]
                               == "the LLM endpoint failed (HTTP 401)"),
                          f"{path} {solver}: {reply.status_code} {reply.text[:200]}")
    reply = service.call("POST", "/retrieve", json={"question": "Who directed Kismet?"})
    surface.check(reply.status_code == 502 and _clean(reply, SECRET_KEY, PASSWORD, port),
                  f"/retrieve: {reply.text[:200]}")
    # the upstream body reached the server's log, not the client
    surface.done()


REPLY_SHAPES: dict[str, Any] = {
    "usage as text": {"raw": json.dumps({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}}],
        "usage": {"prompt_tokens": "many", "completion_tokens": [1]}})},
    "usage huge float": {"raw": json.dumps({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}}],
        "usage": {"prompt_tokens": 1e308, "completion_tokens": -5}})},
    "content an object": {"raw": json.dumps({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": {"a": 1}}}]})},
    "content a list": {"raw": json.dumps({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": [1, 2]}}]})},
    "content null": {"raw": json.dumps({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None}}]})},
    "no choices": {"raw": json.dumps({"choices": []})},
    "choices a string": {"raw": json.dumps({"choices": "none"})},
    "deep nesting": {"raw": '{"choices": ' + "[" * 50_000 + "]" * 50_000 + "}"},
    "not JSON": {"raw": "<html>502 Bad Gateway</html>"},
    "answer deep JSON": "[" * 50_000 + "]" * 50_000,
    "answer wrong JSON": json.dumps([1, 2, {"divided": 3}]),
    "answer lone surrogate": '{"divided": ["\\ud800"], "triples": [["\\ud800", "r", "x"]]}',
}


def test_model_replies_of_any_shape_are_502_or_an_answer(service: Service, scripted_llm: Any
                                                         ) -> None:
    from kgdb.errors import LlmError
    from kgdb.llm.client import ChatClient, OutputParseError

    surface = Surface(f"http: model reply shapes [{_engine(service)}]")
    for shape, step in REPLY_SHAPES.items():
        scripted_llm.default = step
        for solver in ("simgrag", "lf", "hig", "cqr"):
            reply = service.call("POST", "/ask", json={"question": "Who directed Kismet?",
                                                       "options": {"solver": solver}})
            # 400: a solver refused before the model (cqr without triple texts)
            ok = reply.status_code == 200 or (reply.status_code in (400, 502) and _clean(reply))
            surface.check(ok, f"{shape} / {solver}: {reply.status_code} {reply.text[:160]}")
    surface.done()
    # the client every front end uses (the CLI's too): an LlmError, never another exception
    client_surface = Surface("llm client: reply shapes")

    def parse(text: str) -> Any:
        value = json.loads(text)
        if not isinstance(value, dict):
            raise OutputParseError("not an object")
        return value["divided"][0].upper()

    for shape, step in REPLY_SHAPES.items():
        scripted_llm.default = step
        try:
            ChatClient().complete_parsed([{"role": "user", "content": "q"}], parse, attempts=2)
            client_surface.check(True, shape)
        except LlmError as exc:
            client_surface.check("\n" not in str(exc) and "Traceback" not in str(exc), shape)
        except Exception as exc:
            client_surface.check(False, f"{shape}: {type(exc).__name__}: {exc}"[:200])
    client_surface.done()


def test_error_bodies_hold_no_paths_ports_or_engine_internals(service: Service) -> None:
    surface = Surface(f"http errors: internals [{_engine(service)}]")
    health = service.call("GET", "/health")
    surface.check(health.status_code == 200 and "address" not in health.json()["engine"]
                  and not any(str(p) in health.text for p in _ports()), health.text[:200])
    judged = service.call("POST", "/rules/eval", json={
        "ruleset": "hypertension", "facts": {"SystolicPressure": 160}})
    locations = [c["location"] for c in judged.json()["conclusions"]]
    surface.check(all(loc.startswith("hypertension:") for loc in locations)
                  and "dsl/examples" not in judged.text, str(locations))
    # an engine error (a statement the engine refuses) says what, not the engine's words
    program = "Step1: x\nAction1: Retrieval(s=s1:Entity[Kismet], p=p1:directed_by, o=o1)\n" \
              "Output(o1)"
    reply = service.call("POST", "/lf/run", json={"program": program},
                         headers={"X-Request-Id": "injected\nline"})
    surface.check(reply.status_code == 200 and reply.headers["x-request-id"] != "injected",
                  "request id taken from the client")
    for path, body in (("/nowhere", None), ("/rules/eval", {"ruleset": "x" * 300})):
        reply = service.call("POST", path, json=body)
        surface.check(reply.status_code in (404, 405, 422) and _clean(reply),
                      f"{path}: {reply.text[:200]}")
    surface.done()


def _ports() -> list[int]:
    return [int(v.rsplit(":", 1)[1]) for k, v in os.environ.items()
            if k in ("KGDB_URI", "NEO4J_URI") and v.rsplit(":", 1)[-1].isdigit()]


def test_engine_failures_are_fixed_sentences() -> None:
    """The mapping itself, for failures a test cannot cause on demand (a crash, a refused
    procedure): the engine's words (address, port, procedure) never reach the client."""
    from kgdb import errors
    from kgdb.serve.errors import public

    surface = Surface("service error mapping")
    cases = [
        errors.StatementError("Neo4j rejected the statement (Neo.ClientError.Procedure."
                              "ProcedureNotFound): There is no procedure db.idx.vector.query "
                              "at bolt://127.0.0.1:7687"),
        errors.EngineConnectionError("cannot connect to FalkorDB at 127.0.0.1:40123: refused"),
        errors.EngineCrashError("crashed (log: /home/kgdb/.kgdb/falkordb/falkordb.log)"),
        errors.QueryTimeoutError("statement timed out on localhost:7687"),
        errors.LlmError(f"the LLM at http://u:{PASSWORD}@h/v1 answered HTTP 500: {SECRET_KEY}",
                        "the LLM endpoint failed (HTTP 500)"),
        errors.ConfigError("/srv/kgdb/rules/hypertension.rules: cannot read (10.0.0.5:8080)"),
        errors.EmbeddingError("embedding endpoint https://api.example.com/v1 failed"),
        RuntimeError(f"bug with {SECRET_KEY}"),
    ]
    for exc in cases:
        status, message = public(exc)
        leaked = [w for w in ("127.0.0.1", "7687", "40123", "/home/", "db.idx", PASSWORD,
                              SECRET_KEY, "/srv/", "10.0.0.5", "https://") if w in message]
        surface.check(not leaked and "\n" not in message and status >= 400,
                      f"{type(exc).__name__}: {message}")
    surface.done()


# ---------------------------------------------------------------------- tenants
def test_reads_never_create_a_graph_and_stores_are_bounded(
        falkordb_store: Any, embedder: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A `*` token on a read-only server: 60 requests naming new graphs are 404s; no graph
    is created, no store stays open beyond the bound, no descriptor leaks."""
    from kgdb.config import Settings
    from kgdb.engine import connect
    from kgdb.serve.tokens import TokenFile

    _load(falkordb_store, embedder, FILMS, tmp_path, "films")
    service = _service(falkordb_store, embedder, tmp_path, monkeypatch, allow_writes=False)
    tokens = TokenFile.load(tmp_path / "tokens.json")
    service.tokens["any"] = tokens.add("any", ("read",), ("*",))
    service.app.state.config.tokens = TokenFile.load(tmp_path / "tokens.json")
    surface = Surface("http tenants: reads create nothing [falkordb]")
    before = set(falkordb_store.graphs())
    service.call("GET", "/health", token="any")  # the first store opens its connection
    fds = len(os.listdir("/proc/self/fd"))
    for i in range(60):
        reply = service.call("GET", "/health", token="any", graph=f"probe{i}")
        surface.check(reply.status_code == 404 and "no graph 'probe" in reply.text
                      and _clean(reply), reply.text[:200])
        reply = service.call("POST", "/v1/embeddings", token="any", graph=f"probe{i}",
                             json={"input": "x"})
        surface.check(reply.status_code == 404, reply.text[:120])
    surface.check(set(falkordb_store.graphs()) == before,
                  f"graphs created: {set(falkordb_store.graphs()) - before}")
    surface.check(len(os.listdir("/proc/self/fd")) <= fds + 2,
                  f"descriptors {fds} -> {len(os.listdir('/proc/self/fd'))}")
    # existing graphs: at most max_tenants stores open at once, the rest closed
    tenants = service.app.state.tenants
    tenants.limit = 3
    names = [f"tenant_{i}" for i in range(6)]
    for name in names:
        with connect(dataclasses.replace(Settings.from_env(), graph=name)) as s:
            s.run("CREATE (:Entity {id: 'x', name: 'x'})", write=True)
    try:
        for name in names * 2:
            reply = service.call("GET", "/health", token="any", graph=name)
            surface.check(reply.status_code == 200, reply.text[:120])
            surface.check(tenants.open_count() <= 3, f"{tenants.open_count()} open")
    finally:
        for name in names:
            with connect(dataclasses.replace(Settings.from_env(), graph=name)) as s:
                s.drop()
    surface.done()


def test_a_missing_graph_is_404_on_every_engine(service: Service, tmp_path: Path) -> None:
    """A `*` token naming a graph (FalkorDB) or database (Neo4j) that does not exist: 404
    naming only what the client sent (not the server's other databases), nothing created."""
    from kgdb.serve.tokens import TokenFile

    tokens = TokenFile.load(tmp_path / "tokens.json")
    service.tokens["any"] = tokens.add("any", ("read",), ("*",))
    service.app.state.config.tokens = TokenFile.load(tmp_path / "tokens.json")
    surface = Surface(f"http tenants: a missing graph [{_engine(service)}]")
    for name in ("nosuchgraph", "probe-2", "x.y"):
        for method, path, body in (("GET", "/health", None), ("GET", "/procedures", None),
                                   ("POST", "/retrieve", {"question": "q"}),
                                   ("POST", "/v1/embeddings", {"input": "x"})):
            reply = service.call(method, path, token="any", graph=name, json=body)
            surface.check(reply.status_code == 404 and _clean(reply)
                          and reply.json()["error"]["message"].endswith(
                              f"{name!r} on this server") and "'neo4j'" not in reply.text,
                          f"{name} {path}: {reply.status_code} {reply.text[:160]}")
    surface.check(service.call("GET", "/health", token="any").status_code == 200, "own graph")
    surface.done()


def test_embedding_caches_are_per_tenant_and_requests_bounded(service: Service,
                                                              embedder: Any) -> None:
    from kgdb.serve.operations import MAX_EMBED_BYTES, MAX_TEXTS

    surface = Surface(f"http embeddings: tenants and limits [{_engine(service)}]")
    ops = service.app.state.operations
    word = f"zorblax {time.time_ns()}"
    persistent = embedder.cache.count()
    reply = service.call("POST", "/v1/embeddings", json={"input": [word]})
    surface.check(reply.status_code == 200, reply.text[:120])
    mine = ops.model().for_tenant(service.graph)
    other = ops.model().for_tenant("someone_else")
    surface.check(word in mine._cache and word not in other._cache,
                  "a tenant's text is in another tenant's cache")
    surface.check(embedder.cache.count() == persistent,
                  "a read request wrote the loaders' persistent cache")
    for body, status in (({"input": ["x"] * (MAX_TEXTS + 1)}, 400),
                         ({"input": ["y" * 60_000] * 5}, 413),
                         ({"input": []}, 400),
                         ({"input": "z" * 64_001}, 400)):
        reply = service.call("POST", "/v1/embeddings", json=body)
        surface.check(reply.status_code == status and _clean(reply),
                      f"{len(json.dumps(body))} bytes: {reply.status_code} {reply.text[:120]}")
    surface.check(MAX_EMBED_BYTES < 5 * 60_000, "the byte limit is below the test's request")
    surface.done()


def test_fair_model_and_the_whole_request_deadline(embedder: Any) -> None:
    """A large request does not hold the model until it is done: a small one that arrives
    while it runs finishes first; and a request past its deadline ends (504) instead of
    waiting on."""
    from kgdb.errors import QueryTimeoutError
    from kgdb.serve.embedding import SharedModel, deadline

    surface = Surface("service embedder: fairness and deadline")
    model = SharedModel(embedder)
    big = [f"long text number {i} " + "word " * 200 for i in range(160)]
    finished: list[str] = []
    started = threading.Event()

    def large() -> None:
        started.set()
        model.for_tenant("a").embed(big)
        finished.append("large")

    thread = threading.Thread(target=large)
    thread.start()
    started.wait()
    time.sleep(0.3)
    model.for_tenant("b").embed(["a small question"])
    finished.append("small")
    thread.join()
    surface.check(finished == ["small", "large"], f"order {finished}")
    try:
        with deadline(0.05):
            model.for_tenant("c").embed([t + " again" for t in big])
        surface.check(False, "a request ran on past its deadline")
    except QueryTimeoutError as exc:
        surface.check("timeout" in str(exc), str(exc))
    surface.done()


def test_timeout_holds_for_the_whole_request(service: Service) -> None:
    """--timeout bounds a request, not only each statement: past it the request ends with a
    504 whatever it was doing (waiting for the model, running its next statement)."""
    surface = Surface(f"http --timeout for the whole request [{_engine(service)}]")
    service.app.state.config.timeout_s = 0.000001
    program = "Step1: x\nAction1: Retrieval(s=s1:Entity[Kismet], p=p1:directed_by, o=o1)\n" \
              "Output(o1)"
    for path, body in (("/v1/embeddings", {"input": [f"text {i}" for i in range(64)]}),
                       ("/lf/run", {"program": program}),
                       ("/retrieve", {"question": "q", "options": {"pattern":
                                                                   PATTERN["triples"]}})):
        reply = service.call("POST", path, json=body)
        surface.check(reply.status_code == 504 and _clean(reply),
                      f"{path}: {reply.status_code} {reply.text[:160]}")
    service.app.state.config.timeout_s = 20
    reply = service.call("POST", "/lf/run", json={"program": program})
    surface.check(reply.status_code == 200, reply.text[:160])
    surface.done()


# ---------------------------------------------------------------------- bodies
def test_body_limit_and_auth_come_before_the_body(films: Any, embedder: Any, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """On a real port: an unauthenticated 80 MB upload is answered 401 before its body is
    sent; an authenticated one over --max-body 413 from its Content-Length; a chunked body
    that grows past the limit 413."""
    from tests.support.live_server import LiveServer

    service = _service(films, embedder, tmp_path, monkeypatch, allow_writes=False)
    service.app.state.config.max_body = 64 * 1024
    surface = Surface(f"http bodies: limits before reading [{_engine(service)}]")
    with LiveServer(service.app) as live:
        port = int(live.url.rsplit(":", 1)[1])

        def ask(headers: str, body: bytes = b"") -> str:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(f"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\n{headers}\r\n"
                             .encode() + body)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                return data.decode("latin-1").split("\r\n", 1)[0]

        big = "Content-Type: application/json\r\nContent-Length: 80000000\r\n"
        surface.check(" 401 " in ask(big), "unauthenticated upload not refused first")
        auth = f"Authorization: Bearer {service.tokens['reader']}\r\n"
        graph = f"X-Kgdb-Graph: {service.graph}\r\n"
        surface.check(" 413 " in ask(big + auth + graph), "oversized upload not refused")
        chunked = (b"%x\r\n" % 100_000) + b"[" * 100_000 + b"\r\n0\r\n\r\n"
        status = ask("Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                     + auth + graph, chunked)
        surface.check(" 413 " in status, f"chunked: {status}")
        small = json.dumps({"input": "Kismet"}).encode()
        status = ask(f"Content-Type: application/json\r\nContent-Length: {len(small)}\r\n"
                     + auth + graph, small)
        surface.check(" 200 " in status, f"a small request: {status}")
    surface.done()


# ---------------------------------------------------------------------- numbers and text
NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e999"]


def test_non_finite_numbers_are_a_renderable_422(service: Service) -> None:
    surface = Surface(f"http input: NaN and Infinity [{_engine(service)}]")
    headers = {"Content-Type": "application/json"}
    for literal in NON_FINITE:
        for path, body in (
                ("/retrieve", '{"question": "q", "options": {"alpha": %s}}'),
                ("/retrieve", '{"question": "q", "options": {"hig_lambda": %s}}'),
                ("/retrieve", '{"question": "q", "options": {"k": %s}}'),
                ("/ask", '{"question": "q", "options": {"alpha": %s}}'),
                ("/retrieval", '{"knowledge_id": "%s", "query": "q", "retrieval_setting": '
                               '{"top_k": 3, "score_threshold": %%s}}' % service.graph),
                ("/rules/eval", '{"ruleset": "hypertension", "facts": {"SystolicPressure": %s}}'),
        ):
            reply = service.call("POST", path, content=body % literal, headers=headers)
            try:
                reply.json()
                renderable = True
            except ValueError:
                renderable = False
            ok = reply.status_code in (200, 422) and renderable and (
                reply.status_code == 200 or "Traceback" not in reply.text)
            surface.check(ok and (path != "/retrieve" or reply.status_code == 422),
                          f"{path} {literal}: {reply.status_code} {reply.text[:160]}")
    surface.done()


BROKEN_TEXT = {"lone surrogate": "\\ud800", "NUL": "\\u0000", "U+0001": "\\u0001",
               "escape": "\\u001b[31m", "C1": "\\u0085"}


def test_broken_text_is_refused_with_its_place(service: Service) -> None:
    surface = Surface(f"http input: text contract [{_engine(service)}]")
    headers = {"Content-Type": "application/json"}
    for case, escaped in BROKEN_TEXT.items():
        bodies = {
            "/ask": '{"question": "who %s"}',
            "/retrieve": '{"question": "q", "options": {"pattern": [["a%s", "r", "x"]]}}',
            "/v1/embeddings": '{"input": ["ok", "x%s"]}',
            "/lf/run": '{"program": "Step1: %s"}',
            "/rules/eval": '{"ruleset": "hypertension", "facts": {"k%s": 1}}',
            "/retrieval": '{"knowledge_id": "%s", "query": "q%%s", "retrieval_setting": '
                          '{"top_k": 1}}' % service.graph,
        }
        for path, body in bodies.items():
            reply = service.call("POST", path, content=body % escaped, headers=headers)
            text = reply.text
            ok = reply.status_code == 422 and ("surrogate" in text or "character" in text)
            surface.check(ok, f"{case} {path}: {reply.status_code} {text[:160]}")
    surface.done()


# ---------------------------------------------------------------------- --max-rows
def test_max_rows_caps_every_list(films: Any, embedder: Any, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    many = "".join(f"Prolific|directed_by_many|Film {i}\n" for i in range(12))
    _load(films, embedder, many, tmp_path, "many")
    service = _service(films, embedder, tmp_path, monkeypatch, allow_writes=False)
    service.app.state.config.max_rows = 3
    surface = Surface(f"http --max-rows [{_engine(service)}]")
    program = "Step1: x\nAction1: Retrieval(s=s1:Entity[Prolific], p=p1:directed_by_many, " \
              "o=o1)\nOutput(o1)"
    run = service.call("POST", "/lf/run", json={"program": program})
    out = run.json()
    longest = _longest_list(out)
    surface.check(run.status_code == 200 and out.get("truncated") is True and longest <= 3,
                  f"/lf/run: longest list {longest}, truncated {out.get('truncated')}")
    body = {"question": "q", "options": {"pattern": PATTERN["triples"], "k": 1000}}
    got = service.call("POST", "/retrieve", json=body).json()
    surface.check(_longest_list(got) <= 3, f"/retrieve: longest list {_longest_list(got)}")
    csv_reply = service.call("POST", "/lf/run?format=csv", json={"program": program})
    surface.check(csv_reply.headers.get("x-kgdb-truncated") == "true"
                  and len(csv_reply.text.splitlines()) == 4, csv_reply.text[:200])
    small = service.call("POST", "/lf/run?format=csv", json={"program": program.replace(
        "Prolific", "Kismet").replace("directed_by_many", "directed_by")})
    surface.check(small.headers.get("x-kgdb-truncated") == "false", small.text[:100])
    surface.done()


def _longest_list(value: Any) -> int:
    if isinstance(value, dict):
        return max([0, *(_longest_list(v) for v in value.values())])
    if isinstance(value, list):
        return max([len(value), *(_longest_list(v) for v in value)])
    return 0


def test_csv_neutralises_full_width_formulas() -> None:
    from kgdb.serve.app import _cell

    surface = Surface("http csv cells")
    for value in ("=1+1", "+1", "-1", "@SUM(A1)", "\uff1dcmd", "\uff0b1", "\uff20x", "\t=1"):
        surface.check(str(_cell(value)).startswith("'"), value)
    surface.check(_cell("Kismet") == "Kismet", "plain text changed")
    surface.done()


# ---------------------------------------------------------------------- MCP
def test_mcp_tools_map_errors_and_text_like_http(films: Any, embedder: Any, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 scripted_llm: Any) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from kgdb.config import Settings
    from kgdb.serve.app import ServeConfig
    from kgdb.serve.mcp import build_server
    from kgdb.serve.tokens import TokenFile
    from tests.conftest import engine_env

    for name, value in engine_env(films).items():
        monkeypatch.setenv(name, value)
    url = _leaky_llm(scripted_llm, monkeypatch)
    scripted_llm.default = {"status": 401, "content": f"bad key {SECRET_KEY}"}
    many = "".join(f"Prolific|directed_by_many|Film {i}\n" for i in range(12))
    _load(films, embedder, many, tmp_path, "many")
    config = ServeConfig(Settings.from_env(), TokenFile(tmp_path / "t.json", []), max_rows=3)
    server = build_server(config, embedder=embedder)
    surface = Surface(f"mcp tools [{'neo4j' if films.dialect.NAME == 'neo4j' else 'falkordb'}]")

    async def call(name: str, args: dict[str, Any]) -> tuple[bool, str]:
        try:
            result = await server.call_tool(name, args)
        except ToolError as exc:
            return False, str(exc)
        return True, json.dumps(getattr(result, "structured_content", None)
                                or [c.text for c in result.content])

    async def run() -> None:
        ok, text = await call("ask", {"question": "Who directed Kismet?"})
        surface.check(not ok and "the LLM endpoint failed (HTTP 401) (request " in text
                      and SECRET_KEY not in text and PASSWORD not in text and url not in text
                      and "\n" not in text, text)
        for case, raw in (("surrogate", "a\ud800b"), ("NUL", "a\x00b"), ("U+0001", "\x01")):
            ok, text = await call("retrieve", {"question": raw})
            surface.check(not ok and "arguments.question" in text and "\n" not in text,
                          f"{case}: {text[:120]}")
            ok, text = await call("evaluate_rules", {"ruleset": "hypertension",
                                                     "facts": {raw: 1}})
            surface.check(not ok and "arguments.facts" in text, f"{case} facts: {text[:120]}")
        ok, text = await call("health", {})
        surface.check(ok and "address" not in text, text[:200])
        program = ("Step1: x\nAction1: Retrieval(s=s1:Entity[Prolific], "
                   "p=p1:directed_by_many, o=o1)\nOutput(o1)")
        ok, text = await call("run_logical_form", {"program": program})
        surface.check(ok and '"truncated": true' in text and _longest_list(json.loads(text))
                      <= 3, text[:200])

    asyncio.run(run())
    surface.done()


# ---------------------------------------------------------------------- the CLI's model
def test_cli_ask_with_any_reply_shape_is_one_line(films: Any, scripted_llm: Any) -> None:
    """`kgdb ask` against a hostile model: an answer, or exit 1 with one line — never
    `kgdb: internal error` (7 reply shapes ended in one before)."""
    from click.testing import CliRunner

    from kgdb.cli import cli

    surface = Surface(f"cli ask: model reply shapes [{films.dialect.NAME}]")
    for shape, step in REPLY_SHAPES.items():
        scripted_llm.default = step
        result = CliRunner().invoke(cli, ["ask", "Who directed Kismet?"])
        lines = [line for line in result.output.splitlines() if line.startswith("kgdb:")]
        ok = result.exit_code == 0 or (result.exit_code == 1 and len(lines) == 1
                                       and "internal error" not in result.output)
        surface.check(ok, f"{shape}: exit {result.exit_code}: {result.output[-300:]}")
    surface.done()
