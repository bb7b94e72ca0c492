"""The knowledge service's HTTP API (FastAPI): ask, retrieve, logical forms, rules, embeddings,
Dify's external-knowledge retrieval, and the relay endpoints the Cypher procedures call.

Every request names its tenant (header ``X-Kgdb-Graph``: a FalkorDB graph or a Neo4j
database; Dify's ``knowledge_id``), which its bearer token must allow; everything the request
reads, including the context an answer is written from, comes from that tenant's store only.
Statements run through a :meth:`~kgdb.engine.base.GraphStore.view` of the tenant's store:
read-only unless the server allows writes and the token has the write scope, with the
server's statement timeout and transaction metadata naming kgdb and the endpoint.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.exceptions import HTTPException

from kgdb import errors, graph_cache
from kgdb.engine.base import GraphStore
from kgdb.package import version
from kgdb.retrieve.evidence import Evidence
from kgdb.retrieve.export import HTML_CSP, MEDIA_TYPES, export, passage_mentions
from kgdb.retrieve.registry import AnyOptions, parse_options
from kgdb.retrieve.solver import Answer
from kgdb.serve.audit import Audit
from kgdb.serve.embedding import DEADLINE, remaining
from kgdb.serve.errors import ServiceError, new_request_id, report, scrub
from kgdb.serve.metrics import Metrics
from kgdb.serve.observe import Observe, RequestRecord, route_namer
from kgdb.serve.operations import MAX_TEXT, Operations, ServeConfig, cap_lists
from kgdb.serve.streaming import Drain, EventStream, event
from kgdb.serve.tenants import Tenants
from kgdb.serve.tokens import ANY_GRAPH, Token, TokenFile

__all__ = ["ServeConfig", "ServiceError", "create_app"]

log = logging.getLogger("kgdb.serve")

GRAPH_HEADER = "X-Kgdb-Graph"
REQUEST_ID = "X-Request-Id"
TRUNCATED = "X-Kgdb-Truncated"
MAX_QUESTION = 4000
OPEN_PATHS = ("/livez", "/readyz", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json",
              "/", "/ui/app.js", "/ui/app.css")
"""Paths that need no token; every other request shows a valid one before its body is read.
The web page (``/`` and its two files) holds no data: it asks for a token in the browser."""
UI = Path(__file__).parent / "ui"
UI_FILES = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
            "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
"""The web page's Content-Security-Policy: its own script and style files only (no inline
script or style, no other origin), requests to this service only."""


# ---------------------------------------------------------------------- request and response
class Body(BaseModel):
    """A request body: every string in it, keys included, keeps the text contract (no NUL,
    control characters or lone surrogates), or the request is refused with the place."""

    @model_validator(mode="before")
    @classmethod
    def _text_contract(cls, data: Any) -> Any:
        from kgdb.serve.operations import text_contract

        problem = text_contract(data)
        if problem:
            raise ValueError(problem)
        return data


class AskRequest(Body):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(..., min_length=1, max_length=MAX_QUESTION)
    options: AnyOptions = Field(default_factory=lambda: parse_options(None), description=(
        "the solver (``solver``, default pattern) and its options"))


class AskStreamRequest(AskRequest):
    stream: bool = Field(False, description=(
        "answer as server-sent events (text/event-stream): ``evidence`` (the evidence's "
        "JSON), then ``token`` events ({text}) as the LLM writes the answer, then ``done`` "
        "({answer, verdict, llm: {requests, tokens_in, tokens_out}, timings_ms}); a failure "
        "after the evidence is an ``error`` event ({error: {status, message, request_id}})"))


class ExploreRequest(Body):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(..., min_length=1, max_length=4096, description="an entity's id")
    limit: int = Field(50, ge=1, le=1000, description=(
        "neighbours at most (and at most --max-rows); ``capped`` says there were more"))


class MentionsRequest(Body):
    model_config = ConfigDict(extra="forbid")
    chunks: list[Annotated[str, Field(max_length=4096)]] = Field(..., max_length=1000,
                                                                  description="chunk ids")


class LfRequest(Body):
    model_config = ConfigDict(extra="forbid")
    program: str = Field(..., min_length=1, max_length=MAX_TEXT,
                         description="a logical form (kgdb's logical-form language)")
    link: bool = Field(True, description="link names through the graph first")


class RulesRequest(Body):
    model_config = ConfigDict(extra="forbid")
    ruleset: str | None = Field(None, max_length=200,
                                description="a rule set the server loaded (--rules)")
    rules: str | None = Field(None, max_length=MAX_TEXT,
                              description="or the rules' text (kgdb's rule language)")
    facts: dict[str, Any] = Field(default_factory=dict,
                                  description="the instance's properties")


class ApplyRequest(Body):
    model_config = ConfigDict(extra="forbid")
    ruleset: str = Field(..., max_length=200)
    label: str | None = Field(None, max_length=200)


class EmbeddingsRequest(Body):
    model_config = ConfigDict(extra="allow")
    input: str | list[str] = Field(...)
    model: str = Field("kgdb", max_length=200)


class DifyRetrievalSetting(BaseModel):
    top_k: int = Field(..., ge=0, le=1000)
    score_threshold: float = Field(0.0, ge=0.0, le=1.0)


class DifyRequest(Body):
    model_config = ConfigDict(extra="allow")
    knowledge_id: str = Field(..., max_length=200)
    query: str = Field(..., max_length=MAX_QUESTION)
    retrieval_setting: DifyRetrievalSetting
    metadata_condition: dict[str, Any] | None = None


@dataclass
class Call:
    """One authorised request: its token, tenant, endpoint and store view."""

    token: Token
    graph: str
    endpoint: str
    store: GraphStore


# ---------------------------------------------------------------------- authorisation
@contextmanager
def authorise(request: Request, write: bool, graph: str | None = None) -> Iterator[Call]:
    """The request's token, checked against the tenant it names and the scope it needs; the
    tenant's store, leased for the request, as a view for this request."""
    config: ServeConfig = request.app.state.config
    tenants: Tenants = request.app.state.tenants
    token = _token(config.tokens, request.headers.get("authorization"))
    name = graph or request.headers.get(GRAPH_HEADER) or tenants.default
    record = _record(request)
    if record is not None:
        record.token, record.graph = token.name, name
    if not token.may_use(name):
        raise ServiceError(403, f"token {token.name!r} may not use {name[:80]!r}")
    if write and not config.allow_writes:
        raise ServiceError(403, "this server is read-only (start it with --allow-writes)")
    if write and "write" not in token.scopes:
        raise ServiceError(403, f"token {token.name!r} has no write scope")
    endpoint = request.url.path
    with tenants.lease(name) as store:
        view = store.view(read_only=not write, timeout_s=config.timeout_s,
                          metadata={"app": "kgdb", "endpoint": endpoint, "token": token.name,
                                    "kgdb": version()}, remaining=remaining)
        yield Call(token, name, endpoint, view)


