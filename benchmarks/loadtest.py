"""The knowledge service under load: T tenants x C clients against real ``kgdb serve``
processes (one, or several behind nginx), with a writer per tenant, every answer checked.

    python -m benchmarks.loadtest --engine falkordb --tenants 4 --clients 8 --duration 300
    python -m benchmarks.loadtest --engine neo4j --replicas 2 --kill-replica   # nginx in front
    make loadtest ENGINE=falkordb REPLICAS=1

What one run does (everything it starts, it stops):

1. Builds one graph per tenant from the bundled movie sample (``kgdb/data/samples``): the
   films are dealt out to the tenants, so no two tenants share a film; each tenant gets the
   films' facts, one document per film (its facts as sentences, ids ``<tenant>/<film>``), the
   triple texts, the document kNN layer and the ppr retrieval graph. On Neo4j Community a
   tenant is a database and there is exactly one user database: the run has one tenant (it
   says so), its C x T clients all on it.
2. Starts the scripted OpenAI-compatible server (tests/support/openai_server.py; its answer is
   a digest of the prompt, so an answer written from another tenant's context is caught) and
   ``kgdb serve`` (``--replicas``; with more than one, or ``--proxy``, nginx in front).
3. Asks every question of the mix alone, one at a time, in each state the writers will put
   the graphs in (the writer's document absent, present), twice absent: the accepted answers.
4. Runs the load for ``--duration`` seconds: C closed-loop clients per tenant, each sending
   the tenant's mix (``/retrieve`` with every solver that needs no LLM, ``/lf/run``, a
   streamed ``/ask`` on the scripted LLM, and a deliberate 403: another tenant's graph with
   its own token), one writer per tenant loading and deleting a document of its own (a
   separate process, straight into the engine: the service has no document endpoint). Every
   answer must equal one of its accepted answers, or, for a request the writer's document
   changes, be made of their parts (``straddled``: its statements read either side of the
   writer's commit; counted apart, see :func:`composed`); any value naming another tenant's
   film or document is a cross-tenant answer. Server memory (RSS), threads and file descriptors are
   sampled every second; ``--kill-replica`` kills one replica (SIGKILL) half-way: its
   in-flight requests may fail (counted apart), nothing may answer wrongly.
5. Sends ``--disconnects`` streamed ``/ask`` requests whose clients go away after the first
   token, waits 10 s, and reports the upstream LLM requests still open (the scripted server
   counts them), and the servers' threads and file descriptors against before.
6. Prints one JSON document (and writes it with ``--out``); exit code 1 when a check failed.

Why a bounded asyncio + httpx client and not Locust: every response is compared in full with
the answers the same question got alone (Locust's tasks report only success or failure and
keep response times in rounded buckets), the writers must be told apart from the clients and
scheduled between the baseline states, the disconnect test needs a client that drops its
connection at a chosen event, and the result is one JSON document for the results file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import json
import math
import multiprocessing
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
SAMPLE = ROOT / "kgdb" / "data" / "samples"
DELIBERATE = "deliberate-403"
"""The endpoint key of the requests that must be refused (another tenant's graph)."""
COMPARED = ("evidence", "facts", "groups", "passages", "documents")
"""The parts of an answer compared with the answer alone (timings and statements' texts
may differ; scores are rounded by the service)."""


# ---------------------------------------------------------------------- the corpus
@dataclass
class Tenant:
    name: str
    films: list[str]
    triples: list[tuple[str, str, str]]
    token: str = ""
    mix: list[Request] = field(default_factory=list)

    def doc_id(self, film: str) -> str:
        return f"{self.name}/{film}"

    @property
    def writer_doc(self) -> str:
        return f"{self.name}/tide-log"


@dataclass
class Request:
    key: str
    """endpoint[:solver], the row of the report."""
    path: str
    body: dict[str, Any]
    stream: bool = False
    graph: str | None = None
    """Another tenant's graph (the deliberate 403), else the tenant's own."""


def movie_facts() -> dict[str, list[tuple[str, str, str]]]:
    facts: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for line in (SAMPLE / "movies.txt").read_text(encoding="utf-8").splitlines():
        if line.strip():
            head, relation, tail = line.split("|")
            facts[head].append((head, relation, tail))
    return facts


def deal(names: list[str], films_each: int = 0) -> list[Tenant]:
    """The films dealt out to the tenants in turn (sorted, so every run deals the same);
    ``films_each`` (0: all) films at most per tenant, for small runs."""
    facts = movie_facts()
    films = sorted(facts)
    tenants = [Tenant(name, films[i::len(names)][:films_each or None], [])
               for i, name in enumerate(names)]
    for t in tenants:
        t.triples = [f for film in t.films for f in facts[film]]
    return tenants


def _listed(values: list[str]) -> str:
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


PHRASES = {"directed_by": "It was directed by {}.", "written_by": "It was written by {}.",
           "starred_actors": "It stars {}.", "has_genre": "Its genre: {}.",
           "in_language": "It is in {}.", "has_tags": "It is tagged {}.",
           "release_year": "It was released in {}.", "has_imdb_rating": "It is rated {}.",
           "has_imdb_votes": "Its votes: {}."}


def film_document(film: str, triples: list[tuple[str, str, str]]) -> str:
    """A film's facts as sentences (the passages the chunk solvers find)."""
    by: dict[str, list[str]] = defaultdict(list)
    for _, relation, tail in triples:
        by[relation].append(tail)
    lines = [f"{film} is a film."]
    lines += [PHRASES[r].format(_listed(v)) for r, v in by.items() if r in PHRASES]
    return " ".join(lines)


def writer_document(tenant: str) -> dict[str, str]:
    """What a tenant's writer loads and deletes: about tides, a subject no question of the
    mix is about (so its presence rarely changes an answer; when it does, both states are
    accepted)."""
    text = (f"Tide log of harbour {tenant}. The spring tide at the northern pier rose by "
            "forty centimetres above the chart datum. Fishing boats kept to the outer "
            "moorings until the ebb. The harbour master recorded calm water at dawn.")
    return {"id": f"{tenant}/tide-log", "title": f"Tide log {tenant}", "text": text}


def simple(film: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9 ]+", film))


def build_mix(tenant: Tenant, others: list[Tenant], questions: int) -> list[Request]:
    """The tenant's requests: per film asked about, /retrieve with every solver that needs
    no LLM, /lf/run, a streamed /ask; then one deliberate 403."""
    by_film: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for head, relation, tail in tenant.triples:
        by_film[head][relation].append(tail)
    asked = [f for f in tenant.films if simple(f) and by_film[f].get("directed_by")
             and by_film[f].get("starred_actors")][:questions]
    mix: list[Request] = []
    for film in asked:
        question = f"Who directed {film}?"
        for solver in ("vector", "hybrid", "entities", "ppr", "document-graph",
                       "triple-context"):
            mix.append(Request(f"retrieve:{solver}", "/retrieve",
                               {"question": question, "options": {"solver": solver}}))
        mix.append(Request("retrieve:pattern", "/retrieve", {"question": question, "options": {
            "solver": "pattern", "k": 2,
            "pattern": [[film, "directed_by", "UNKNOWN director 1"]]}}))
        mix.append(Request("lf/run", "/lf/run", {"program": (
            f"Retrieval(s=s1:Movie[`{film}`], p=p1:starred_actors, o=o1:Person)\n"
            "Output(o1)")}))
        mix.append(Request("ask-stream:vector", "/ask", {
            "question": f"Who starred in {film}?", "stream": True,
            "options": {"solver": "vector", "passages": 3}}, stream=True))
    # a graph the tenant's token may not use: another tenant's (Neo4j Community has none)
    mix.append(Request(DELIBERATE, "/retrieve", {"question": f"Who directed {asked[0]}?",
                                                 "options": {"solver": "vector"}},
                       graph=others[0].name if others else "not-this-tenant"))
    return mix


# ---------------------------------------------------------------------- building the graphs
def engine_settings(engine: str, graph: str, neo4j: dict[str, str] | None) -> Any:
    from kgdb.config import Settings

    if engine == "neo4j":
        assert neo4j is not None
        return dataclasses.replace(Settings.from_env(uri=neo4j["uri"]),
                                   username=neo4j["username"], password=neo4j["password"])
    return dataclasses.replace(Settings.from_env(graph=graph), uri=None)


def build_tenant(tenant: Tenant, engine: str, neo4j: dict[str, str] | None, embedder: Any,
                 work: Path) -> dict[str, Any]:
    from kgdb.demo import DEFAULT_SCHEMA
    from kgdb.documents.knn import build_knn
    from kgdb.documents.pipeline import load_documents
    from kgdb.documents.ppr_graph import build_graph
    from kgdb.documents.triple_index import index_triples
    from kgdb.engine import connect
    from kgdb.load.triples import load_triples
    from kgdb.schema import apply_schema, parse_schema_file

    t0 = time.perf_counter()
    folder = work / tenant.name
    folder.mkdir(parents=True, exist_ok=True)
    triples = folder / "facts.txt"
    triples.write_text("".join(f"{h}|{r}|{t}\n" for h, r, t in tenant.triples), "utf-8")
    by_film: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for fact in tenant.triples:
        by_film[fact[0]].append(fact)
    docs = folder / "films.jsonl"
    docs.write_text("".join(json.dumps({"id": tenant.doc_id(f), "title": f,
                                        "text": film_document(f, by_film[f])}) + "\n"
                            for f in tenant.films), "utf-8")
    with connect(engine_settings(engine, tenant.name, neo4j)) as store:
        store.reset()
        apply_schema(store, parse_schema_file(DEFAULT_SCHEMA), embedder)
        load_triples(store, embedder, triples, progress=False)
        load_documents(store, embedder, [docs], options=write_options(), progress=False)
        index_triples(store, embedder, progress=False)
        build_knn(store)
        build_graph(store, embedder)
    return {"tenant": tenant.name, "films": len(tenant.films), "facts": len(tenant.triples),
            "seconds": round(time.perf_counter() - t0, 1)}


def write_options() -> Any:
    """How the tenants' documents and the writers' are loaded (one place for both)."""
    from kgdb.documents.pipeline import DocumentOptions

    return DocumentOptions(extract="gazetteer", title_entity=True)


# ---------------------------------------------------------------------- the writers
def writer_process(engine: str, neo4j: dict[str, str] | None, tenants: list[str],
                   work: str, commands: Any, events: Any) -> None:
    """One process for every tenant's writer (apart from the clients' event loop): a thread
    per tenant obeys ``commands`` (``load``/``delete`` once, for the baselines; ``run`` to
    alternate until ``stop``) and reports on ``events``."""
    from kgdb.embed import default_embedder

    embedder = default_embedder()
    stop = threading.Event()
    running = threading.Event()
    stats: dict[str, dict[str, Any]] = {t: {"loads": 0, "deletes": 0, "errors": [],
                                            "ms": []} for t in tenants}

    def once(tenant: str, what: str) -> None:
        from kgdb.documents.pipeline import delete_documents, load_documents
        from kgdb.engine import connect

        path = Path(work) / tenant / "writer.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(json.dumps(writer_document(tenant)) + "\n", "utf-8")
        t0 = time.perf_counter()
        with connect(engine_settings(engine, tenant, neo4j)) as store:
            if what == "load":
                load_documents(store, embedder, [path], options=write_options(),
                               progress=False)
            else:
                delete_documents(store, [f"{tenant}/tide-log"])
        stats[tenant]["ms"].append((time.perf_counter() - t0) * 1000)
        stats[tenant]["loads" if what == "load" else "deletes"] += 1

    def loop(tenant: str) -> None:
        rng = random.Random(tenant)
        present = False
        while not stop.is_set():
            try:
                once(tenant, "delete" if present else "load")
                present = not present
            except Exception as exc:
                stats[tenant]["errors"].append(f"{type(exc).__name__}: {exc}"[:300])
            stop.wait(rng.uniform(0.5, 1.5))
        if present:
            once(tenant, "delete")

    threads: list[threading.Thread] = []
    while True:
        command = commands.get()
        if command in ("load", "delete"):
            try:
                for t in tenants:
                    once(t, command)
                events.put({"done": command})
            except Exception as exc:
                events.put({"error": f"{type(exc).__name__}: {exc}"[:500]})
        elif command == "run":
            running.set()
            threads = [threading.Thread(target=loop, args=(t,), daemon=True) for t in tenants]
            for th in threads:
                th.start()
            events.put({"done": "run"})
        elif command == "stop":
            stop.set()
            for th in threads:
                th.join(120)
            events.put({"done": "stop", "stats": stats})
            return


class Writers:
    def __init__(self, engine: str, neo4j: dict[str, str] | None, tenants: list[str],
                 work: Path) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.commands = ctx.Queue()
        self.events = ctx.Queue()
        self.process = ctx.Process(target=writer_process, daemon=True, args=(
            engine, neo4j, tenants, str(work), self.commands, self.events))
        self.process.start()

    def do(self, command: str, timeout: float = 600) -> dict[str, Any]:
        self.commands.put(command)
        reply: dict[str, Any] = self.events.get(timeout=timeout)
        if "error" in reply:
            raise RuntimeError(f"writer: {reply['error']}")
        return reply

    def close(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(10)


# ---------------------------------------------------------------------- the scripted LLM
def scripted_llm() -> Any:
    """The tests' scripted OpenAI-compatible server, counting the requests it is answering
    (an upstream request a disconnected client left running stays open here)."""
    from tests.support.openai_server import ScriptedOpenAI

    class Counting(ScriptedOpenAI):
        def __init__(self) -> None:
            self.open = 0
            self.broken = 0
            self.slow = False
            """The disconnect test: a long answer, slowly (a request left running shows)."""
            self._count = threading.Lock()
            super().__init__(default=self._reply)

        def _reply(self, body: dict[str, Any]) -> dict[str, Any]:
            if self.slow:
                return {"content": " ".join(["tide"] * 300), "chunk_delay": 0.1}
            prompt = json.dumps(body.get("messages"), sort_keys=True)
            digest = hashlib.sha256(prompt.encode()).hexdigest()
            return {"content": " ".join(digest[i:i + 8] for i in range(0, 48, 8))}

        def _next(self, body: dict[str, Any]) -> Any:
            step = super()._next(body)
            with self._lock:
                self.requests.clear()  # a long run: keep no request bodies
            return step

        def _handler(self) -> Any:
            base = super()._handler()
            outer = self

            class Handler(base):  # type: ignore[misc, valid-type]
                def do_POST(self) -> None:
                    with outer._count:
                        outer.open += 1
                    try:
                        super().do_POST()
                    except (BrokenPipeError, ConnectionResetError):
                        with outer._count:
                            outer.broken += 1
                    finally:
                        with outer._count:
                            outer.open -= 1

            return Handler

    return Counting()


# ---------------------------------------------------------------------- servers and proxy
def proc_stats(pid: int) -> dict[str, int] | None:
    """RSS (kB), threads and open file descriptors of a process, from Linux's /proc (three
    numbers: no library needed for them)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
        threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, AttributeError):
        return None
    return {"rss_kb": rss, "threads": threads, "fds": fds}


def free_port() -> int:
    from kgdb.engine.process import free_port as port

    return int(port())


class Replica:
    def __init__(self, index: int, env: dict[str, str], tokens: Path, work: Path) -> None:
        self.index = index
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (work / f"serve-{index}.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kgdb", "serve", "--port", str(self.port), "--tokens",
             str(tokens), "--timeout", "60"], env=env, stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True)
        self.killed_at: float | None = None

    def wait_ready(self, timeout: float = 300) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"kgdb serve {self.index} exited ({self.process.returncode}):"
                                   f" see {self.log.name}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return
            time.sleep(0.3)
        raise RuntimeError(f"kgdb serve {self.index} was not ready in {timeout:.0f} s")

    def kill(self) -> None:
        self.killed_at = time.monotonic()
        self.process.kill()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.log.close()


NGINX_CONF = """# kgdb serve replicas behind nginx (written by benchmarks/loadtest.py; the same proxy
# settings as docker/nginx.conf)
worker_processes 1;
daemon off;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {work}/nginx-body;
    proxy_temp_path {work}/nginx-proxy;
    fastcgi_temp_path {work}/nginx-fastcgi;
    uwsgi_temp_path {work}/nginx-uwsgi;
    scgi_temp_path {work}/nginx-scgi;
    upstream kgdb {{
        least_conn;
{servers}
        keepalive 64;
        keepalive_timeout 4s;
    }}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 1m;
        location / {{
            proxy_pass http://kgdb;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_buffering off;
            proxy_read_timeout 120s;
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 2;
        }}
    }}
}}
"""


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/sbin/nginx") if os.access(p, os.X_OK)), None)


class Proxy:
    def __init__(self, replicas: list[Replica], work: Path) -> None:
        binary = nginx_binary()
        if binary is None:
            raise RuntimeError("--replicas > 1 needs nginx (apt-get install -y nginx)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        servers = "\n".join(f"        server 127.0.0.1:{r.port} max_fails=3 fail_timeout=10s;"
                            for r in replicas)
        conf = work / "nginx.conf"
        user = "user root;\n" if os.geteuid() == 0 else ""
        conf.write_text(user + NGINX_CONF.format(work=work, servers=servers, port=self.port))
        self.log = (work / "nginx.log").open("wb")
        self.process = subprocess.Popen([binary, "-c", str(conf), "-p", str(work)],
                                        stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        deadline = time.monotonic() + 20
        import httpx

        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited: {(work / 'nginx-error.log').read_text()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/livez", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError("nginx did not answer")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()


# ---------------------------------------------------------------------- checking answers
def normalised(payload: Any, request: Request) -> Any:
    if request.path == "/lf/run":
        return payload.get("rows")
    return {k: payload.get(k) for k in COMPARED}


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


SCORE_TOLERANCE = 1e-4
"""How far a number of an answer may be from the answer alone. Two replicas (two processes)
give scores that differ in the sixth decimal (measured: 0.499259 against 0.499258 for the same
SimGRAG subgraph: the question's embedding, summed in another order); everything else
(names, ids, texts, order, counts) must be equal."""


def close(a: Any, b: Any) -> bool:
    """``a`` and ``b`` equal, numbers within :data:`SCORE_TOLERANCE`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(a - b) <= SCORE_TOLERANCE
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def composed(answer: Any, states: list[Any]) -> bool:
    """Whether ``answer`` is made of the parts of ``states`` (the accepted answers of one
    request, two or more): a list holds only items that list holds in some state, and is no
    shorter or longer than it is in every state; a text only lines of the states' texts; any
    other value equals one state's. A request's statements read committed data one by one
    (Neo4j's and FalkorDB's isolation), so an answer whose reads straddle the writer's commit
    mixes the two states; anything else in it is wrong."""
    if any(close(answer, s) for s in states):
        return True
    if isinstance(answer, dict):
        return all(isinstance(s, dict) and s.keys() == answer.keys() for s in states) and all(
            composed(v, [s[k] for s in states]) for k, v in answer.items())
    if isinstance(answer, list):
        if not all(isinstance(s, list) for s in states):
            return False
        sizes = [len(s) for s in states]
        parts = [item for s in states for item in s]
        return min(sizes) <= len(answer) <= max(sizes) and all(
            any(close(item, part) for part in parts) for item in answer)
    if isinstance(answer, str) and all(isinstance(s, str) for s in states):
        lines = {line for s in states for line in s.splitlines()}
        return all(line in lines for line in answer.splitlines())
    return False


class Checker:
    """The accepted answers of each request (from the baselines) and the names that only
    other tenants have."""

    def __init__(self, tenants: list[Tenant]) -> None:
        self.accepted: dict[tuple[str, int], list[Any]] = defaultdict(list)
        self.answers: dict[tuple[str, int], str] = {}
        """The first accepted answer of each request (shown beside a wrong one)."""
        self.foreign: dict[str, set[str]] = {}
        self.prefixes: dict[str, tuple[str, ...]] = {}
        own = {t.name: set(t.films) for t in tenants}
        for t in tenants:
            theirs = set().union(*(own[o.name] for o in tenants if o is not t)) - own[t.name]
            self.foreign[t.name] = theirs
            self.prefixes[t.name] = tuple(f"{o.name}/" for o in tenants if o is not t)

    def accept(self, tenant: str, index: int, answer: Any) -> None:
        if not any(close(answer, known) for known in self.accepted[(tenant, index)]):
            self.accepted[(tenant, index)].append(answer)
            self.answers.setdefault((tenant, index), json.dumps(answer, sort_keys=True))

    def cross_tenant(self, tenant: str, answer: Any) -> str | None:
        for s in strings(answer):
            if s in self.foreign[tenant] or any(p in s for p in self.prefixes[tenant]):
                return s
        return None

    def judge(self, tenant: str, index: int, answer: Any) -> str:
        if self.cross_tenant(tenant, answer) is not None:
            return "cross_tenant"
        states = self.accepted[(tenant, index)]
        if any(close(answer, known) for known in states):
            return "ok"
        return "straddled" if len(states) > 1 and composed(answer, states) else "wrong"


@dataclass
class Outcome:
    status: int
    answer: Any = None
    error: str = ""
    ms: float = 0.0


async def send(client: Any, base: str, tenant: Tenant, request: Request,
               read_timeout: float = 120) -> Outcome:
    import httpx

    headers = {"Authorization": f"Bearer {tenant.token}",
               "X-Kgdb-Graph": request.graph or tenant.name}
    t0 = time.perf_counter()
    try:
        if not request.stream:
            r = await client.post(base + request.path, json=request.body, headers=headers,
                                  timeout=read_timeout)
            ms = (time.perf_counter() - t0) * 1000
            if r.status_code != 200:
                return Outcome(r.status_code, error=r.text[:1500], ms=ms)
            return Outcome(200, normalised(r.json(), request), ms=ms)
        async with client.stream("POST", base + request.path, json=request.body,
                                 headers=headers, timeout=read_timeout) as r:
            if r.status_code != 200:
                await r.aread()
                return Outcome(r.status_code, error=r.text[:1500],
                               ms=(time.perf_counter() - t0) * 1000)
            events = await read_events(r)
        ms = (time.perf_counter() - t0) * 1000
        kinds = [k for k, _ in events]
        if "error" in kinds or "done" not in kinds or kinds[0] != "evidence":
            detail = next((d for k, d in events if k == "error"), kinds)
            return Outcome(599, error=f"stream: {json.dumps(detail)[:300]}", ms=ms)
        text = "".join(d["text"] for k, d in events if k == "token")
        done = next(d for k, d in events if k == "done")
        return Outcome(200, {"evidence": normalised(events[0][1], request), "tokens": text,
                             "answer": done.get("answer")}, ms=ms)
    except (httpx.HTTPError, ValueError) as exc:
        return Outcome(0, error=f"{type(exc).__name__}: {exc}"[:300],
                       ms=(time.perf_counter() - t0) * 1000)


async def read_events(response: Any, until: str | None = None) -> list[tuple[str, Any]]:
    """Server-sent events, split at LF only (the service's separators; no splitting at the
    Unicode line separators that httpx's ``aiter_lines`` also splits at)."""
    events: list[tuple[str, Any]] = []
    buffer = b""
    async for chunk in response.aiter_bytes():
        buffer += chunk
        while b"\n\n" in buffer:
            block, buffer = buffer.split(b"\n\n", 1)
            kind, data = "message", []
            for line in block.decode("utf-8").split("\n"):
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
            events.append((kind, json.loads("\n".join(data)) if data else None))
            if until is not None and kind == until:
                return events
    return events


# ---------------------------------------------------------------------- the run
@dataclass
class Plan:
    engine: str = "falkordb"
    tenants: int = 4
    clients: int = 8
    duration_s: float = 300.0
    replicas: int = 1
    proxy: bool = False
    kill_replica: bool = False
    writers: bool = True
    disconnects: int = 100
    questions: int = 2
    films: int = 0
    """Films per tenant at most (0: the sample's films dealt out in full)."""
    min_rounds: int = 0
    """Whole rounds of its mix each client sends at least (the load lasts longer if need
    be)."""
    think_s: float = 0.0
    """Mean pause of a client before each request (exponential, seeded per client); 0:
    closed loop, every client always waiting on the service."""
    sample_s: float = 1.0
    warmup_s: float = 30.0
    out: Path | None = None
    """The results file (benchmarks/results' format: kgdb.results.result_document)."""
    argv: list[str] = field(default_factory=list)
    """The command line's arguments, for the results file."""
    neo4j: dict[str, str] | None = None
    progress: bool = True


@dataclass
class Tally:
    ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    counts: dict[str, dict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    examples: list[dict[str, Any]] = field(default_factory=list)
    finished: list[float] = field(default_factory=list)
    """When each answer arrived (seconds into the load)."""

    def add(self, key: str, verdict: str, outcome: Outcome, tenant: str, index: int,
            t: float) -> None:
        self.counts[key][verdict] += 1
        if verdict == "ok":
            self.ms[key].append(outcome.ms)
        elif verdict != "deliberate_4xx" and len(self.examples) < 20 and not (
                verdict == "straddled"  # a few, so they never hide the errors
                and sum(e["verdict"] == "straddled" for e in self.examples) >= 3):
            example = {"endpoint": key, "verdict": verdict, "tenant": tenant,
                       "request": index, "status": outcome.status,
                       "error": outcome.error[:3000 if verdict == "wrong" else 1500],
                       "at_s": round(t, 1)}
            if verdict in ("wrong", "cross_tenant", "straddled"):  # what it said, to compare
                example["answer"] = json.dumps(outcome.answer, sort_keys=True)[:3000]
            self.examples.append(example)


def verdict_of(checker: Checker, tenant: Tenant, index: int, request: Request,
               outcome: Outcome) -> str:
    if request.key == DELIBERATE:
        return "deliberate_4xx" if outcome.status == 403 else (
            "cross_tenant" if outcome.status == 200 else f"status_{outcome.status}")
    if outcome.status == 200:
        verdict = checker.judge(tenant.name, index, outcome.answer)
        if verdict in ("wrong", "straddled"):
            outcome.error = "accepted: " + checker.answers.get((tenant.name, index), "")[:3000]
        return verdict
    if outcome.status == 0:
        return "transport_error"
    if outcome.status >= 500:
        return "server_error"
    return "unexpected_4xx"


async def baseline(base: str, tenants: list[Tenant], checker: Checker, alone: Tally,
                   state: str, record: bool = True) -> list[str]:
    """Every request of every mix once, one at a time: its answer is accepted."""
    import httpx

    problems: list[str] = []
    async with httpx.AsyncClient(verify=False) as client:
        for t in tenants:
            for i, request in enumerate(t.mix):
                outcome = await send(client, base, t, request)
                if request.key == DELIBERATE:
                    if outcome.status != 403:
                        problems.append(f"{state}: {t.name} {request.key}: {outcome.status}")
                    continue
                if outcome.status != 200:
                    problems.append(f"{state}: {t.name} {request.key}: {outcome.status} "
                                    f"{outcome.error[:200]}")
                    continue
                leak = checker.cross_tenant(t.name, outcome.answer)
                if leak is not None:
                    problems.append(f"{state}: {t.name} {request.key}: alone, names {leak!r}")
                    continue
                if record:
                    checker.accept(t.name, i, outcome.answer)
                alone.ms[request.key].append(outcome.ms)
    return problems


async def same_on_every_replica(replicas: list[Replica], tenants: list[Tenant],
                                checker: Checker) -> dict[str, Any]:
    """Each request asked of each replica directly: the answer is one accepted, the token
    works on each (and an unknown one is refused by each)."""
    import httpx

    out: dict[str, Any] = {"requests": 0, "not_accepted": [], "unknown_token_refused": []}
    async with httpx.AsyncClient(verify=False) as client:
        for r in replicas:
            bad = await client.get(r.url + "/solvers",
                                   headers={"Authorization": "Bearer kgdb_not-a-token-1234"})
            out["unknown_token_refused"].append(bad.status_code == 401)
            for t in tenants:
                for i, request in enumerate(t.mix):
                    if request.key == DELIBERATE:
                        continue
                    outcome = await send(client, r.url, t, request)
                    out["requests"] += 1
                    if outcome.status != 200 or checker.judge(t.name, i, outcome.answer) != "ok":
                        out["not_accepted"].append({
                            "replica": r.index, "tenant": t.name, "endpoint": request.key,
                            "status": outcome.status, "request": i,
                            "answer": json.dumps(outcome.answer, sort_keys=True)[:3000]})
    out["same"] = not out["not_accepted"] and all(out["unknown_token_refused"])
    return out


def think_pause(rng: random.Random, think_s: float, remaining_s: float) -> float:
    """A client's pause before its next request: exponential with mean ``think_s`` (the
    requests of many such clients arrive as a Poisson stream), never past the end of the
    load; 0 without think time."""
    if think_s <= 0:
        return 0.0
    return min(rng.expovariate(1 / think_s), max(0.0, remaining_s))


# Every client is plain HTTP to 127.0.0.1: ``verify=False`` spares each new httpx client
# loading the CA bundle into an SSL context, which on a loaded machine stalled the event loop
# (and so every client's clock) for tens of seconds at the start of a run.
async def client_loop(base: str, tenant: Tenant, checker: Checker, tally: Tally, seed: int,
                      start: float, stop_at: float, in_flight: dict[str, int],
                      min_rounds: int = 0, think_s: float = 0.0) -> None:
    """One client: the tenant's mix in a shuffled order, again and again, until ``stop_at``
    (and at least ``min_rounds`` whole rounds: a small run checks every request), pausing
    ``think_s`` on average (exponential) before each request, as a person or a dashboard
    does between questions (before the first one too, so the clients do not all start at
    once); with 0 it sends the next request as soon as it has the answer."""
    import httpx

    rng = random.Random(seed)
    order = list(range(len(tenant.mix)))
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    rounds = 0
    async with httpx.AsyncClient(limits=limits, verify=False) as client:
        while time.monotonic() < stop_at or rounds < min_rounds:
            rng.shuffle(order)
            for i in order:
                if time.monotonic() >= stop_at and rounds >= min_rounds:
                    return
                pause = think_pause(rng, think_s, stop_at - time.monotonic())
                if pause:  # before each request, the first too: no herd at the start
                    await asyncio.sleep(pause)
                    if time.monotonic() >= stop_at and rounds >= min_rounds:
                        return  # nor one at the end, of every client whose pause it cut
                request = tenant.mix[i]
                sent = time.monotonic() - start
                in_flight["n"] += 1
                outcome = await send(client, base, tenant, request)
                in_flight["n"] -= 1
                tally.add(request.key, verdict_of(checker, tenant, i, request, outcome),
                          outcome, tenant.name, i, sent)
                tally.finished.append(time.monotonic() - start)
            rounds += 1


def pids(replicas: list[Replica]) -> dict[str, int]:
    return {f"serve-{r.index}": r.process.pid for r in replicas if r.process.poll() is None}


async def sampler(replicas: list[Replica], engine_pid: int | None, start: float,
                  every: float, samples: list[dict[str, Any]], done: asyncio.Event) -> None:
    while not done.is_set():
        row: dict[str, Any] = {"t_s": round(time.monotonic() - start, 1),
                               "load_1m": round(os.getloadavg()[0], 2)}
        for name, pid in pids(replicas).items():
            row[name] = proc_stats(pid)
        if engine_pid:
            stats = proc_stats(engine_pid)
            row["engine_rss_kb"] = stats["rss_kb"] if stats else None
        samples.append(row)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), every)


