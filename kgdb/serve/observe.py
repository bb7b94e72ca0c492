"""What the service records of every request: its Prometheus metrics
(:mod:`kgdb.serve.metrics`) and its audit record (:mod:`kgdb.serve.audit`).

:class:`Observe` is the outermost ASGI middleware: it opens a :class:`RequestRecord` (the
request id included, which every error body and the ``X-Request-Id`` header carry), lets the
layers inside fill it in (the token's name, the graph, the solver, the LLM's usage, how a
stream ended), takes the status from the response, and when the response's last byte is
sent counts it and writes one audit record. Probes (``/livez``, ``/readyz``) and scrapes
(``/metrics``) are counted but not audited: a load balancer asks every second.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kgdb.serve.audit import Audit
from kgdb.serve.errors import new_request_id
from kgdb.serve.metrics import OTHER_ENDPOINT, Metrics

NOT_AUDITED = frozenset({"/livez", "/readyz", "/metrics"})
QUESTION_CHARS = 4000
"""Characters of a question an audit record keeps (with ``--audit-questions``)."""


@dataclass
class RequestRecord:
    """One request as the metrics and the audit log see it."""

    request_id: str
    method: str
    endpoint: str
    started: float
    token: str | None = None
    graph: str | None = None
    solver: str | None = None
    question: str | None = None
    status: int = 0
    stream: bool = False
    stream_status: int | None = None
    """The status of the ``error`` event a stream ended with (None: it ended with ``done``)."""
    outcome: str | None = None
    """How a stream ended: ``end``, ``disconnect``, ``timeout`` or ``drain``."""
    llm_requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0

    def note_llm(self, usage: Any) -> None:
        """Add an LLM usage (:class:`kgdb.llm.client.LlmUsage`) to the request's."""
        if usage is None:
            return
        self.llm_requests += int(usage.requests)
        self.tokens_in += int(usage.tokens_in)
        self.tokens_out += int(usage.tokens_out)


RECORD: contextvars.ContextVar[RequestRecord | None] = contextvars.ContextVar(
    "kgdb_serve_record", default=None)
"""The current request's record (threads that serve it copy the context)."""


def current() -> RequestRecord | None:
    return RECORD.get()


def note_llm(usage: Any) -> None:
    """Count an LLM usage on the current request (nothing outside a request)."""
    record = RECORD.get()
    if record is not None:
        record.note_llm(usage)


class Observe:
    """ASGI middleware, see the module docstring. ``endpoint_of(scope)`` names the route."""

    def __init__(self, app: Any, metrics: Metrics, audit: Audit,
                 endpoint_of: Callable[[Any], str]) -> None:
        self.app = app
        self.metrics = metrics
        self.audit = audit
        self.endpoint_of = endpoint_of

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        record = RequestRecord(new_request_id(), str(scope.get("method", "")),
                               self.endpoint_of(scope), time.perf_counter())
        scope.setdefault("state", {})["request_id"] = record.request_id
        scope["state"]["record"] = record
        token = RECORD.set(record)

        async def observed_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                record.status = int(message["status"])
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, observed_send)
        except BaseException:
            if not record.status:
                record.status = 500
            raise
        finally:
            RECORD.reset(token)
            self.metrics.in_flight.dec()
            self.finish(record)

    def finish(self, record: RequestRecord) -> None:
        seconds = time.perf_counter() - record.started
        status = record.stream_status or record.status or 500
        self.metrics.observe(record.endpoint, record.method, record.solver, status, seconds)
        self.metrics.llm(record.endpoint, record.llm_requests, record.tokens_in,
                         record.tokens_out)
        if record.outcome == "disconnect":
            self.metrics.disconnects.inc()
        if record.endpoint in NOT_AUDITED:
            return
        fields: dict[str, Any] = {
            "request_id": record.request_id, "token": record.token,
            "graph": record.graph[:80] if record.graph is not None else None,
            "method": record.method, "endpoint": record.endpoint,
            "solver": record.solver, "status": status,
            "duration_ms": round(seconds * 1000.0, 3), "stream": record.stream}
        if record.stream:
            fields["outcome"] = record.outcome
        if record.llm_requests:
            fields["llm"] = {"requests": record.llm_requests, "tokens_in": record.tokens_in,
                             "tokens_out": record.tokens_out}
        if self.audit.questions and record.question is not None:
            fields["question"] = record.question[:QUESTION_CHARS]
        self.audit.write("request", **fields)


def route_namer(routes: list[Any]) -> Callable[[Any], str]:
    """The path template of the route a request goes to (``/ui/{name}``), ``other`` for
    none: a bounded label, whatever path a client sends."""
    from starlette.routing import Match

    def endpoint_of(scope: Any) -> str:
        for route in routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return str(getattr(route, "path", OTHER_ENDPOINT))
        for route in routes:  # a known path with another method (405)
            match, _ = route.matches(scope)
            if match is Match.PARTIAL:
                return str(getattr(route, "path", OTHER_ENDPOINT))
        return OTHER_ENDPOINT

    return endpoint_of