BEARER = HTTPBearer(auto_error=False, description="a token of `kgdb tokens add`")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]
GraphHeader = Annotated[str | None, Header(alias=GRAPH_HEADER, description=(
    "the graph (FalkorDB) or database (Neo4j) to use; default: the server's"))]


def reader(request: Request, _credentials: Credentials = None,
           _graph: GraphHeader = None) -> Iterator[Call]:
    """Declares the bearer token and the graph header in the OpenAPI document; the checks
    read the raw headers (:func:`authorise`)."""
    with authorise(request, False) as call:
        yield call


def writer(request: Request, _credentials: Credentials = None,
           _graph: GraphHeader = None) -> Iterator[Call]:
    with authorise(request, True) as call:
        yield call


def signed(request: Request, _credentials: Credentials = None) -> Token:
    """The request's token, for requests that read no graph."""
    config: ServeConfig = request.app.state.config
    return _token(config.tokens, request.headers.get("authorization"))


Signed = Annotated[Token, Depends(signed)]
Reader = Annotated[Call, Depends(reader)]
Writer = Annotated[Call, Depends(writer)]
Format = Annotated[Literal["json", "csv"], Query(description="json, or csv for the rows")]
EvidenceFormat = Annotated[Literal["json", "csv", "mermaid", "graphml", "html"], Query(
    description="json; csv for the evidence rows; mermaid (a flowchart), graphml or html (one "
                "self-contained page with the drawing, no script) for the evidence graph")]