async def loop_lag(lags: list[float], done: asyncio.Event, every: float = 0.01) -> None:
    """How late this process's event loop wakes a 10 ms timer, in ms: the clients' own
    delay. A response is timed when the loop gets to it, so a busy client (judging answers,
    the scripted LLM) shows here, not as the service's latency."""
    while not done.is_set():
        t = time.monotonic()
        await asyncio.sleep(every)
        lags.append(1000 * (time.monotonic() - t - every))


async def progress(tally: Tally, start: float, stop_at: float, done: asyncio.Event) -> None:
    last = 0
    while not done.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), 10)
        n = sum(sum(c.values()) for c in tally.counts.values())
        bad = sum(v for c in tally.counts.values() for k, v in c.items()
                  if k not in ("ok", "deliberate_4xx"))
        now = time.monotonic()
        print(f"loadtest: {now - start:5.0f} s, {n} requests ({(n - last) / 10:.1f}/s), "
              f"{bad} not ok, ETA {max(0.0, stop_at - now):.0f} s", file=sys.stderr)
        last = n


async def settled(tenant: Tenant, replicas: list[Replica]) -> dict[str, Any]:
    """Each server's stats half a second after one request to it (which stops AnyIO's
    worker threads idle for 10 s)."""
    import httpx

    async with httpx.AsyncClient(verify=False) as client:
        for r in replicas:
            if r.process.poll() is None:
                await send(client, r.url, tenant, tenant.mix[0])
    await asyncio.sleep(0.5)
    return {name: proc_stats(pid) for name, pid in pids(replicas).items()}


