"""``kgdb serve`` as a DBA runs it (issue 35, items 3 and 5): tokens rotated without a restart,
``/metrics`` in Prometheus' format, one audit record per request, streamed answers bounded in
time and memory, cancelled with their client, free of forged events, and SIGTERM draining.

Most tests run on both engines through the ``store`` fixture; the subprocess tests (SIGTERM,
SIGHUP) on the embedded one."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kgdb.config import Settings
from kgdb.serve.app import ServeConfig, create_app
from kgdb.serve.tokens import TokenFile
from tests.conftest import engine_env
from tests.live.test_serve import FILMS, PATTERN, Service, _events, _load
from tests.support.live_server import LiveServer

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Who directed Kismet?"
ANSWER = "William Dieterle directed Kismet [1]."


def _ops_service(store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any,
                 **config: Any) -> Service:
    for name, value in engine_env(store).items():
        monkeypatch.setenv(name, value)
    graph = "neo4j" if store.dialect.NAME == "neo4j" else store.graph_name
    path = tmp_path / "tokens.json"
    tokens = TokenFile(path, [])
    secrets = {"reader": tokens.add("reader", ("read",), (graph,))}
    options = {"timeout_s": 20.0, "max_rows": 50, "audit_log": str(tmp_path / "audit.log"),
               **config}
    app = create_app(ServeConfig(Settings.from_env(), TokenFile.load(path), **options),
                     embedder=embedder)
    return Service(app, secrets, graph, None)


@pytest.fixture
def films(cli_store: Any, embedder: Any, tmp_path: Path) -> Any:
    _load(cli_store, embedder, FILMS, tmp_path, "films")
    return cli_store


def _audit(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "audit.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _metrics(service: Service) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    reply = service.call("GET", "/metrics")
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(reply.text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _value(metrics: dict[Any, float], name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in metrics.items()
               if n == name and all(dict(ls).get(k) == w for k, w in labels.items()))


# ---------------------------------------------------------------------- tokens
def test_tokens_rotate_without_a_restart(films: Any, embedder: Any, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A token added to the file works at the next request, a removed one is 401 at once,
    each reload is one audit line; a broken file is refused and the old tokens stay."""
    service = _ops_service(films, tmp_path, monkeypatch, embedder)
    graph = service.graph
    path = tmp_path / "tokens.json"
    new = "kgdb_" + "n" * 40
    assert service.call("GET", "/health", token=None,
                        headers={"Authorization": f"Bearer {new}"}).status_code == 401
    TokenFile.load(path).add("newcomer", ("read",), (graph,), secret=new)  # as kgdb tokens add
    assert service.call("GET", "/health", token=None,
                        headers={"Authorization": f"Bearer {new}"}).status_code == 200
    TokenFile.load(path).remove("reader")  # as kgdb tokens remove
    revoked = service.call("GET", "/health")
    assert revoked.status_code == 401 and "unknown token" in revoked.text
    reloads = [r for r in _audit(tmp_path) if r["event"] == "tokens"]
    assert [(r["result"], r["added"], r["removed"], r["trigger"]) for r in reloads] == [
        ("reloaded", ["newcomer"], [], "change"), ("reloaded", [], ["reader"], "change")]
    assert new not in (tmp_path / "audit.log").read_text()
    # a file that became invalid: refused once, the tokens in use stay
    text = path.read_text()
    path.write_text("{not json")
    assert service.call("GET", "/health", token=None,
                        headers={"Authorization": f"Bearer {new}"}).status_code == 200
    assert service.call("GET", "/health", token=None,
                        headers={"Authorization": f"Bearer {new}"}).status_code == 200
    refused = [r for r in _audit(tmp_path) if r["event"] == "tokens"][2:]
    assert len(refused) == 1 and refused[0]["result"] == "refused"
    assert "not a kgdb token file" in refused[0]["reason"]
    # SIGHUP's path: read at once, even when the file looks unchanged
    path.write_text(text)
    os.chmod(path, 0o600)
    service.app.state.reload_tokens("signal")
    assert [r for r in _audit(tmp_path) if r["event"] == "tokens"][-1]["trigger"] == "signal"
    metrics = _metrics(Service(service.app, {"reader": new}, graph, None))
    assert _value(metrics, "kgdb_token_reloads_total", result="reloaded") == 3
    assert _value(metrics, "kgdb_token_reloads_total", result="refused") == 1
    assert _value(metrics, "kgdb_tokens") == 1  # newcomer alone