STREAM_RESPONSE: dict[int | str, dict[str, Any]] = {200: {"description": (
    "The answer as JSON; with ``stream: true`` as server-sent events: ``event: evidence``, "
    "then ``event: token`` per piece of the answer, then ``event: done`` with the answer, "
    "the LLM's requests and tokens and the timings (``event: error`` if it fails after the "
    "evidence)."),
    "content": {"application/json": {}, "text/event-stream": {"schema": {
        "type": "string", "description": "event: evidence|token|done|error, data: JSON"}}}}}


class Guard:
    """ASGI middleware in front of every request: a request id (the ``X-Request-Id`` response
    header, and in every error body), the request's deadline (``--timeout`` for the whole
    request), the body's size limit (413 before a byte of an oversized body is read, by
    Content-Length or while it streams), and the token checked before the body is read."""

    def __init__(self, app: Any, config: ServeConfig,
                 reload_tokens: Callable[[str], None]) -> None:
        self.app = app
        self.config = config
        self.reload_tokens = reload_tokens

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from kgdb.serve.embedding import deadline

        state = scope.setdefault("state", {})
        rid = state.get("request_id") or new_request_id()  # Observe's, outside this
        state["request_id"] = rid

        async def send_with_id(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []),
                                      (REQUEST_ID.lower().encode(), rid.encode())]
            await send(message)

        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        if scope["path"] not in OPEN_PATHS:
            self.reload_tokens("change")
            try:
                token = _token(self.config.tokens, headers.get("authorization"))
                record = state.get("record")
                if record is not None:
                    record.token = token.name
            except ServiceError as exc:
                await _refuse(send_with_id, scope, exc.status, str(exc), rid,
                              {"WWW-Authenticate": "Bearer"})
                return
        limit = self.config.max_body
        length = headers.get("content-length", "")
        if length and (not length.isdigit() or int(length) > limit):
            await _refuse(send_with_id, scope, 413, f"the request body is larger than "
                                                    f"{limit} bytes", rid)
            return
        seen = 0

        async def bounded_receive() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:  # a body without Content-Length, or longer than it said
                    raise HTTPException(413, f"the request body is larger than {limit} bytes")
            return message

        with deadline(self.config.timeout_s):
            await self.app(scope, bounded_receive, send_with_id)


async def _refuse(send: Any, scope: Any, status: int, message: str, rid: str,
                  headers: dict[str, str] | None = None) -> None:
    response = _error(scope["path"], status, message, rid, headers)
    await response({"type": "http"}, _no_body, send)


async def _no_body() -> Any:
    return {"type": "http.disconnect"}


def _error(path: str, status: int, message: str, rid: str,
           headers: dict[str, str] | None = None) -> JSONResponse:
    if path == "/retrieval":  # Dify's error shape
        code = {401: 1001, 403: 1002, 404: 2001}.get(status, 500)
        return JSONResponse({"error_code": code, "error_msg": message, "request_id": rid},
                            status, headers=headers)
    return JSONResponse({"error": {"status": status, "message": message,
                                   "request_id": rid}}, status, headers=headers)


def _request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", "") or new_request_id())