async def disconnect_test(base: str, tenants: list[Tenant], llm: Any, replicas: list[Replica],
                          count: int, concurrency: int = 10) -> dict[str, Any]:
    """``count`` streamed /ask whose clients go away after the first token event; 10 s later
    the upstream LLM requests still open and the servers' threads and fds against before.

    "Before" is the servers after ``concurrency`` streamed asks answered in full at once
    and "after" the servers 10 s after the last client left; each is read after one more
    request (:func:`settled`), so both hold the pools that many requests at once fill (the
    engine clients' connections, the idle worker threads AnyIO keeps for 10 s and stops on
    the next request) and a difference is what the disconnects left."""
    import httpx

    tenant = tenants[0]
    request = next(r for r in tenant.mix if r.stream)
    async with httpx.AsyncClient(verify=False) as client:
        await asyncio.gather(*(send(client, base, tenant, request) for _ in range(concurrency)))
    await asyncio.sleep(10.5)
    before = await settled(tenant, replicas)
    open_before = llm.open
    llm.slow = True
    got_token = 0
    failures: list[str] = []
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        nonlocal got_token
        async with gate, httpx.AsyncClient(verify=False) as client:
            headers = {"Authorization": f"Bearer {tenant.token}", "X-Kgdb-Graph": tenant.name}
            try:
                async with client.stream("POST", base + request.path, json=request.body,
                                         headers=headers, timeout=30) as r:
                    if r.status_code != 200:
                        failures.append(f"status {r.status_code}")
                        return
                    events = await asyncio.wait_for(read_events(r, until="token"), 30)
                    if events and events[-1][0] == "token":
                        got_token += 1
            except (httpx.HTTPError, TimeoutError) as exc:
                failures.append(type(exc).__name__)

    t0 = time.monotonic()
    await asyncio.gather(*(one() for _ in range(count)))
    sent_s = time.monotonic() - t0
    open_at_close = llm.open
    await asyncio.sleep(10)
    open_after = llm.open
    llm.slow = False
    async with httpx.AsyncClient(verify=False) as client:  # the service still answers
        alive = await send(client, base, tenant, tenant.mix[0])
    after = await settled(tenant, replicas)
    return {"requests": count, "concurrency": concurrency, "got_first_token": got_token,
            "client_failures": failures[:10], "failed": len(failures),
            "seconds_to_send": round(sent_s, 1),
            "upstream_open_before": open_before, "upstream_open_when_last_client_left":
                open_at_close, "upstream_open_after_10s": open_after,
            "upstream_broken_pipes": llm.broken,
            "servers_before": before, "servers_after_10s": after,
            "threads_left": {n: (after[n] or {}).get("threads", 0) -
                             (before.get(n) or {}).get("threads", 0) for n in after},
            "fds_left": {n: (after[n] or {}).get("fds", 0) - (before.get(n) or {}).get("fds", 0)
                         for n in after},
            "service_answers_after": alive.status == 200,
            "passed": open_after == open_before and all(
                v <= 0 for v in [*((after[n] or {}).get("threads", 0) -
                                   (before.get(n) or {}).get("threads", 0) for n in after),
                                 *((after[n] or {}).get("fds", 0) -
                                   (before.get(n) or {}).get("fds", 0) for n in after)])}


