"""Tabular records (CSV) -> typed entity nodes, driven by a loader spec (loaders/specs/*.toml).

A spec says how to read the file and which columns become which typed properties::

    [file]
    path = "processed.cleveland.data"   # relative to the spec; --file overrides it
    header = false                      # no header row: columns are numbered from 1
    delimiter = ","
    missing = ["?"]                     # markers of a missing value, for every column

    [entity]
    label = "Patient"                   # the node label (the entity type)
    id_prefix = "cleveland/"            # id = prefix + id column value, or + row number
    # id_column = "PatientId"           # absent: the 1-based data row number

    [[columns]]
    column = 4                          # a 1-based index, or a header name ("BloodPressure")
    property = "SystolicPressure"
    type = "float"                      # int | float | str | bool
    missing = ["0"]                     # extra missing markers for this column only

Every row is checked before anything is written: a bad row raises ``LoadError`` naming
``FILE:LINE`` and the cause, and the graph is untouched. Writing is batched ``UNWIND``
statements that ``MERGE`` on ``id``, so loading twice equals loading once; a missing value
removes the property (``SET n.p = null``), so a reload after a data fix converges.
"""

from __future__ import annotations

import codecs
import csv
import io
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgdb.cypher import load as cypher_load
from kgdb.dialects.base import Dialect
from kgdb.dsl.numbers import NumberError, parse_float
from kgdb.engine.base import GraphStore
from kgdb.errors import InvalidIdentifierError, LoadError, did_you_mean
from kgdb.schema.apply import await_indexes, execute_ddl
from kgdb.statement import Statement
from kgdb.text import clean_value, open_data_file, read_text_file, text_problem

TYPES = ("int", "float", "str", "bool")
_SPACE = " \t"
"""Spaces and tabs around a field are trimmed; nothing else is (the text contract)."""
_TRUE = {"1", "true", "yes", "y", "t"}
_FALSE = {"0", "false", "no", "n", "f"}


@dataclass(frozen=True)
class ColumnSpec:
    column: int | str
    property: str
    type: str
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecordSpec:
    """A parsed loader spec."""

    path: Path | None
    header: bool
    delimiter: str
    missing: tuple[str, ...]
    label: str
    id_prefix: str
    id_column: int | str | None
    columns: tuple[ColumnSpec, ...]
    encoding: str = "utf-8"
    source: str = ""
    """The spec file, for messages."""


def _spec_error(spec_path: Path, message: str) -> LoadError:
    return LoadError(f"{spec_path}: {message}")


