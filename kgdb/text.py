"""The text contract: what kgdb accepts as text, on every surface and every engine.

Decided once, here, and enforced in two layers that use the same functions:

* every reader of a file (triples, records and their specs, schemas, rules, logical forms)
  calls :func:`read_text_file` / :func:`open_data_file` / :func:`clean_value`, so a bad value
  is reported as ``FILE:LINE: reason`` before anything of its batch is written;
* :meth:`kgdb.engine.base.GraphStore.run` calls :func:`check_statement` on every statement
  (text and parameters) before it reaches an engine, whatever surface it came from.

The contract (also in the README, "Text"):

* Text is Unicode. Files are UTF-8 (a records spec may name another encoding). A lone
  surrogate (``\\ud800`` in JSON, or from a mis-decoded file) is not text and is refused.
* Control characters (Unicode category Cc: U+0000-U+001F, U+007F-U+009F) are refused, except
  TAB, LF and CR. That includes NUL, which would cut a statement short on FalkorDB, and U+0001,
  which FalkorDB 4.16.3 cannot index (see :mod:`kgdb.dialects.falkordb`, "Engine bugs").
* Normalised, and only this: a UTF-8 byte-order mark at the start of a file is dropped, and
  CRLF or a lone CR ending a line (or inside a value read from a file) becomes LF.
* Keys (entity ids and names, predicates, concept names, record ids, catalog names) are at
  most ``KGDB_MAX_KEY_BYTES`` UTF-8 bytes (default and ceiling 4096: FalkorDB 4.16.3's
  exact-match index silently misses longer values and its unique constraint crashes on them).
  Other string values are at most ``KGDB_MAX_VALUE_BYTES`` (default 1 MiB).
* Program files (schemas, rules, logical forms, loader specs, ``--facts``) are at most
  ``KGDB_MAX_PROGRAM_BYTES`` (default 1 MiB); data files at most ``KGDB_MAX_FILE_BYTES``
  (default 16 GiB) with lines of at most ``KGDB_MAX_LINE_BYTES`` (default 4 MiB). Inputs that
  are not regular files (directories, FIFOs, devices) are refused before they are read.
* Parameter names are ASCII identifiers (``[A-Za-z_][A-Za-z0-9_]*``, at most 64 characters,
  not ``cypher``): both engines parse them.

Nothing else is changed: a value that passes is stored verbatim on both engines.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kgdb.errors import ConfigError, KgdbError

ENGINE_KEY_BYTES = 4096
"""The longest key FalkorDB 4.16.3 indexes correctly (4096 bytes load; 4097 crash a unique
constraint). The ceiling of ``KGDB_MAX_KEY_BYTES`` on every engine, so both behave alike."""

_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
"""Cc except TAB, LF, CR; and surrogate code points (never valid alone in text)."""

_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_RESERVED_PARAM_NAMES = {"cypher"}
"""FalkorDB reads ``CYPHER cypher=1 ...`` as a second ``CYPHER`` prefix (4.16.3)."""


class TextError(KgdbError):
    """A value or file outside the text contract; the message names the place and the cause."""


@dataclass(frozen=True)
class TextLimits:
    """The configurable sizes of the contract (environment variables ``KGDB_MAX_*``)."""

    key_bytes: int = ENGINE_KEY_BYTES
    value_bytes: int = 1 << 20
    program_bytes: int = 1 << 20
    file_bytes: int = 16 << 30
    line_bytes: int = 4 << 20

    @classmethod
    def from_env(cls) -> TextLimits:
        from kgdb.config import environment

        defaults, env = cls(), environment()
        values = {}
        for name in ("key_bytes", "value_bytes", "program_bytes", "file_bytes", "line_bytes"):
            number = getattr(env, f"KGDB_MAX_{name.upper()}")
            values[name] = getattr(defaults, name) if number is None else number
        if values["key_bytes"] > ENGINE_KEY_BYTES:
            raise ConfigError(f"KGDB_MAX_KEY_BYTES={values['key_bytes']} is above "
                              f"{ENGINE_KEY_BYTES}, the longest key the embedded FalkorDB "
                              "indexes correctly")
        return cls(**values)


_LIMIT_VARIABLES = tuple(f"KGDB_MAX_{name.upper()}" for name in
                         ("key_bytes", "value_bytes", "program_bytes", "file_bytes", "line_bytes"))


def limits() -> TextLimits:
    """The limits in force. Checked for every field of every loaded row, so the environment is
    validated again only when one of the ``KGDB_MAX_*`` variables changed."""
    return _limits_for(tuple(os.environ.get(name) for name in _LIMIT_VARIABLES))


@functools.lru_cache(maxsize=8)
def _limits_for(snapshot: tuple[str | None, ...]) -> TextLimits:
    return TextLimits.from_env()


def _describe(ch: str) -> str:
    code = ord(ch)
    if code == 0:
        return "a NUL character (U+0000)"
    if 0xD800 <= code <= 0xDFFF:
        return f"a lone surrogate (U+{code:04X}), which is not valid Unicode"
    return f"the control character U+{code:04X}"


def text_problem(value: str, *, key: bool = False, limit: TextLimits | None = None) -> str | None:
    """Why ``value`` breaks the contract, or None. ``key``: ids, names and other indexed keys."""
    bad = _FORBIDDEN.search(value)
    if bad:
        return f"contains {_describe(bad.group())} at character {bad.start() + 1}"
    limit = limit or limits()
    most = limit.key_bytes if key else limit.value_bytes
    if len(value) * 4 > most:  # cheap test first; encode only when it might be too long
        size = len(value.encode("utf-8"))
        if size > most:
            what, var = ("a key (id or name)", "KGDB_MAX_KEY_BYTES") if key else \
                ("a value", "KGDB_MAX_VALUE_BYTES")
            return f"is {size} bytes long; {what} may have at most {most} UTF-8 bytes ({var})"
    return None


def normalise_newlines(value: str) -> str:
    """CRLF and lone CR become LF."""
    if "\r" not in value:
        return value
    return value.replace("\r\n", "\n").replace("\r", "\n")


def clean_value(value: str, *, what: str, key: bool = False,
                limit: TextLimits | None = None) -> str:
    """A value read from a file: line endings normalised, then checked; raises TextError
    ``"{what} {reason}"`` (callers put ``FILE:LINE:`` in ``what``)."""
    value = normalise_newlines(value)
    problem = text_problem(value, key=key, limit=limit)
    if problem:
        raise TextError(f"{what} {problem}")
    return value


def check_param_name(name: Any) -> str | None:
    """Why ``name`` cannot be a parameter name, or None."""
    if not isinstance(name, str) or not _PARAM_NAME.fullmatch(name):
        return (f"parameter name {name!r} is not an ASCII identifier of at most 64 characters "
                "(letters, digits, _; not starting with a digit)")
    if name.lower() in _RESERVED_PARAM_NAMES:
        return f"parameter name {name!r} is reserved"
    return None


_MAX_PARAM_DEPTH = 32


def _check_param_value(value: Any, where: str, limit: TextLimits, depth: int) -> None:
    if isinstance(value, str):
        problem = text_problem(value, limit=limit)
        if problem:
            raise TextError(f"{where} {problem}")
        return
    if depth > _MAX_PARAM_DEPTH:
        raise TextError(f"{where} is nested more than {_MAX_PARAM_DEPTH} levels deep")
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise TextError(f"{where} has a non-string map key {k!r}")
            problem = text_problem(k, key=True, limit=limit)
            if problem:
                raise TextError(f"a map key in {where} {problem}")
            _check_param_value(v, f"{where}.{k}" if len(where) < 80 else where, limit, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, (int, float)):  # vectors: nothing to check, stay fast
                continue
            _check_param_value(v, f"{where}[]", limit, depth + 1)


def check_statement(text: str, params: Mapping[str, Any]) -> None:
    """The engine boundary: statement text and every parameter obey the contract (raises
    TextError). Runs for every statement on every engine."""
    bad = _FORBIDDEN.search(text)
    if bad:
        raise TextError(f"the statement text contains {_describe(bad.group())} at character "
                        f"{bad.start() + 1}")
    if not params:
        return
    limit = limits()
    for name, value in params.items():
        problem = check_param_name(name)
        if problem:
            raise TextError(problem)
        _check_param_value(value, f"parameter ${name}", limit, 0)


# ---------------------------------------------------------------------- files
def check_input_file(path: Path, *, what: str, max_bytes: int, var: str) -> None:
    """Refuse, before reading, anything that is not a regular file of at most ``max_bytes``."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise TextError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(info.st_mode):
        raise TextError(f"{path}: the {what} is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else \
            "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else \
            "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file"
        raise TextError(f"{path}: the {what} is {kind}; kgdb reads regular files only")
    if info.st_size > max_bytes:
        raise TextError(f"{path}: the {what} is {info.st_size} bytes, more than the limit of "
                        f"{max_bytes} ({var})")


def _regular_open(path: Path) -> IO[bytes]:
    """Open without following a FIFO that appeared after the check (O_NONBLOCK on open only)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TextError(f"{path}: not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text_file(path: str | Path, *, what: str, encoding: str = "utf-8") -> str:
    """A program file (schema, rules, logical form, spec) as checked, normalised text.

    Regular file, at most ``KGDB_MAX_PROGRAM_BYTES``, decodes, BOM dropped, line endings
    normalised, no forbidden character (``FILE:LINE: reason``). Raises TextError.
    """
    path = Path(path)
    limit = limits()
    check_input_file(path, what=what, max_bytes=limit.program_bytes, var="KGDB_MAX_PROGRAM_BYTES")
    try:
        with _regular_open(path) as handle:
            data = handle.read(limit.program_bytes + 1)
    except OSError as exc:
        raise TextError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from exc
    if len(data) > limit.program_bytes:
        raise TextError(f"{path}: the {what} is more than {limit.program_bytes} bytes "
                        "(KGDB_MAX_PROGRAM_BYTES)")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TextError(f"{path}:{line}: not {encoding} text ({exc.reason} at byte "
                        f"{exc.start})") from exc
    except LookupError as exc:
        raise TextError(f"{path}: unknown encoding {encoding!r}") from exc
    text = normalise_newlines(text.removeprefix("\ufeff"))
    bad = _FORBIDDEN.search(text)
    if bad:
        line = text.count("\n", 0, bad.start()) + 1
        column = bad.start() - (text.rfind("\n", 0, bad.start()) + 1) + 1
        raise TextError(f"{path}:{line}:{column}: contains {_describe(bad.group())}")
    return text


def open_data_file(path: str | Path, *, what: str) -> IO[bytes]:
    """A data file (triples, records) opened for binary reading, after the size and type check."""
    path = Path(path)
    limit = limits()
    check_input_file(path, what=what, max_bytes=limit.file_bytes, var="KGDB_MAX_FILE_BYTES")
    try:
        return _regular_open(path)
    except OSError as exc:
        raise TextError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from exc