async def metrics(replicas: list[Replica]) -> dict[str, Any]:
    """Each live replica's /metrics (absent before the service has it: reported, not an
    error): its request counters, parsed with prometheus_client where it is installed."""
    import httpx

    out: dict[str, Any] = {}
    async with httpx.AsyncClient(verify=False) as client:
        for r in replicas:
            if r.process.poll() is not None:
                continue
            try:
                response = await client.get(r.url + "/metrics", timeout=10, headers={
                    "Authorization": f"Bearer {METRICS_TOKEN.get('secret', '')}"})
            except httpx.HTTPError as exc:
                out[f"serve-{r.index}"] = {"error": type(exc).__name__}
                continue
            entry: dict[str, Any] = {"status": response.status_code}
            if response.status_code == 200:
                entry["families"] = summarise_metrics(response.text)
            out[f"serve-{r.index}"] = entry
    return out


METRICS_TOKEN: dict[str, str] = {}


def summarise_metrics(text: str) -> dict[str, float]:
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        return {"lines": float(len(text.splitlines()))}
    totals: dict[str, float] = defaultdict(float)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.endswith(("_total", "_count")):
                totals[sample.name] += float(sample.value)
    return dict(totals)


def report_rows(tally: Tally, alone: Tally, seconds: float) -> dict[str, Any]:
    from kgdb.measure import percentile

    rows: dict[str, Any] = {}
    for key in sorted(set(tally.counts) | set(alone.ms)):
        ms = tally.ms.get(key, [])
        row: dict[str, Any] = {"requests": sum(tally.counts[key].values()),
                               **dict(tally.counts[key]),
                               "per_s": round(sum(tally.counts[key].values()) / seconds, 2)}
        if ms:
            row.update({f"p{p}_ms": round(percentile(ms, p), 1) for p in (50, 95, 99)})
        if alone.ms.get(key):
            row["alone_p50_ms"] = round(percentile(alone.ms[key], 50), 1)
            if ms:
                row["p99_over_alone_p50"] = round(percentile(ms, 99) / row["alone_p50_ms"], 1)
        rows[key] = row
    return rows