def test_sighup_reloads_the_tokens_of_a_running_server(films: Any, tmp_path: Path) -> None:
    """A real ``kgdb serve`` process: a token added in place within the same second and size
    (so the file looks unchanged) works after SIGHUP."""
    path = tmp_path / "tokens.json"
    graph = films.graph_name if films.dialect.NAME == "falkordb" else "neo4j"
    tokens = TokenFile(path, [])
    old = tokens.add("old", ("read",), (graph,), secret="kgdb_" + "o" * 40)
    with _serve_process(films, tmp_path, []) as (url, process):
        assert _get(url, "/health", old, graph).status_code == 200
        stamp = path.stat()
        data = json.loads(path.read_text())
        data["tokens"][0]["name"] = "new"  # same length: "old" -> "new"
        new = "kgdb_" + "p" * 40
        from kgdb.serve.tokens import digest

        data["tokens"][0]["sha256"] = digest(new)
        path.write_text(json.dumps(data, indent=2))
        os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        assert path.stat().st_size == stamp.st_size
        assert _get(url, "/health", new, graph).status_code == 401  # not seen without a signal
        process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while _get(url, "/health", new, graph).status_code != 200:
            assert time.monotonic() < deadline, "SIGHUP did not reload the tokens"
            time.sleep(0.1)
        assert _get(url, "/health", old, graph).status_code == 401
    records = _audit(tmp_path)
    assert any(r["event"] == "tokens" and r["trigger"] == "signal" for r in records)


# ---------------------------------------------------------------------- metrics and audit
def test_metrics_and_one_audit_record_per_request(films: Any, embedder: Any, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   scripted_llm: Any) -> None:
    service = _ops_service(films, tmp_path, monkeypatch, embedder)
    body = {"question": QUESTION, "options": {"solver": "vector"}}
    for _ in range(3):
        assert service.call("POST", "/retrieve", json=body).status_code == 200
    scripted_llm.push({"content": json.dumps(PATTERN), "prompt_tokens": 50,
                       "completion_tokens": 20},
                      {"content": ANSWER, "prompt_tokens": 70, "completion_tokens": 9})
    assert service.call("POST", "/ask", json={"question": QUESTION}).status_code == 200
    scripted_llm.push(json.dumps(PATTERN), {"status": 400, "content": "upstream"})
    assert service.call("POST", "/ask", json={"question": QUESTION}).status_code == 502
    assert service.call("GET", "/health", token=None).status_code == 401
    assert service.call("GET", "/no/such/path").status_code == 404
    metrics = _metrics(service)
    assert _value(metrics, "kgdb_http_requests_total", endpoint="/retrieve", solver="vector",
                  status="200", method="POST") == 3
    assert _value(metrics, "kgdb_http_request_duration_seconds_count", endpoint="/retrieve",
                  solver="vector") == 3
    assert _value(metrics, "kgdb_http_request_duration_seconds_bucket", endpoint="/retrieve",
                  solver="vector", le="+Inf") == 3
    assert _value(metrics, "kgdb_http_requests_total", endpoint="/ask", solver="pattern",
                  status="502") == 1
    assert _value(metrics, "kgdb_http_errors_total", endpoint="/ask", status="502") == 1
    assert _value(metrics, "kgdb_http_requests_total", endpoint="/health", status="401") == 1
    assert _value(metrics, "kgdb_http_requests_total", endpoint="other", status="404") == 1
    assert _value(metrics, "kgdb_llm_tokens_total", endpoint="/ask", direction="in") == 120
    assert _value(metrics, "kgdb_llm_tokens_total", endpoint="/ask", direction="out") == 29
    assert _value(metrics, "kgdb_llm_requests_total", endpoint="/ask") == 2
    # the same question three times: the tenant's embedding cache answered twice
    assert _value(metrics, "kgdb_cache_hits_total", cache="embeddings") >= 2
    assert _value(metrics, "kgdb_http_requests_in_flight") == 1  # this scrape
    assert _value(metrics, "process_resident_memory_bytes") > 0
    records = [r for r in _audit(tmp_path) if r["event"] == "request"]
    assert len(records) == 7  # every request but the scrape
    first = records[0]
    assert {k: first[k] for k in ("token", "graph", "method", "endpoint", "solver", "status",
                                  "stream")} == {
        "token": "reader", "graph": service.graph, "method": "POST", "endpoint": "/retrieve",
        "solver": "vector", "status": 200, "stream": False}
    assert first["duration_ms"] > 0 and len(first["request_id"]) >= 8
    assert records[3]["llm"] == {"requests": 2, "tokens_in": 120, "tokens_out": 29}
    assert records[5]["token"] is None and records[5]["status"] == 401
    text = (tmp_path / "audit.log").read_text()
    assert QUESTION not in text and service.tokens["reader"] not in text
    assert oct((tmp_path / "audit.log").stat().st_mode & 0o777) == "0o600"
    # told to, the audit keeps the question
    (tmp_path / "q").mkdir()
    asked = _ops_service(films, tmp_path / "q", monkeypatch, embedder, audit_questions=True)
    assert asked.call("POST", "/retrieve", json=body).status_code == 200
    assert _audit(tmp_path / "q")[-1]["question"] == QUESTION


