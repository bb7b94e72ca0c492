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


class EngineUnavailableError(EngineConnectionError):
    """The engine went away under a statement (crash, restart); the statement may be retried."""


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


class EmbeddingError(KgdbError):
    """The embedding model could not be loaded or failed."""


class LlmError(KgdbError):
    """The LLM endpoint failed, or its output could not be used after bounded retries."""


class DslError(KgdbError):
    """An error in a logical-form or rule program, with its position."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return `` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class DslSyntaxError(DslError):
    """A program that does not parse: where (line, column), the source line with a caret, and
    what the parser expected there.

    The message reads ``FILE:LINE:COLUMN: message`` then the source line and a caret line.
    """

    def __init__(self, message: str, *, line: int, column: int, context: str = "",
                 expected: tuple[str, ...] = (), source_name: str = "<rules>") -> None:
        self.line = line
        self.column = column
        self.context = context
        self.expected = tuple(expected)
        self.source_name = source_name
        self.reason = message
        text = f"{source_name}:{line}:{column}: {message}"
        super().__init__(f"{text}\n{context}" if context else text)


class DslSemanticError(DslError):
    """A program that parses but means nothing: an unknown concept or sub-rule, a cycle, a
    priority naming an unknown concept. Carries the position of the offending name."""

    def __init__(self, message: str, *, line: int, column: int, context: str = "",
                 source_name: str = "<rules>") -> None:
        self.line = line
        self.column = column
        self.context = context
        self.source_name = source_name
        self.reason = message
        text = f"{source_name}:{line}:{column}: {message}"
        super().__init__(f"{text}\n{context}" if context else text)