def memory_summary(samples: list[dict[str, Any]], warmup_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    names = sorted({k for s in samples for k in s if k.startswith("serve-")})
    for name in names:
        series = [(s["t_s"], s[name]["rss_kb"]) for s in samples if s.get(name)]
        warm = [v for t, v in series if t >= warmup_s] or [v for _, v in series]
        if not warm:
            continue
        out[name] = {"first_mb": round(series[0][1] / 1024, 1),
                     "after_warmup_first_mb": round(warm[0] / 1024, 1),
                     "after_warmup_min_mb": round(min(warm) / 1024, 1),
                     "after_warmup_max_mb": round(max(warm) / 1024, 1),
                     "last_mb": round(warm[-1] / 1024, 1),
                     "change_after_warmup_pct": round((warm[-1] - warm[0]) / warm[0] * 100, 1),
                     "spread_after_warmup_pct": round((max(warm) - min(warm)) / warm[0] * 100,
                                                      1)}
    return out


def thin(samples: list[dict[str, Any]], most: int = 120) -> list[dict[str, Any]]:
    step = max(1, math.ceil(len(samples) / most))
    return samples[::step]


def engine_pid(engine: str, neo4j: dict[str, str] | None) -> int | None:
    from kgdb.config import Settings

    home = Settings.from_env().home
    state = (home / "falkordb" / "server.json") if engine == "falkordb" else \
        Path(neo4j.get("home", "")) / "server.json" if neo4j and neo4j.get("home") else None
    if state is None or not state.exists():
        return None
    with contextlib.suppress(ValueError, KeyError, OSError):
        return int(json.loads(state.read_text())["pid"])
    return None


def run(plan: Plan) -> dict[str, Any]:
    from kgdb.embed import default_embedder
    from kgdb.serve.tokens import TokenFile

    started = time.time()
    load_before = os.getloadavg()
    if plan.engine == "neo4j" and plan.neo4j is None:
        raise SystemExit("loadtest: --engine neo4j needs KGDB_URI (or --neo4j-home to start one)")
    notes: list[str] = []
    tenant_count = plan.tenants
    if plan.engine == "neo4j" and tenant_count > 1:
        notes.append(f"Neo4j Community has one user database: 1 tenant with "
                     f"{plan.tenants * plan.clients} clients instead of {plan.tenants} x "
                     f"{plan.clients}")
        tenant_count, clients = 1, plan.tenants * plan.clients
    else:
        clients = plan.clients
    names = ["neo4j"] if plan.engine == "neo4j" else [f"lt{i}" for i in range(tenant_count)]
    tenants = deal(names, plan.films)
    for t in tenants:
        t.mix = build_mix(t, [o for o in tenants if o is not t], plan.questions)
    work = Path(tempfile.mkdtemp(prefix="kgdb-loadtest-"))
    log(plan, f"building {len(tenants)} tenant graph(s) in {work}")
    embedder = default_embedder()
    built = [build_tenant(t, plan.engine, plan.neo4j, embedder, work) for t in tenants]
    tokens = TokenFile(work / "tokens.json", [])
    for t in tenants:
        t.token = tokens.add(f"client-{t.name}", ("read",), (t.name,))
    METRICS_TOKEN["secret"] = tokens.add("operator", ("read",), ("*",))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OPENAI_API_KEY": "scripted",
           "KGDB_LLM_MODEL": "scripted", "KGDB_LLM_RETRIES": "0"}
    if plan.engine == "neo4j":
        assert plan.neo4j is not None
        env.update({"KGDB_URI": plan.neo4j["uri"], "NEO4J_USERNAME": plan.neo4j["username"],
                    "NEO4J_PASSWORD": plan.neo4j["password"]})
    else:
        env.pop("KGDB_URI", None)
        env["KGDB_GRAPH"] = names[0]
    checker = Checker(tenants)
    writers = Writers(plan.engine, plan.neo4j, names, work) if plan.writers else None
    replicas: list[Replica] = []
    proxy: Proxy | None = None
    with scripted_llm() as llm:
        env["OPENAI_BASE_URL"] = llm.base_url
        try:
            replicas = [Replica(i, env, work / "tokens.json", work)
                        for i in range(plan.replicas)]
            for r in replicas:
                r.wait_ready()
            if plan.replicas > 1 or plan.proxy:
                proxy = Proxy(replicas, work)
            base = proxy.url if proxy else replicas[0].url
            result = asyncio.run(_measure(plan, base, tenants, checker, writers, replicas,
                                          llm, clients))
        finally:
            if proxy:
                proxy.stop()
            for r in replicas:
                r.stop()
            if writers:
                writers.close()
    result = {"what": "kgdb serve under load (benchmarks/loadtest.py)",
              "engine": plan.engine, "replicas": plan.replicas,
              "proxy": "nginx" if proxy else None, "tenants": len(tenants),
              "clients_per_tenant": clients, "duration_s": plan.duration_s,
              "think_s": plan.think_s,
              "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
              "machine": {"cpus": os.cpu_count(), "load_average_before":
                          [round(x, 2) for x in load_before],
                          "load_average_after": [round(x, 2) for x in os.getloadavg()]},
              "notes": notes, "graphs": built, **result}
    if plan.out:
        from kgdb.results import SLUG, result_document

        what = re.sub(r"^\d{4}-\d\d-\d\d-", "", plan.out.stem)
        what = what if SLUG.match(what) else f"loadtest-{plan.engine}-{plan.replicas}"
        document = result_document(what, result, engine=plan.engine,
                                   command=["python", "-m", "benchmarks.loadtest",
                                            *plan.argv], load_at_start=list(load_before))
        plan.out.parent.mkdir(parents=True, exist_ok=True)
        plan.out.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    if result["passed"]:
        shutil.rmtree(work, ignore_errors=True)
    else:  # the servers' and nginx's logs, for whoever reads the failure
        result["work_dir"] = str(work)
    return result