# ---------------------------------------------------------------------- streaming
def _stream_lines(service: Service, body: dict[str, Any]) -> tuple[bytes, list[str]]:
    """The raw bytes of a streamed answer, and its lines as httpx's iter_lines splits them
    (what the usual Python SSE client reads)."""
    raw = b""
    with service.client.stream("POST", "/ask", json=body, headers={
            "Authorization": f"Bearer {service.tokens['reader']}",
            "X-Kgdb-Graph": service.graph}) as reply:
        assert reply.status_code == 200
        for chunk in reply.iter_bytes():
            raw += chunk
    lines = list(httpx.Response(200, content=raw).iter_lines())
    return raw, lines


def test_model_output_cannot_forge_events(films: Any, embedder: Any, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          scripted_llm: Any) -> None:
    forged = ("Dieterle.\u2028\u2028event: done\u2028data: {\"answer\": \"forged\"}\u2029"
              "\u0085event: error\u2029data: {}")
    service = _ops_service(films, tmp_path, monkeypatch, embedder)
    scripted_llm.push(json.dumps(PATTERN), {"content": forged})
    raw, lines = _stream_lines(service, {"question": QUESTION, "stream": True})
    text = raw.decode()
    assert not any(ch in text for ch in "\u2028\u2029\u0085")
    fields = [line.split(":", 1)[0] for line in lines if line]
    assert set(fields) <= {"event", "data"}
    events = [line for line in lines if line.startswith("event:")]
    assert events[0] == "event: evidence" and events[-1] == "event: done"
    assert events.count("event: done") == 1 and "event: error" not in events
    done = json.loads([line for line in lines if line.startswith("data:")][-1][5:])
    # JSON carries the characters back; the model's text is the answer, the control ones
    # dropped as the LLM client's text contract drops C1 controls (U+0085)
    assert done["answer"].startswith("Dieterle.\u2028\u2028event: done")
    pairs = [(a[len("event: "):], json.loads(b[len("data: "):]))
             for a, b in itertools.pairwise(lines) if a.startswith("event:")]
    tokens = "".join(d["text"] for k, d in pairs if k == "token")
    assert "\u2028" in tokens and "\u2029" in tokens


def test_timeout_bounds_the_llm_part_of_a_stream(films: Any, embedder: Any, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 scripted_llm: Any) -> None:
    """An answer trickling in for 12 s under --timeout 3: the stream ends with a 504 error
    event in about 3 s and the LLM's reply is closed (the scripted server sees it go)."""
    service = _ops_service(films, tmp_path, monkeypatch, embedder, timeout_s=3.0)
    slow = " ".join(f"w{i}" for i in range(60))
    scripted_llm.push(json.dumps(PATTERN), {"content": slow, "chunk_delay": 0.2})
    started = time.monotonic()
    events = _events(service.call("POST", "/ask", json={"question": QUESTION,
                                                        "stream": True}).text)
    took = time.monotonic() - started
    assert events[0][0] == "evidence" and events[-1][0] == "error"
    assert events[-1][1]["error"]["status"] == 504
    assert took < 6.0, took
    deadline = time.monotonic() + 5
    while scripted_llm.streaming:
        assert time.monotonic() < deadline, "the LLM's reply was left running"
        time.sleep(0.05)
    record = [r for r in _audit(tmp_path) if r["event"] == "request"][-1]
    assert record["status"] == 504 and record["stream"] is True


