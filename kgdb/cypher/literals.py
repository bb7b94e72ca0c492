"""The one literal renderer: constants written into Cypher text where parameters cannot be
used, namely the bodies of stored procedures (APOC custom procedures keep a text; only the
procedure's own inputs are parameters when it runs).

:func:`literal` renders a value; :func:`inline_params` replaces a statement's ``$name``
parameters by their literals, except the ones the body keeps as inputs. Both refuse what
they cannot render exactly (NaN, infinities, integers beyond 64 bits, other types). Strings
are escaped for Cypher's string grammar (cypher-manual/5/syntax/expressions, "String
literals"), so no value can end its literal: tests/unit/test_literals.py renders hostile
strings and reads them back through both engines.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from typing import Any

from kgdb.dialects.base import Dialect, quote_identifier
from kgdb.errors import KgdbError
from kgdb.statement import Statement

_ESCAPES = {"\\": "\\\\", "'": "\\'", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t",
            "\b": "\\b", "\f": "\\f"}
_INT64 = (-(2 ** 63), 2 ** 63 - 1)


class LiteralError(KgdbError):
    """A value that has no exact Cypher literal."""


def literal(value: Any, dialect: Dialect | None = None) -> str:
    """``value`` as a Cypher literal: null, booleans, 64-bit integers, finite floats, strings,
    lists and maps of those (map keys quoted as identifiers). Other control characters
    than the named escapes become ``\\uXXXX`` where the dialect reads those
    (``STRING_UNICODE_ESCAPES``; Neo4j when ``dialect`` is None); elsewhere they are refused."""
    escapes = dialect is None or dialect.STRING_UNICODE_ESCAPES
    return _literal(value, escapes)


def _literal(value: Any, escapes: bool) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise LiteralError(f"integer {value} does not fit in 64 bits")
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise LiteralError(f"{value} has no Cypher literal")
        text = repr(value)
        return text.replace("e+", "e") if "e" in text else text
    if isinstance(value, str):
        return "'" + "".join(_escape(ch, escapes) for ch in value) + "'"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_literal(v, escapes) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{quote_identifier(str(k), allow_backtick=escapes)}: "
                               f"{_literal(v, escapes)}" for k, v in value.items()) + "}"
    raise LiteralError(f"a {type(value).__name__} has no Cypher literal")


def _escape(ch: str, escapes: bool) -> str:
    escaped = _ESCAPES.get(ch)
    if escaped is not None:
        return escaped
    code = ord(ch)
    if code < 0x20 or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF:
        if not escapes:
            raise LiteralError(f"U+{code:04X} cannot be written in a string literal here")
        return f"\\u{code:04x}"
    if code in (0x2028, 0x2029) and escapes:
        return f"\\u{code:04x}"
    return ch


_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def inline_params(statement: Statement, keep: Collection[str] = (),
                  dialect: Dialect | None = None) -> str:
    """``statement``'s text with every parameter but those in ``keep`` written as a literal.
    Quoted names, strings and comments are left alone: only a ``$name`` in code is a
    parameter."""
    out: list[str] = []
    for kind, piece in _tokens(statement.text):
        if kind != "code":
            out.append(piece)
            continue

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in keep:
                return match.group(0)
            if name not in statement.params:
                raise LiteralError(f"parameter ${name} has no value to write into the body")
            return literal(statement.params[name], dialect)

        out.append(_PARAM.sub(replace, piece))
    return "".join(out)


def parameters(text: str) -> list[str]:
    """The parameter names ``text`` uses in code, in order."""
    return [m.group(1) for kind, piece in _tokens(text) if kind == "code"
            for m in _PARAM.finditer(piece)]


def _tokens(text: str) -> list[tuple[str, str]]:
    """``text`` cut into code, quoted (strings and backticked names) and comment pieces."""
    pieces: list[tuple[str, str]] = []
    i, start, n = 0, 0, len(text)
    while i < n:
        ch = text[i]
        end = -1
        kind = ""
        if ch in ("'", '"'):
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            end, kind = min(j + 1, n), "string"
        elif ch == "`":
            j = i + 1
            while j < n:
                if text[j] == "`":
                    if j + 1 < n and text[j + 1] == "`":
                        j += 2
                        continue
                    break
                j += 1
            end, kind = min(j + 1, n), "name"
        elif text.startswith("//", i):
            j = text.find("\n", i)
            end, kind = (n if j < 0 else j), "comment"
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            end, kind = (n if j < 0 else j + 2), "comment"
        if end < 0:
            i += 1
            continue
        if start < i:
            pieces.append(("code", text[start:i]))
        pieces.append((kind, text[i:end]))
        i = start = end
    if start < n:
        pieces.append(("code", text[start:]))
    return pieces