async def _measure(plan: Plan, base: str, tenants: list[Tenant], checker: Checker,
                   writers: Writers | None, replicas: list[Replica], llm: Any,
                   clients: int) -> dict[str, Any]:
    alone = Tally()
    problems: list[str] = []
    log(plan, "baselines: every request alone, in each state of the writers' documents")
    await baseline(base, tenants, checker, Tally(), "warm-up", record=False)
    problems += await baseline(base, tenants, checker, alone, "absent")
    if writers:
        writers.do("load")
        problems += await baseline(base, tenants, checker, alone, "present")
        writers.do("delete")
    problems += await baseline(base, tenants, checker, alone, "absent again")
    states = {f"{t}#{i}": len(v) for (t, i), v in checker.accepted.items() if len(v) > 1}
    replica_check = await same_on_every_replica(replicas, tenants, checker) \
        if len(replicas) > 1 else None
    metrics_before = await metrics(replicas)

    tally = Tally()
    samples: list[dict[str, Any]] = []
    done = asyncio.Event()
    writers_started_s = None
    if writers:
        t0 = time.monotonic()
        await asyncio.to_thread(writers.do, "run")
        writers_started_s = round(time.monotonic() - t0, 2)
    start = time.monotonic()
    stop_at = start + plan.duration_s
    in_flight = {"n": 0}
    epid = engine_pid(plan.engine, plan.neo4j)
    lags: list[float] = []
    background = [asyncio.create_task(sampler(replicas, epid, start, plan.sample_s, samples,
                                              done)),
                  asyncio.create_task(loop_lag(lags, done))]
    if plan.progress:
        background.append(asyncio.create_task(progress(tally, start, stop_at, done)))
    kill: dict[str, Any] | None = None
    loops = [asyncio.create_task(client_loop(base, t, checker, tally, 1000 * n + c, start,
                                             stop_at, in_flight, plan.min_rounds,
                                             plan.think_s))
             for n, t in enumerate(tenants) for c in range(clients)]
    if plan.kill_replica and len(replicas) > 1:
        await asyncio.sleep(plan.duration_s / 2)
        before = {k: dict(v) for k, v in tally.counts.items()}
        kill = {"replica": 0, "at_s": round(time.monotonic() - start, 1),
                "requests_in_flight_overall": in_flight["n"],
                "requests_before": sum(sum(c.values()) for c in before.values())}
        replicas[0].kill()
        kill["counts_before"] = {k: {v: n for v, n in c.items() if v != "ok"}
                                 for k, c in before.items()}
    await asyncio.gather(*loops)
    seconds = time.monotonic() - start
    writer_stats = (await asyncio.to_thread(writers.do, "stop"))["stats"] if writers else None
    done.set()
    await asyncio.gather(*background)
    disconnect = await disconnect_test(base, tenants, llm, replicas, plan.disconnects) \
        if plan.disconnects else None
    metrics_after = await metrics(replicas)

    totals: dict[str, int] = defaultdict(int)
    for c in tally.counts.values():
        for verdict, n in c.items():
            totals[verdict] += n
    failed_after_kill = {k: v for k, v in totals.items()
                         if k in ("server_error", "transport_error")} if kill else {}
    if kill:
        kill["errors_in_whole_run"] = failed_after_kill
        after = sum(sum(c.values()) for c in tally.counts.values()) - kill["requests_before"]
        kill["per_s_before"] = round(kill["requests_before"] / kill["at_s"], 2)
        kill["per_s_after"] = round(after / max(0.1, seconds - kill["at_s"]), 2)
    wrong = totals.get("wrong", 0) + totals.get("cross_tenant", 0)
    errors = sum(v for k, v in totals.items() if k not in ("ok", "straddled", "deliberate_4xx"))
    checks = {"answers_checked": totals.get("ok", 0) + totals.get("straddled", 0) +
              totals.get("wrong", 0) + totals.get("cross_tenant", 0), **totals,
              "baseline_problems": problems[:20], "requests_with_more_than_one_state": states,
              "examples": tally.examples}
    passed = not problems and wrong == 0 and (errors == 0 or (
        kill is not None and wrong == 0 and set(failed_after_kill) | {"ok"} >= {
            k for k, v in totals.items() if v and k not in ("deliberate_4xx", "straddled")}))
    if replica_check is not None:
        passed = passed and bool(replica_check["same"])
    n = sum(sum(c.values()) for c in tally.counts.values())
    return {"throughput_per_s": round(n / seconds, 2),
            "answers_per_s": round(totals.get("ok", 0) / seconds, 2),
            "measured_s": round(seconds, 1), "requests": n,
            "per_10s": [sum(1 for t in tally.finished if b * 10 <= t < b * 10 + 10)
                        for b in range(math.ceil(seconds / 10))],
            "writers_started_s": writers_started_s,
            "endpoints": report_rows(tally, alone, seconds), "checks": checks,
            "client_loop_lag_ms": lag_summary(lags),
            "writers": _writer_summary(writer_stats), "replica_kill": kill,
            "replicas_agree": replica_check,
            "memory": {"warmup_s": plan.warmup_s,
                       "summary": memory_summary(samples, plan.warmup_s),
                       "samples": thin(samples)},
            "disconnect": disconnect,
            "metrics": {"before": metrics_before, "after": metrics_after},
            "passed": passed}