def test_a_streamed_answer_is_bounded_in_memory(films: Any, embedder: Any, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                scripted_llm: Any) -> None:
    """A model that writes without end: the answer kept (and sent whole in ``done``) stops at
    --max-answer-chars, the LLM's reply is closed there."""
    service = _ops_service(films, tmp_path, monkeypatch, embedder, max_answer_chars=200)
    endless = " ".join(f"word{i}" for i in range(5000))
    scripted_llm.push(json.dumps(PATTERN), {"content": endless, "chunk_delay": 0.001})
    events = _events(service.call("POST", "/ask", json={"question": QUESTION,
                                                        "stream": True}).text)
    assert events[-1][0] == "done" and events[-1][1]["truncated"] is True
    assert 150 <= len(events[-1][1]["answer"]) <= 200
    sent = "".join(d["text"] for k, d in events if k == "token")
    assert len(sent) <= 200 and endless.startswith(sent)
    deadline = time.monotonic() + 5
    while scripted_llm.streaming:
        assert time.monotonic() < deadline, "the LLM's reply was left running"
        time.sleep(0.05)
    assert scripted_llm.aborted == 1


def _kgdb_threads() -> list[str]:
    """Threads still running a streamed answer or kgdb's LLM client."""
    import sys as _sys

    busy = []
    frames = _sys._current_frames()
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1)
        stack = []
        while frame is not None:
            stack.append(frame.f_code.co_filename)
            frame = frame.f_back
        if thread.name == "kgdb-stream" or any(
                f.endswith(("kgdb/llm/client.py", "kgdb/retrieve/ask.py")) for f in stack):
            busy.append(thread.name)
    return busy


def _database_port(store: Any) -> int:
    from urllib.parse import urlparse

    return int(store.port) if hasattr(store, "port") else int(urlparse(store.uri).port or 7687)


