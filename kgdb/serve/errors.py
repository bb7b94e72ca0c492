"""The service's one error mapping, for the HTTP API and the MCP tools alike: every failure
becomes a status and a message that says *what* failed, never *how* — no endpoint URL, no
credentials, no upstream body, no file path, port or engine procedure name. The details go
to the server's log under the request id the response carries."""

from __future__ import annotations

import logging
import re
import secrets

from kgdb import errors

log = logging.getLogger("kgdb.serve")


class ServiceError(errors.KgdbError):
    """A request the service refuses: ``status`` is its HTTP status; the message is shown to
    the client as written (so it names only what the client sent)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


_ENGINE = [
    (errors.GraphNotFoundError, 404, None),
    (errors.ReadOnlyViolationError, 403, "this request may not write to the graph"),
    (errors.QueryTimeoutError, 504, "the request ran longer than the server's timeout"),
    (errors.EngineConnectionError, 503, "the database is unavailable; try again later"),
    (errors.EngineError, 502, "the database could not run a statement of this request"),
    (errors.EmbeddingError, 502, "the embedding model failed"),
]
"""Engine and model failures: their own messages hold addresses, ports, procedure names and
server paths, so the client gets a fixed sentence (the log has the rest)."""

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_PATH = re.compile(r"(?<![\w/.])(?:~|\.{0,2})/(?:[\w.@+-]+/)+[\w.@+-]*")
_ADDRESS = re.compile(r"\b(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:]+\])(?::\d+)?\b",
                      re.IGNORECASE)


def new_request_id() -> str:
    return secrets.token_hex(8)


def scrub(message: str) -> str:
    """``message`` without URLs, absolute or relative file paths and network addresses: what
    is left says what failed. The first line only."""
    line = message.splitlines()[0] if message else ""
    line = _URL.sub("<url>", line)
    line = _PATH.sub("<path>", line)
    return _ADDRESS.sub("<address>", line)


def public(exc: BaseException) -> tuple[int, str]:
    """The status and the client's message of any exception (500 for a bug)."""
    if isinstance(exc, ServiceError):
        return exc.status, str(exc).splitlines()[0] if str(exc) else "refused"
    if isinstance(exc, errors.LlmError):
        return 502, exc.public
    for kind, status, message in _ENGINE:
        if isinstance(exc, kind):
            return status, message or "no such graph on this server"
    if isinstance(exc, errors.KgdbError):
        return 400, scrub(str(exc)) or type(exc).__name__
    return 500, "internal error (the service's log has the details)"


def report(exc: BaseException, request_id: str, where: str) -> tuple[int, str]:
    """:func:`public`, after logging the whole failure under ``request_id``."""
    status, message = public(exc)
    if status == 500:
        log.error("request %s: %s failed", request_id, where, exc_info=exc)
    else:
        log.warning("request %s: %s -> %d: %s", request_id, where, status,
                    str(exc).replace("\n", " | ")[:2000])
    return status, message