def lag_summary(lags: list[float]) -> dict[str, float] | None:
    from kgdb.measure import percentile

    if not lags:
        return None
    return {"p50": round(percentile(lags, 50), 1), "p99": round(percentile(lags, 99), 1),
            "max": round(max(lags), 1), "samples": len(lags)}


def _writer_summary(stats: dict[str, Any] | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    from kgdb.measure import percentile

    out: dict[str, Any] = {}
    for tenant, s in stats.items():
        ms = s["ms"]
        out[tenant] = {"loads": s["loads"], "deletes": s["deletes"],
                       "errors": s["errors"][:5], "error_count": len(s["errors"]),
                       **({"p50_ms": round(percentile(ms, 50), 1),
                           "p99_ms": round(percentile(ms, 99), 1)} if ms else {})}
    return out


def log(plan: Plan, message: str) -> None:
    if plan.progress:
        print(f"loadtest: {message}", file=sys.stderr)


def neo4j_from(args: argparse.Namespace) -> dict[str, str] | None:
    if args.engine != "neo4j":
        return None
    if args.neo4j_home:
        from kgdb.engine.neo4j_local import LocalNeo4j

        server = LocalNeo4j(Path(args.neo4j_home))
        state = server.ensure_started(args.neo4j_port)
        settings = server.settings(state)
        return {"uri": settings["KGDB_URI"], "username": settings["NEO4J_USERNAME"],
                "password": settings["NEO4J_PASSWORD"], "home": str(args.neo4j_home)}
    uri = os.environ.get("KGDB_URI") or os.environ.get("NEO4J_URI")
    if not uri:
        return None
    return {"uri": uri, "username": os.environ.get("NEO4J_USERNAME", "neo4j"),
            "password": os.environ.get("NEO4J_PASSWORD", "")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loadtest",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=["falkordb", "neo4j"], default="falkordb")
    parser.add_argument("--tenants", type=int, default=4)
    parser.add_argument("--clients", type=int, default=8, help="per tenant")
    parser.add_argument("--duration", type=float, default=300.0, help="seconds of load")
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--proxy", action="store_true", help="nginx in front of one replica")
    parser.add_argument("--kill-replica", action="store_true",
                        help="SIGKILL replica 0 half-way (needs --replicas 2 or more)")
    parser.add_argument("--think", type=float, default=0.0, help=(
        "mean seconds a client pauses before each request (exponential; 0: closed loop)"))
    parser.add_argument("--no-writers", action="store_true")
    parser.add_argument("--disconnects", type=int, default=100,
                        help="streamed /ask requests whose clients go away (0: none)")
    parser.add_argument("--questions", type=int, default=2, help="films asked about per tenant")
    parser.add_argument("--films", type=int, default=0,
                        help="films per tenant at most (0: all 39 dealt out)")
    parser.add_argument("--warmup", type=float, default=30.0,
                        help="seconds before memory counts as warm")
    parser.add_argument("--neo4j-home", type=Path, default=None,
                        help="start (or reuse) kgdb's local Neo4j in this directory")
    parser.add_argument("--neo4j-port", type=int, default=None, help="its Bolt port")
    parser.add_argument("--out", type=Path, default=None, help=(
        "the JSON file (default benchmarks/results/<date>-loadtest-<engine>-<replicas>"
        "[-think-<ms>ms].json;"
        " '-' for none)"))
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    if args.tenants < 1 or args.clients < 1 or args.replicas < 1 or args.duration <= 0:
        parser.error("--tenants, --clients, --replicas and --duration must be positive")
    if not 0 <= args.think < 3600:
        parser.error("--think must be at least 0 seconds and below an hour")
    out = None if str(args.out) == "-" else args.out or RESULTS / (
        f"{time.strftime('%Y-%m-%d', time.gmtime())}-loadtest-{args.engine}-"
        f"{args.replicas}{f'-think-{round(1000 * args.think)}ms' if args.think else ''}.json")
    plan = Plan(engine=args.engine, tenants=args.tenants, clients=args.clients,
                duration_s=args.duration, think_s=args.think, replicas=args.replicas,
                proxy=args.proxy,
                kill_replica=args.kill_replica, writers=not args.no_writers,
                disconnects=args.disconnects, questions=args.questions,
                films=args.films, warmup_s=args.warmup, out=out, neo4j=neo4j_from(args),
                progress=not args.quiet, argv=list(argv if argv is not None else sys.argv[1:]))
    try:
        result = run(plan)
    except RuntimeError as exc:
        print(f"loadtest: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