def read_spec(spec_path: Path) -> RecordSpec:
    """Read and check a loader spec (TOML)."""
    try:
        data = tomllib.loads(read_text_file(spec_path, what="loader spec"))
    except tomllib.TOMLDecodeError as exc:
        raise _spec_error(spec_path, f"invalid TOML: {exc}") from exc
    except RecursionError:
        # from None: the cause is a recursion a thousand frames deep that says no
        # more than the message
        raise _spec_error(spec_path, "invalid TOML: nested too deeply") from None
    unknown = set(data) - {"file", "entity", "columns"}
    if unknown:
        raise _spec_error(spec_path, f"unknown section(s) {sorted(unknown)}; expected file, entity, "
                                     "columns")
    file = data.get("file", {})
    entity = data.get("entity", {})
    if not isinstance(file, dict) or not isinstance(entity, dict):
        raise _spec_error(spec_path, "[file] and [entity] must be tables")
    label = entity.get("label")
    if not isinstance(label, str) or not label:
        raise _spec_error(spec_path, "[entity] needs label = \"<node label>\"")
    delimiter = file.get("delimiter", ",")
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise _spec_error(spec_path, "[file] delimiter must be one character")
    raw_columns = data.get("columns")
    if not isinstance(raw_columns, list) or not raw_columns:
        raise _spec_error(spec_path, "needs at least one [[columns]] entry")
    header = bool(file.get("header", True))
    columns = []
    seen: set[str] = set()
    for i, col in enumerate(raw_columns, 1):
        where = f"[[columns]] #{i}"
        if not isinstance(col, dict):
            raise _spec_error(spec_path, f"{where} must be a table")
        column, prop, kind = col.get("column"), col.get("property"), col.get("type", "str")
        _check_column_ref(spec_path, where, column, header)
        if not isinstance(prop, str) or not prop:
            raise _spec_error(spec_path, f"{where} needs property = \"<name>\"")
        if prop in seen or prop == "id":
            raise _spec_error(spec_path, f"{where}: property {prop!r} is given twice (or is 'id')")
        seen.add(prop)
        if kind not in TYPES:
            raise _spec_error(spec_path, f"{where}: type {kind!r} is not one of {', '.join(TYPES)}"
                                         f"{did_you_mean(str(kind), TYPES)}")
        assert isinstance(column, (int, str))
        columns.append(ColumnSpec(column, prop, kind, _strings(spec_path, where, col.get("missing", []))))
    id_column = entity.get("id_column")
    if id_column is not None:
        _check_column_ref(spec_path, "[entity] id_column", id_column, header)
    path = file.get("path")
    encoding = file.get("encoding", "utf-8")
    try:
        if not isinstance(encoding, str):
            raise LookupError(encoding)
        encoding = codecs.lookup(encoding).name
    except LookupError as exc:
        raise _spec_error(spec_path, f"[file] encoding {encoding!r} is not an encoding Python "
                                     "knows (e.g. utf-8, latin-1, cp1252)") from exc
    id_prefix = entity.get("id_prefix", "")
    if not isinstance(id_prefix, str):
        raise _spec_error(spec_path, "[entity] id_prefix must be a string")
    for where, name in [("[entity] label", label), ("[entity] id_prefix", id_prefix),
                        *((f"[[columns]] #{i} property", c.property)
                          for i, c in enumerate(columns, 1)),
                        *((f"[[columns]] #{i} column", c.column)
                          for i, c in enumerate(columns, 1) if isinstance(c.column, str))]:
        problem = text_problem(name, key=True) if name else None
        if problem:
            raise _spec_error(spec_path, f"{where} {problem}")
    return RecordSpec(
        path=(spec_path.parent / path) if isinstance(path, str) and path else None,
        header=header, delimiter=delimiter,
        missing=_strings(spec_path, "[file] missing", file.get("missing", [])),
        label=label, id_prefix=id_prefix, id_column=id_column,
        columns=tuple(columns), encoding=encoding, source=str(spec_path),
    )


def _check_column_ref(spec_path: Path, where: str, column: Any, header: bool) -> None:
    if isinstance(column, bool) or not isinstance(column, (int, str)):
        raise _spec_error(spec_path, f"{where}: column must be a 1-based number or a header name")
    if isinstance(column, int) and column < 1:
        raise _spec_error(spec_path, f"{where}: column numbers start at 1")
    if isinstance(column, str) and not header:
        raise _spec_error(spec_path, f"{where}: column {column!r} is a name but the file has no "
                                     "header; use its 1-based number")