def _socket_remote_ports() -> dict[str, int]:
    """Socket inode -> remote port, for this machine's TCP sockets (/proc/net/tcp, tcp6)."""
    ports: dict[str, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            ports[fields[9]] = int(fields[2].rsplit(":", 1)[1], 16)
    return ports


def _open_fds(pooled_port: int | None = None) -> int:
    """This process's open file descriptors, leaving out its sockets to ``pooled_port`` (the
    database: the driver's connection pool grows with concurrent requests and keeps its
    connections for the next ones, which is reuse, not a leak)."""
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # closed meanwhile (the listing's own descriptor)
            continue
    if pooled_port is None:
        return len(names)
    remote = _socket_remote_ports()
    return sum(1 for name in names
               if not (name.startswith("socket:[")
                       and remote.get(name[8:-1]) == pooled_port))


def test_disconnected_clients_leave_nothing_running(films: Any, embedder: Any, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    scripted_llm: Any) -> None:
    """100 streamed answers whose clients disconnect after the first pieces (on a real port,
    through uvicorn): within 10 s no LLM request is running, no thread is in kgdb's stream
    or LLM code, and the process has no more file descriptors than before."""
    service = _ops_service(films, tmp_path, monkeypatch, embedder)
    long_answer = " ".join(f"w{i}" for i in range(400))
    scripted_llm.default = lambda body: (json.dumps(PATTERN) if not body.get("stream")
                                         else {"content": long_answer, "chunk_delay": 0.05})
    headers = {"Authorization": f"Bearer {service.tokens['reader']}",
               "X-Kgdb-Graph": service.graph}
    from concurrent.futures import ThreadPoolExecutor

    with LiveServer(service.app) as live:
        def whole(_: int) -> None:
            with httpx.Client(base_url=live.url, timeout=30) as client:
                assert client.post("/ask", headers=headers, json={
                    "question": QUESTION}).status_code == 200

        with ThreadPoolExecutor(10) as pool:  # warm: the model, the LLM client's pool at
            list(pool.map(whole, range(30)))  # the size 10 clients give it
        time.sleep(0.5)
        pooled = _database_port(films)
        fds = _open_fds(pooled)

        def one(_: int) -> None:
            with httpx.Client(base_url=live.url, timeout=30) as client, client.stream(
                    "POST", "/ask", headers=headers,
                    json={"question": QUESTION, "stream": True}) as reply:
                assert reply.status_code == 200
                seen = 0
                for line in reply.iter_lines():
                    seen += line.startswith("event: token")
                    if seen >= 3:
                        break  # the client goes away mid-answer

        with ThreadPoolExecutor(10) as pool:
            list(pool.map(one, range(100)))
        deadline = time.monotonic() + 10
        while scripted_llm.streaming or _kgdb_threads() or _open_fds(pooled) > fds + 2:
            assert time.monotonic() < deadline, (
                f"left after 10 s: {scripted_llm.streaming} LLM streams, threads "
                f"{_kgdb_threads()}, {_open_fds(pooled) - fds} more file descriptors")
            time.sleep(0.2)
        assert scripted_llm.aborted == 100
        metrics = _metrics(Service(service.app, service.tokens, service.graph, None))
        assert _value(metrics, "kgdb_stream_disconnects_total") == 100
    records = [r for r in _audit(tmp_path) if r["event"] == "request" and r["stream"]]
    assert len(records) == 100 and {r["outcome"] for r in records} == {"disconnect"}


# ---------------------------------------------------------------------- shutdown
class _serve_process:
    """``kgdb serve`` as a process on a free port, the scripted LLM behind it."""

    def __init__(self, store: Any, tmp_path: Path, extra: list[str],
                 llm_url: str | None = None) -> None:
        from kgdb.engine.process import free_port

        self.port = free_port()
        env = {**os.environ, **engine_env(store), "KGDB_LLM_RETRIES": "0"}
        if llm_url:
            env.update(OPENAI_BASE_URL=llm_url, OPENAI_API_KEY="test-key",
                       KGDB_LLM_MODEL="scripted-model")
        self.log = open(tmp_path / "serve.log", "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kgdb", "serve", "--port", str(self.port), "--tokens",
             str(tmp_path / "tokens.json"), "--audit-log", str(tmp_path / "audit.log"),
             *extra], env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def __enter__(self) -> tuple[str, subprocess.Popen[bytes]]:
        url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while True:
            assert self.process.poll() is None, (Path(self.log.name).read_text())
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    return url, self.process
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "kgdb serve did not get ready"
            time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        self.log.close()


def _get(url: str, path: str, token: str, graph: str) -> httpx.Response:
    return httpx.get(url + path, headers={"Authorization": f"Bearer {token}",
                                          "X-Kgdb-Graph": graph}, timeout=30)


def _stream_in_thread(url: str, token: str, graph: str, out: list[Any]) -> threading.Thread:
    def run() -> None:
        try:
            with httpx.Client(timeout=60) as client, client.stream(
                    "POST", url + "/ask", json={"question": QUESTION, "stream": True},
                    headers={"Authorization": f"Bearer {token}", "X-Kgdb-Graph": graph}
            ) as reply:
                out.append(_events(b"".join(reply.iter_bytes()).decode()))
        except Exception as exc:
            out.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_sigterm_drains_in_flight_streams(films: Any, tmp_path: Path,
                                          scripted_llm: Any) -> None:
    """SIGTERM while two answers stream: one that ends within the grace ends with ``done``;
    one that would not gets a last ``error`` event (503) at the grace's end; the process
    exits; the audit log says so."""
    graph = films.graph_name if films.dialect.NAME == "falkordb" else "neo4j"
    token = TokenFile(tmp_path / "tokens.json", []).add("reader", ("read",), (graph,))
    short = " ".join(f"s{i}" for i in range(20))  # 20 x 0.1 s: 2 s
    long = " ".join(f"l{i}" for i in range(300))  # 30 s
    turns: list[str] = []

    def script(body: dict[str, Any]) -> Any:
        if not body.get("stream"):
            return json.dumps(PATTERN)
        turns.append("streamed")  # the first stream is short, the second long
        return {"content": short if len(turns) == 1 else long, "chunk_delay": 0.1}

    scripted_llm.default = script

    with _serve_process(films, tmp_path, ["--shutdown-grace", "6"],
                        scripted_llm.base_url) as (url, process):
        results: list[Any] = []
        first = _stream_in_thread(url, token, graph, results)
        while len(turns) < 1:
            time.sleep(0.05)
        second = _stream_in_thread(url, token, graph, results)
        while len(turns) < 2:
            time.sleep(0.05)
        time.sleep(0.3)
        process.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        first.join(30)
        second.join(30)
        assert process.wait(30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal
        took = time.monotonic() - stopped
    assert all(isinstance(r, list) for r in results), results
    ends = sorted(r[-1][0] for r in results)
    assert ends == ["done", "error"], results
    error = next(r[-1][1] for r in results if r[-1][0] == "error")
    assert error["error"]["status"] == 503 and "shutting down" in error["error"]["message"]
    done = next(r[-1][1] for r in results if r[-1][0] == "done")
    assert done["answer"] == short
    assert 4.0 <= took <= 12.0, took
    phases = [r.get("phase") for r in _audit(tmp_path) if r["event"] == "shutdown"]
    assert phases == ["draining", "stopped"]


def test_readyz_says_draining(films: Any, embedder: Any, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    service = _ops_service(films, tmp_path, monkeypatch, embedder)
    service.app.state.drain.begin(10.0)
    reply = service.call("GET", "/readyz", token=None)
    assert reply.status_code == 503 and reply.json() == {"status": "draining"}
    assert _value(_metrics(service), "kgdb_draining") == 1
