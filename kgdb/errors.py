"""The one exception hierarchy of kgdb.

Every expected failure is a :class:`KgdbError`; the CLI prints its message on one line and
exits 1. Anything else escaping is a bug.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class KgdbError(Exception):
    """Root of every error kgdb raises on purpose."""


class ConfigError(KgdbError):
    """A setting (environment variable, option, file) is missing or invalid."""


class EngineError(KgdbError):
    """The graph engine failed to run a statement."""


class EngineConnectionError(EngineError):
    """The engine cannot be reached; the message names the address and the cause."""


class GraphNotFoundError(EngineConnectionError):
    """The graph (FalkorDB) or database (Neo4j) a caller named does not exist (and was not
    created: only writers create graphs)."""


class EngineUnavailableError(EngineConnectionError):
    """The engine went away under a statement (crash, restart); the statement may be retried."""


class TransientEngineError(EngineError):
    """The engine aborted a transaction for a passing reason (a deadlock, a lock wait): nothing
    of it was written, and running it again may succeed."""


class EngineCrashError(EngineError):
    """The engine crashed while running a statement; never retried (it would crash again)."""


class QueryTimeoutError(EngineError):
    """A statement ran longer than its timeout."""


class StatementError(EngineError):
    """The engine rejected a statement (syntax, semantics, constraint violation)."""


class ReadOnlyViolationError(StatementError):
    """A statement tried to write through a read-only call."""


class UnsupportedFeatureError(KgdbError):
    """A construct that the selected dialect cannot express."""

    def __init__(self, construct: str, dialect: str, hint: str = "") -> None:
        message = f"{construct} is not supported by the {dialect} dialect"
        super().__init__(f"{message}: {hint}" if hint else message)
        self.construct = construct
        self.dialect = dialect


class InvalidIdentifierError(KgdbError):
    """A label, relationship type or property key that cannot be quoted safely."""


class SchemaError(KgdbError):
    """A schema file or the stored schema is invalid or inconsistent."""


class EmbeddingDimensionError(SchemaError):
    """The embedding model's dimension differs from the dimension the indexes were built for."""


class LoadError(KgdbError):
    """Input data for a loader is malformed; the message names FILE:LINE and the cause."""


class MissingFileError(KgdbError, FileNotFoundError):
    """A file or folder an argument names does not exist: a kgdb error (one line, exit 1)
    that is also a :class:`FileNotFoundError` (``filename`` is the path as given)."""

    def __init__(self, path: object, what: str = "file") -> None:
        import errno
        import os

        shown = os.fspath(path) if isinstance(path, os.PathLike | str) else str(path)
        where = os.path.abspath(shown) if not os.path.isabs(shown) else ""
        message = f"{shown}: no such {what}" + (f" (looked for {where})" if where else "")
        FileNotFoundError.__init__(self, errno.ENOENT, message, shown)
        self.args = (message,)

    def __str__(self) -> str:
        return str(self.args[0])


class EmbeddingError(KgdbError):
    """The embedding model could not be loaded or failed."""


class LlmError(KgdbError):
    """The LLM endpoint failed, or its output could not be used after bounded retries.

    ``public`` says what failed without saying how: no address, no credentials, no upstream
    body (the service and MCP show only this; the CLI shows the full message to its user)."""

    def __init__(self, message: str, public: str = "the LLM endpoint failed") -> None:
        super().__init__(message)
        self.public = public


class DslError(KgdbError):
    """An error in a logical-form or rule program, with its position."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return `` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _caret_context(source_line: str, column: int) -> str:
    """The source line and a caret under ``column`` (1-based), tabs kept so the caret lines up."""
    pad = "".join(ch if ch == "\t" else " " for ch in source_line[: max(column - 1, 0)])
    return f"{source_line}\n{pad}^"


class DslSyntaxError(DslError):
    """A program that does not parse: ``FILE:LINE:COLUMN: message``, the line, and a caret."""

    def __init__(self, message: str, *, line: int, column: int, source_line: str = "",
                 expected: Iterable[str] = (), file: str = "<input>") -> None:
        self.line = line
        self.column = column
        self.file = file
        self.expected = tuple(sorted(set(expected)))
        self.context = _caret_context(source_line, column)
        self.reason = message
        super().__init__(f"{file}:{line}:{column}: {message}\n{self.context}")


class DslSemanticError(DslError):
    """A program that parses but means nothing (unbound alias, unknown function...), with its place."""

    def __init__(self, message: str, *, line: int, column: int, source_line: str = "",
                 file: str = "<input>") -> None:
        self.line = line
        self.column = column
        self.file = file
        self.expected: tuple[str, ...] = ()
        self.context = _caret_context(source_line, column)
        self.reason = message
        super().__init__(f"{file}:{line}:{column}: {message}\n{self.context}")