def _strings(spec_path: Path, where: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _spec_error(spec_path, f"{where}: missing must be a list of strings")
    for v in value:
        problem = text_problem(v)
        if problem:
            raise _spec_error(spec_path, f"{where}: a marker {problem}")
    return tuple(value)


def _convert(text: str, kind: str) -> Any:
    if kind == "str":
        return text
    if kind == "bool":
        low = text.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError(f"{text!r} is not a boolean")
    try:
        number = parse_float(text)
    except NumberError as exc:
        if exc.infinite:
            raise ValueError(str(exc)) from exc
        raise ValueError(f"{text!r} is not a{'n int' if kind == 'int' else ' float'}") from exc
    if kind == "int":
        if not number.is_integer():
            raise ValueError(f"{text!r} is not an int")
        return int(number)
    return number


@dataclass(frozen=True)
class Record:
    id: str
    values: tuple[Any, ...]
    """One value per spec column (None = missing)."""


def read_records(spec: RecordSpec, path: Path) -> list[Record]:
    """Read and convert every row; the first bad row raises ``LoadError`` (FILE:LINE: reason)."""
    with open_data_file(path, what="records file") as binary:
        data = binary.read()  # the records are all held in memory anyway
    # utf-8-sig: a byte-order mark at the start is dropped (the text contract, kgdb/text.py)
    encoding = "utf-8-sig" if spec.encoding == "utf-8" else spec.encoding
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise LoadError(f"{path}:{line}: not {spec.encoding} text ({exc.reason} at byte "
                        f"{exc.start})") from exc
    handle = io.StringIO(text, newline="")
    records: list[Record] = []
    ids: dict[str, int] = {}
    with handle:
        reader = csv.reader(handle, delimiter=spec.delimiter)
        try:
            header: list[str] | None = None
            indexes: list[int] = []
            id_index: int | None = None
            for row in reader:
                line = reader.line_num
                if header is None and spec.header:
                    header = [clean_value(h, what=f"{path}:{line}: the header field {n}",
                                          key=True).strip(_SPACE)
                              for n, h in enumerate(row, 1)]
                    indexes = [_index(path, line, header, c.column) for c in spec.columns]
                    if spec.id_column is not None:
                        id_index = _index(path, line, header, spec.id_column)
                    continue
                if header is None:
                    header = []
                    indexes = [int(c.column) - 1 for c in spec.columns]
                    id_index = int(spec.id_column) - 1 if spec.id_column is not None else None
                if not row or all(not field.strip() for field in row):
                    continue
                records.append(_record(spec, path, line, row, indexes, id_index, len(records) + 1))
                rid = records[-1].id
                if rid in ids:
                    raise LoadError(f"{path}:{line}: id {rid!r} repeats the row at line {ids[rid]}")
                ids[rid] = line
        except csv.Error as exc:
            raise LoadError(f"{path}:{reader.line_num}: {exc}") from exc
    return records


def _index(path: Path, line: int, header: list[str], column: int | str) -> int:
    if isinstance(column, int):
        return column - 1
    if column not in header:
        same = [h for h in header if h.casefold() == column.casefold()]
        hint = f" (did you mean {same[0]!r}?)" if same else did_you_mean(column, header)
        raise LoadError(f"{path}:{line}: no column {column!r} in the header{hint}")
    return header.index(column)


def _record(spec: RecordSpec, path: Path, line: int, row: list[str], indexes: list[int],
            id_index: int | None, number: int) -> Record:
    needed = max([*indexes, id_index if id_index is not None else -1]) + 1
    if len(row) < needed:
        raise LoadError(f"{path}:{line}: expected at least {needed} fields, found {len(row)}")
    values: list[Any] = []
    for col, idx in zip(spec.columns, indexes, strict=True):
        text = clean_value(row[idx], what=f"{path}:{line}: column {col.column} ({col.property})",
                           key=False).strip(_SPACE)
        if text == "" or text in spec.missing or text in col.missing:
            values.append(None)
            continue
        try:
            values.append(_convert(text, col.type))
        except ValueError as exc:
            raise LoadError(f"{path}:{line}: column {col.column} ({col.property}): {exc}") from exc
    if id_index is not None:
        key = row[id_index].strip(_SPACE)
        if not key or key in spec.missing:
            raise LoadError(f"{path}:{line}: the id column {spec.id_column} is empty")
    else:
        key = str(number)
    record_id = clean_value(spec.id_prefix + key, what=f"{path}:{line}: the id", key=True)
    return Record(record_id, tuple(values))


def merge_records(dialect: Dialect, spec: RecordSpec,
                  records: Sequence[tuple[str, Sequence[Any]]] = ()) -> Statement:
    """The statement that writes ``records`` (id, values) as ``spec.label`` nodes."""
    try:
        return cypher_load.merge_records(dialect, spec.label, [c.property for c in spec.columns],
                                         records)
    except InvalidIdentifierError as exc:
        raise LoadError(f"{spec.source}: {exc}") from exc


def load_records(store: GraphStore, spec: RecordSpec, path: Path | None = None, *,
                 batch_size: int = 500, on_batch: Callable[[int], None] | None = None) -> int:
    """Load the file of ``spec`` (or ``path``) as ``spec.label`` nodes; returns rows loaded."""
    path = path or spec.path
    if path is None:
        raise LoadError(f"{spec.source}: no data file: give [file] path in the spec or --file")
    records = read_records(spec, path)
    merge_records(store.dialect, spec)  # a bad label or property fails before any write
    if not any(i.kind in ("range", "unique") and i.label == spec.label and i.properties == ("id",)
               for i in store.indexes()):
        for op in store.dialect.create_range_index(spec.label, "id"):
            execute_ddl(store, op)
        await_indexes(store)  # online before the first MERGE looks nodes up by id
    return store.run_batches(
        lambda batch: merge_records(store.dialect, spec, [(r.id, r.values) for r in batch]),
        records, batch_size=batch_size, on_batch=on_batch)