# ---------------------------------------------------------------------- the application
def create_app(config: ServeConfig, *, embedder: Any = None, llm: Any = None) -> FastAPI:
    """The service. ``embedder`` and ``llm`` default to the configured ones (loaded at first
    use); tests pass their own."""
    ops = Operations(config, embedder=embedder, llm=llm)
    tenants = Tenants(config.settings, config.max_tenants, on_close=ops.forget)
    metrics = Metrics(lambda: [*graph_cache.stats(), ops.embedding_stats()])
    audit = Audit(config.audit_log, questions=config.audit_questions)
    drain = Drain()

    def reload_tokens(trigger: str) -> None:
        """Read the token file again when it changed (``trigger`` "change", before every
        request) or at once ("signal", SIGHUP); one audit record per reload or refusal."""
        done = config.tokens.reload(force=trigger == "signal")
        metrics.tokens.set(len(config.tokens.tokens))
        if done is None:
            return
        metrics.token_reloads.labels(done.result).inc()
        fields: dict[str, Any] = {"result": done.result, "file": str(config.tokens.path),
                                  "tokens": done.tokens, "trigger": trigger}
        if done.result == "reloaded":
            fields.update(added=list(done.added), removed=list(done.removed),
                          changed=list(done.changed))
        else:
            fields["reason"] = done.reason
            log.error("kgdb serve: the token file was not reloaded: %s", done.reason)
        audit.write("tokens", **fields)

    def begin_drain(grace: float) -> None:
        metrics.draining.set(1)
        audit.write("shutdown", phase="draining", grace_s=grace,
                    in_flight=int(metrics.registry.get_sample_value(
                        "kgdb_http_requests_in_flight") or 0))

    drain.on_begin.append(begin_drain)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        # the model loads beside the first requests (/livez answers, /readyz says when)
        warming = threading.Thread(target=_warm, args=(ops,), daemon=True, name="kgdb-warm")
        warming.start()
        yield
        tenants.close()
        if drain.draining:
            audit.write("shutdown", phase="stopped")
        audit.close()

    app = FastAPI(title="kgdb knowledge service", version=version(), lifespan=lifespan,
                  description=__doc__)
    app.state.tenants = tenants
    app.state.config = config
    app.state.operations = ops
    app.state.metrics = metrics
    app.state.audit = audit
    app.state.drain = drain
    app.state.reload_tokens = reload_tokens
    metrics.tokens.set(len(config.tokens.tokens))
    app.add_middleware(Guard, config=config, reload_tokens=reload_tokens)
    app.add_middleware(Observe, metrics=metrics, audit=audit,
                       endpoint_of=route_namer(app.router.routes))

    @app.exception_handler(errors.KgdbError)
    @app.exception_handler(Exception)
    async def any_error(request: Request, exc: Exception) -> JSONResponse:
        """The one mapping (kgdb.serve.errors): what failed, never how; details logged."""
        rid = _request_id(request)
        status, message = report(exc, rid, f"{request.method} {request.url.path}")
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return _error(request.url.path, status, message, rid, headers)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        """Starlette's own refusals (an unknown path, a method, a body too large) in the
        service's error shape."""
        return _error(request.url.path, exc.status_code, scrub(str(exc.detail)),
                      _request_id(request), dict(exc.headers or {}) or None)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        """422 naming the place and the rule, never the value (it may be NaN, Infinity or
        text that no JSON can carry back)."""
        rid = _request_id(request)
        problems = []
        for error in exc.errors()[:5]:
            where = ".".join(str(p) for p in error.get("loc", ()))
            problems.append(f"{where}: {scrub(str(error.get('msg', 'invalid')))}")
        message = "; ".join(problems) or "invalid request"
        report(ServiceError(422, message), rid, f"{request.method} {request.url.path}")
        if request.url.path.startswith("/relay/"):  # the procedure raises it (see _relayed)
            return JSONResponse([{"error": f"{message} (status 422, request {rid})"}])
        return _error(request.url.path, 422, message, rid)

    # ------------------------------------------------------------------ endpoints
    @app.get("/livez", tags=["service"])
    def livez() -> dict[str, str]:
        """Liveness for process managers (the process answers); needs no token and says
        nothing about the data. Readiness is ``/readyz``."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["service"], responses={503: {"description": "still loading"}})
    def readyz() -> JSONResponse:
        """Readiness for load balancers: 200 once the embedding model is loaded (requests
        are then answered without waiting for it), 503 ``loading`` before and ``draining``
        once the server is stopping; no token."""
        if drain.draining:
            return JSONResponse({"status": "draining"}, 503)
        if ops.ready:
            return JSONResponse({"status": "ready"})
        return JSONResponse({"status": "loading"}, 503)

    @app.get("/metrics", tags=["service"], response_class=PlainTextResponse)
    def prometheus_metrics(_token: Signed) -> Response:
        """The service's metrics in Prometheus' text format (docs/operations.md lists them):
        requests, latency histograms per endpoint and solver, errors, LLM requests and
        tokens, cache hits, token reloads; any token may read them."""
        body, content_type = metrics.render()
        return Response(body, media_type=content_type)

    @app.get("/", include_in_schema=False)
    def page() -> Response:
        """The web page: ask, watch the answer stream, explore the evidence graph."""
        return Response((UI / "index.html").read_bytes(), media_type="text/html; charset=utf-8",
                        headers=_page_headers())

    @app.get("/ui/{name}", include_in_schema=False)
    def asset(name: str) -> Response:
        if name not in UI_FILES:
            raise ServiceError(404, "no such file")
        return Response((UI / name).read_bytes(), media_type=UI_FILES[name],
                        headers=_page_headers())

    @app.get("/graphs", tags=["service"])
    def graphs(token: Signed, request: Request) -> dict[str, Any]:
        """The graphs (FalkorDB) or databases (Neo4j) this token may read: those it names,
        or for a token of every graph (``*``) the engine's (no graph header needed)."""
        if ANY_GRAPH in token.graphs:
            with authorise(request, False, tenants.default) as call:
                names = ops.graphs(call.store, token, tenants.default)
        else:
            names = sorted(token.graphs)
        return {"graphs": names, "token": token.name,
                "default": tenants.default if token.may_use(tenants.default) else None,
                "writes": config.allow_writes and "write" in token.scopes}

    @app.get("/solvers", tags=["questions"])
    def solvers(_token: Signed) -> dict[str, Any]:
        """Every solver: its summary, whether it needs an LLM to retrieve, its options' JSON
        schema (the web page's form is generated from it); ``llm``: whether this server has
        an LLM (to answer, stream, or retrieve with the solvers that need one)."""
        return {"solvers": ops.solvers(), "llm": ops.has_llm()}

    @app.post("/explore", tags=["questions"])
    def explore(body: ExploreRequest, call: Reader) -> dict[str, Any]:
        """An entity's labels and properties (never vectors) and at most ``limit`` of its
        neighbours, read-only; ``capped: true`` when it has more."""
        return ops.explore(call.store, body.id, body.limit)

    @app.post("/mentions", tags=["questions"])
    def mentions(body: MentionsRequest, call: Reader) -> dict[str, Any]:
        """The entities each chunk mentions (the mutual index), read-only: the web page
        highlights them in the passages."""
        return ops.mentions(call.store, body.chunks)

    @app.get("/health", tags=["service"])
    def health(call: Reader) -> dict[str, Any]:
        """The engine, versions, the tenant's indexes and the installed procedures."""
        return ops.health(call.store, call.graph)

    @app.post("/ask", tags=["questions"], responses=STREAM_RESPONSE)
    def ask(body: AskStreamRequest, call: Reader, request: Request,
            format: EvidenceFormat = "json") -> Any:
        """Answer a question with a solver: the answer, its evidence, the Cypher, timings and
        the LLM's requests and tokens; ``stream: true`` sends them as server-sent events."""
        record = _noted(request, body)
        if body.stream:
            if format != "json":
                raise ServiceError(400, "a streamed answer is JSON events: ask for format "
                                        f"{format} without stream")
            events = ops.ask_stream(call.store, body.question, body.options)
            evidence = next(events)  # found now, with the tenant's store; failures are HTTP
            rid = _request_id(request)
            if record is not None:
                record.stream = True

            def final(status: int, message: str) -> bytes:
                if record is not None:
                    record.stream_status = status
                return event("error", {"error": {"status": status, "message": message,
                                                 "request_id": rid}})

            def ended(outcome: str) -> None:
                if record is not None:
                    record.outcome = outcome

            return EventStream(
                _events(evidence, events, config.max_rows, rid, record),
                deadline=DEADLINE.get(), drain=drain, final=final, ended=ended,
                headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
        answer = ops.ask(call.store, body.question, body.options)
        return _answer_response(answer, config.max_rows, format, call.store)

    @app.post("/retrieve", tags=["questions"])
    def retrieve(body: AskRequest, call: Reader, request: Request,
                 format: EvidenceFormat = "json") -> Any:
        """The evidence a solver finds, without an LLM answer (SimGRAG needs a pattern or an
        LLM for it)."""
        _noted(request, body)
        evidence = ops.retrieve(call.store, body.question, body.options)
        return _answer_response(evidence, config.max_rows, format, call.store)

    @app.post("/lf/run", tags=["programs"])
    def lf_run(body: LfRequest, call: Reader, format: Format = "json") -> Any:
        """Run a logical form: its outputs (rows), each step's Cypher and result."""
        return _rows_response(ops.lf_run(call.store, body.program, body.link), "rows",
                              config.max_rows, format)

    @app.post("/rules/eval", tags=["programs"])
    def rules_eval(body: RulesRequest, call: Reader, format: Format = "json") -> Any:
        """Judge the facts of one instance with a rule set, in the database; writes nothing."""
        return _rows_response(ops.rules_eval(call.store, body.ruleset, body.rules, body.facts),
                              "conclusions", config.max_rows, format)

    @app.post("/rules/apply", tags=["programs"])
    def rules_apply(body: ApplyRequest, call: Writer) -> dict[str, Any]:
        """Materialise a loaded rule set's conclusions as belongTo edges (write scope, and a
        server started with --allow-writes)."""
        return ops.rules_apply(call.store, body.ruleset, body.label)

    @app.post("/v1/embeddings", tags=["models"])
    def embeddings(body: EmbeddingsRequest, call: Reader) -> dict[str, Any]:
        """OpenAI-shaped embeddings from kgdb's own model (the target of APOC's
        ``apoc.ml.openai.embedding`` with ``endpoint`` set to this service's ``/v1``)."""
        return ops.embeddings(call.store, [body.input] if isinstance(body.input, str)
                              else body.input)

    @app.post("/retrieval", tags=["dify"])
    def dify_retrieval(body: DifyRequest, request: Request,
                       _credentials: Credentials = None) -> dict[str, Any]:
        """Dify's external-knowledge API: ``knowledge_id`` names the graph; records are the
        nearest passages and triple texts, scored by cosine similarity."""
        setting = body.retrieval_setting
        record = _record(request)
        if record is not None:
            record.question = body.query
        with authorise(request, False, body.knowledge_id) as call:
            return {"records": ops.passages_and_facts(call.store, body.query, setting.top_k,
                                                      setting.score_threshold)}

    @app.get("/procedures", tags=["service"])
    def procedures(call: Reader) -> dict[str, Any]:
        """The tenant's installed kgdb procedures (Neo4j) or UDF library (FalkorDB)."""
        return ops.procedures(call.store)

    @app.post("/relay/ask", tags=["relay"])
    def relay_ask(body: AskRequest, call: Reader, request: Request) -> list[dict[str, Any]]:
        """For ``custom.kgdb.ask``: one flat row per answer (rank, answer, solver, evidence);
        a refused question is one row ``{error}`` (see :func:`_relayed`)."""
        _noted(request, body)
        return _relayed(request, lambda: ops.relay_ask(call.store, body.question, body.options))

    @app.post("/relay/ask-evidence", tags=["relay"])
    def relay_evidence(body: AskRequest, call: Reader, request: Request
                       ) -> list[dict[str, Any]]:
        """For ``custom.kgdb.askEvidence``: the evidence rows, without an answer; a refused
        question is one row ``{error}``."""
        _noted(request, body)
        return _relayed(request, lambda: ops.relay_evidence(call.store, body.question,
                                                            body.options))

    return app


# ---------------------------------------------------------------------- helpers
def _warm(ops: Operations) -> None:
    try:
        ops.warm()
    except Exception:  # the first request reports the same failure to its caller
        log.exception("loading the embedding model failed")


def _relayed(request: Request, rows: Callable[[], list[dict[str, Any]]]
             ) -> list[dict[str, Any]]:
    """A relay's rows, or for a question the service refuses (no LLM configured, a solver
    without what it needs) one row ``{error}`` with HTTP 200: APOC's JSON loader shows only
    the status of a failed request, never its body, so the procedure raises this message
    itself (``custom.kgdb.ask``: "kgdb: no LLM is configured on this server ...")."""
    try:
        return rows()
    except errors.KgdbError as exc:
        rid = _request_id(request)
        status, message = report(exc, rid, request.url.path)
        return [{"error": f"{message} (status {status}, request {rid})"}]


def _page_headers() -> dict[str, str]:
    return {"Content-Security-Policy": PAGE_CSP, "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"}


def _token(tokens: TokenFile, header: str | None) -> Token:
    if not header:
        raise ServiceError(401, "a bearer token is required (Authorization: Bearer <token>)")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise ServiceError(401, "the Authorization header must be 'Bearer <token>'")
    token = tokens.find(secret.strip())
    if token is None:
        raise ServiceError(401, "unknown token")
    return token


def _answer_response(answer: Answer | Evidence, max_rows: int, format: str,
                     store: GraphStore) -> Any:
    if format in ("mermaid", "graphml", "html"):
        return _exported(answer, max_rows, format, store)
    payload: dict[str, Any] = answer.to_json()
    return _rows_response(payload, "evidence", max_rows, format)


def _exported(answer: Answer | Evidence, max_rows: int, format: str,
              store: GraphStore) -> Response:
    """The evidence drawn for other tools (with the entities its passages mention, read from
    ``store``), its facts and passages cut to ``max_rows`` (the ``X-Kgdb-Truncated`` header
    says so); HTML is served with a policy that runs no script."""
    evidence = answer.evidence if isinstance(answer, Answer) else answer
    cut = {name: getattr(evidence, name)[:max_rows]
           for name in ("facts", "groups", "passages", "documents", "statements")}
    truncated = any(len(getattr(evidence, k)) > len(v) for k, v in cut.items())
    cut_evidence = dataclasses.replace(evidence, **cut)
    shown: Answer | Evidence = dataclasses.replace(answer, evidence=cut_evidence) \
        if isinstance(answer, Answer) else cut_evidence
    headers = {TRUNCATED: "true" if truncated else "false", "X-Content-Type-Options": "nosniff"}
    if format == "html":
        headers["Content-Security-Policy"] = HTML_CSP
    return Response(export(shown, format, passage_mentions(store, cut_evidence)),
                    media_type=MEDIA_TYPES[format], headers=headers)


def _record(request: Request) -> RequestRecord | None:
    return getattr(request.state, "record", None)


def _noted(request: Request, body: AskRequest) -> RequestRecord | None:
    """The request's record with the solver and the question (kept only when the audit is
    told to keep questions)."""
    record = _record(request)
    if record is not None:
        record.solver = body.options.solver
        record.question = body.question
    return record


def _events(first: Any, rest: Iterator[Any], max_rows: int, rid: str,
            record: RequestRecord | None = None) -> Iterator[bytes]:
    """Server-sent events of :func:`kgdb.retrieve.ask.ask_stream`'s events (see
    :data:`STREAM_RESPONSE`); ``rest`` is closed however this ends (a client gone away
    closes the LLM's reply with it)."""
    kind, evidence = first
    payload = evidence.to_json()
    if cap_lists(payload, max_rows):
        payload["truncated"] = True
    try:
        yield event(kind, payload)
        for kind, value in rest:
            if kind == "token":
                yield event("token", {"text": value})
            elif kind == "answer":
                if record is not None:
                    record.note_llm(value.evidence.usage)
                done: dict[str, Any] = {
                    "answer": value.text, "verdict": value.verdict,
                    "llm": value.evidence.usage.to_json(),
                    "timings_ms": {k: round(v, 3) for k, v in
                                   value.evidence.timings_ms.items()}}
                if value.evidence.detail.get("answer_truncated"):
                    done["truncated"] = True
                yield event("done", done)
    except Exception as exc:  # the status line is sent: the failure is the last event
        status, message = report(exc, rid, "POST /ask (stream)")
        if record is not None:
            record.stream_status = status
        yield event("error", {"error": {"status": status, "message": message,
                                        "request_id": rid}})
    finally:
        close = getattr(rest, "close", None)
        if close is not None:
            close()


def _rows_response(payload: dict[str, Any], key: str, max_rows: int, format: str) -> Any:
    """``payload`` with every list in it cut to ``max_rows`` (``truncated: true`` when one
    was); as CSV, the ``key`` rows with the ``X-Kgdb-Truncated`` header saying so."""
    if cap_lists(payload, max_rows):
        payload["truncated"] = True
    if format == "csv":
        response = _csv(payload[key])
        response.headers[TRUNCATED] = "true" if payload.get("truncated") else "false"
        return response
    return payload


def _csv(rows: Sequence[dict[str, Any]]) -> Response:
    out = io.StringIO()
    columns = list(dict.fromkeys(k for row in rows for k in row))
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
    return PlainTextResponse(out.getvalue(), media_type="text/csv")


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
"""What makes a spreadsheet read a cell as a formula, full-width forms included."""


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in FORMULA_STARTS:
        return "'" + value  # no formula runs when a spreadsheet opens the file
    return value
