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
import io
import logging
from collections.abc import Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import version
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from kgdb import errors
from kgdb.engine.base import GraphStore
from kgdb.retrieve.evidence import Evidence
from kgdb.retrieve.registry import AnyOptions, parse_options
from kgdb.retrieve.solver import Answer
from kgdb.serve.operations import MAX_TEXT, Operations, ServeConfig, ServiceError
from kgdb.serve.tenants import Tenants
from kgdb.serve.tokens import Token, TokenFile

__all__ = ["ServeConfig", "ServiceError", "create_app"]

log = logging.getLogger("kgdb.serve")

GRAPH_HEADER = "X-Kgdb-Graph"
MAX_QUESTION = 4000

STATUS = [
    (errors.ReadOnlyViolationError, 403),
    (errors.QueryTimeoutError, 504),
    (errors.EngineConnectionError, 503),
    (errors.LlmError, 502),
    (errors.EngineError, 502),
    (errors.KgdbError, 400),
]
"""HTTP status of each kgdb error (first match): the request's fault is 400, the engine's or
the model's 50x."""


# ---------------------------------------------------------------------- request and response
class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(..., min_length=1, max_length=MAX_QUESTION)
    options: AnyOptions = Field(default_factory=lambda: parse_options(None), description=(
        "the solver (``solver``, default pattern) and its options"))


class LfRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    program: str = Field(..., min_length=1, max_length=MAX_TEXT,
                         description="a logical form (kgdb's logical-form language)")
    link: bool = Field(True, description="link names through the graph first")


class RulesRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ruleset: str | None = Field(None, max_length=200,
                                description="a rule set the server loaded (--rules)")
    rules: str | None = Field(None, max_length=MAX_TEXT,
                              description="or the rules' text (kgdb's rule language)")
    facts: dict[str, Any] = Field(default_factory=dict,
                                  description="the instance's properties")


class ApplyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ruleset: str = Field(..., max_length=200)
    label: str | None = Field(None, max_length=200)


class EmbeddingsRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    input: str | list[str] = Field(...)
    model: str = Field("kgdb", max_length=200)


class DifyRetrievalSetting(BaseModel):
    top_k: int = Field(..., ge=0, le=1000)
    score_threshold: float = Field(0.0, ge=0.0, le=1.0)


class DifyRequest(BaseModel):
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
def authorise(request: Request, write: bool, graph: str | None = None) -> Call:
    """The request's token, checked against the tenant it names and the scope it needs; the
    tenant's store as a view for this request."""
    config: ServeConfig = request.app.state.config
    tenants: Tenants = request.app.state.tenants
    token = _token(config.tokens, request.headers.get("authorization"))
    name = graph or request.headers.get(GRAPH_HEADER) or tenants.default
    if not token.may_use(name):
        raise ServiceError(403, f"token {token.name!r} may not use {name[:80]!r}")
    if write and not config.allow_writes:
        raise ServiceError(403, "this server is read-only (start it with --allow-writes)")
    if write and "write" not in token.scopes:
        raise ServiceError(403, f"token {token.name!r} has no write scope")
    endpoint = request.url.path
    store = tenants.store(name).view(
        read_only=not write, timeout_s=config.timeout_s,
        metadata={"app": "kgdb", "endpoint": endpoint, "token": token.name,
                  "kgdb": version("kgdb")})
    return Call(token, name, endpoint, store)


BEARER = HTTPBearer(auto_error=False, description="a token of `kgdb tokens add`")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]
GraphHeader = Annotated[str | None, Header(alias=GRAPH_HEADER, description=(
    "the graph (FalkorDB) or database (Neo4j) to use; default: the server's"))]


def reader(request: Request, _credentials: Credentials = None,
           _graph: GraphHeader = None) -> Call:
    """Declares the bearer token and the graph header in the OpenAPI document; the checks
    read the raw headers (:func:`authorise`)."""
    return authorise(request, False)


def writer(request: Request, _credentials: Credentials = None,
           _graph: GraphHeader = None) -> Call:
    return authorise(request, True)


Reader = Annotated[Call, Depends(reader)]
Writer = Annotated[Call, Depends(writer)]
Format = Annotated[Literal["json", "csv"], Query(description="json, or csv for the rows")]


# ---------------------------------------------------------------------- the application
def create_app(config: ServeConfig, *, embedder: Any = None, llm: Any = None) -> FastAPI:
    """The service. ``embedder`` and ``llm`` default to the configured ones (loaded at first
    use); tests pass their own."""
    tenants = Tenants(config.settings)
    ops = Operations(config, embedder=embedder, llm=llm)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        yield
        tenants.close()

    app = FastAPI(title="kgdb knowledge service", version=version("kgdb"), lifespan=lifespan,
                  description=__doc__)
    app.state.tenants = tenants
    app.state.config = config

    @app.exception_handler(errors.KgdbError)
    async def kgdb_error(request: Request, exc: errors.KgdbError) -> JSONResponse:
        status = exc.status if isinstance(exc, ServiceError) else next(
            code for kind, code in STATUS if isinstance(exc, kind))
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        if request.url.path == "/retrieval":  # Dify's error shape
            code = {401: 1001, 403: 1002, 404: 2001}.get(status, 500)
            return JSONResponse({"error_code": code, "error_msg": message}, status,
                                headers=headers)
        return JSONResponse({"error": {"status": status, "message": message}}, status,
                            headers=headers)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"error": {"status": 500, "message": "internal error (the "
                                       "service's log has the details)"}}, 500)

    # ------------------------------------------------------------------ endpoints
    @app.get("/livez", tags=["service"])
    def livez() -> dict[str, str]:
        """Liveness for process managers; needs no token and says nothing about the data."""
        return {"status": "ok"}

    @app.get("/health", tags=["service"])
    def health(call: Reader) -> dict[str, Any]:
        """The engine, versions, the tenant's indexes and the installed procedures."""
        return ops.health(call.store, call.graph)

    @app.post("/ask", tags=["questions"])
    def ask(body: AskRequest, call: Reader, format: Format = "json") -> Any:
        """Answer a question with a solver: the answer, its evidence, the Cypher, timings."""
        answer = ops.ask(call.store, body.question, body.options)
        return _answer_response(answer, config.max_rows, format)

    @app.post("/retrieve", tags=["questions"])
    def retrieve(body: AskRequest, call: Reader, format: Format = "json") -> Any:
        """The evidence a solver finds, without an LLM answer (SimGRAG needs a pattern or an
        LLM for it)."""
        evidence = ops.retrieve(call.store, body.question, body.options)
        return _answer_response(evidence, config.max_rows, format)

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
        return ops.embeddings([body.input] if isinstance(body.input, str) else body.input)

    @app.post("/retrieval", tags=["dify"])
    def dify_retrieval(body: DifyRequest, request: Request,
                       _credentials: Credentials = None) -> dict[str, Any]:
        """Dify's external-knowledge API: ``knowledge_id`` names the graph; records are the
        nearest passages and triple texts, scored by cosine similarity."""
        call = authorise(request, False, body.knowledge_id)
        setting = body.retrieval_setting
        return {"records": ops.passages_and_facts(call.store, body.query, setting.top_k,
                                                  setting.score_threshold)}

    @app.get("/procedures", tags=["service"])
    def procedures(call: Reader) -> dict[str, Any]:
        """The tenant's installed kgdb procedures (Neo4j) or UDF library (FalkorDB)."""
        return ops.procedures(call.store)

    @app.post("/relay/ask", tags=["relay"])
    def relay_ask(body: AskRequest, call: Reader) -> list[dict[str, Any]]:
        """For ``custom.kgdb.ask``: one flat row per answer (rank, answer, solver, evidence)."""
        return ops.relay_ask(call.store, body.question, body.options)

    @app.post("/relay/ask-evidence", tags=["relay"])
    def relay_evidence(body: AskRequest, call: Reader) -> list[dict[str, Any]]:
        """For ``custom.kgdb.askEvidence``: the evidence rows, without an answer."""
        return ops.relay_evidence(call.store, body.question, body.options)

    return app


# ---------------------------------------------------------------------- helpers
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


def _answer_response(answer: Answer | Evidence, max_rows: int, format: str) -> Any:
    payload: dict[str, Any] = answer.to_json()
    return _rows_response(payload, "evidence", max_rows, format)


def _rows_response(payload: dict[str, Any], key: str, max_rows: int, format: str) -> Any:
    rows = payload[key]
    if len(rows) > max_rows:
        payload[key] = rows[:max_rows]
        payload["truncated"] = True
    if format == "csv":
        return _csv(payload[key])
    return payload


def _csv(rows: Sequence[dict[str, Any]]) -> Response:
    out = io.StringIO()
    columns = list(dict.fromkeys(k for row in rows for k in row))
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
    return PlainTextResponse(out.getvalue(), media_type="text/csv")


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value  # no formula runs when a spreadsheet opens the file
    return value
