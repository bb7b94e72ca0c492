"""Load (subject, predicate, object) triples: entities as ``(:Entity {id, name, embedding})``,
facts as relationships typed by their predicate, one ``(:RelationType)`` per predicate.

Batched and idempotent (MERGE): loading a file twice changes no count. Each batch is checked
before anything of it is written; with ``on_error="fail"`` a bad line stops the load before its
batch (earlier batches stay, and re-running the same command resumes), with ``"skip"`` bad lines
go to a rejects file and the good ones load.

The statements of one batch (relation types, entities, facts) are one unit of work
(``GraphStore.run_unit``): on Neo4j one transaction, so a batch the engine rejects (a constraint
violation) writes nothing at all; on FalkorDB, which has no multi-statement transactions, each
statement is atomic on its own and re-running the load completes a partly written batch.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from kgdb.cypher import catalog, load
from kgdb.cypher.explore import count_nodes
from kgdb.dialects.base import BulkEdges, BulkNodes
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore, batched
from kgdb.errors import EngineConnectionError, EngineError, InvalidIdentifierError, LoadError
from kgdb.schema.apply import await_indexes, ensure_base_schema
from kgdb.schema.model import humanize
from kgdb.statement import Statement
from kgdb.text import TextLimits, limits, normalise_newlines, open_data_file, text_problem
from kgdb.vocabulary import ENTITY

FORMATS = ("tsv", "csv", "jsonl")
MODES = ("auto", "bulk", "incremental")
ENTITY_BATCH = 500
"""Entities per statement: each carries a vector, so statements stay a few MB."""
ENTITY_NUMBERS = 1 << 32
"""A bulk load keys a fact by its ends' numbers in 32 bits each (:class:`PairSet`)."""

_JSON_KEYS = (("subject", "head", "s", "h"), ("predicate", "relation", "p", "r"),
              ("object", "tail", "o", "t"))


@dataclass(frozen=True)
class Triple:
    line: int
    subject: str
    predicate: str
    object: str


@dataclass(frozen=True)
class BadLine:
    line: int
    reason: str
    raw: str


@dataclass
class LoadReport:
    file: str
    lines: int = 0
    triples: int = 0
    rejected: int = 0
    entities_written: int = 0
    entities_seen: int = 0
    predicates: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    embed_seconds: float = 0.0
    rejects_file: str | None = None
    mode: str = "incremental"

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file, "lines": self.lines, "triples": self.triples,
            "rejected": self.rejected, "entities_seen": self.entities_seen,
            "entities_written": self.entities_written, "predicates": self.predicates,
            "seconds": round(self.seconds, 3), "embed_seconds": round(self.embed_seconds, 3),
            "triples_per_s": round(self.triples / self.seconds, 1) if self.seconds else None,
            "rejects_file": self.rejects_file, "mode": self.mode,
        }


def read_triples(path: Path, fmt: str | None = None,
                 sep: str | None = None) -> Iterator[Triple | BadLine]:
    """Parse a triples file line by line; bad lines come back as :class:`BadLine`."""
    fmt = fmt or _guess_format(path)
    if fmt not in FORMATS:
        raise LoadError(f"{path}: unknown format {fmt!r} (use one of {', '.join(FORMATS)})")
    if sep is not None and (not sep or sep in "\r\n" or text_problem(sep)):
        raise LoadError(f"--sep {sep!r} cannot separate fields")
    limit = limits()  # once per file: reading the environment per field costs 80% of parsing
    max_line = limit.line_bytes
    first = True
    with open_data_file(path, what="triples file") as handle:
        for number, raw_bytes in enumerate(_lines(handle, max_line), start=1):
            if raw_bytes is None:
                yield BadLine(number, f"the line is longer than {max_line} bytes "
                              "(KGDB_MAX_LINE_BYTES)", "<too long to show>")
                continue
            if number == 1:
                raw_bytes = raw_bytes.removeprefix(b"\xef\xbb\xbf")  # UTF-8 byte-order mark
            try:
                raw = raw_bytes.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                yield BadLine(number, f"not valid UTF-8 ({exc.reason} at byte {exc.start})",
                              raw_bytes.decode("utf-8", "replace").rstrip("\r\n"))
                continue
            if not raw.strip():
                continue
            header_allowed, first = first, False
            if fmt == "jsonl":
                yield _parse_json(number, raw, limit)
                continue
            if fmt == "csv":
                try:
                    fields = next(csv.reader(io.StringIO(raw, newline="")), [])
                except csv.Error as exc:
                    yield BadLine(number, f"invalid CSV: {exc}", raw)
                    continue
                if header_allowed and [f.strip().lower() for f in fields] in _HEADERS:
                    continue
                shown = ","
            else:
                sep = sep or ("\t" if "\t" in raw else "|")
                fields = raw.split(sep)
                shown = "TAB" if sep == "\t" else repr(sep)
            if len(fields) != 3:
                yield BadLine(number, f"expected 3 fields separated by {shown}, found "
                              f"{len(fields)}", raw)
                continue
            yield _triple(number, fields, raw, limit)


_HEADERS = [["subject", "predicate", "object"], ["head", "relation", "tail"], ["s", "p", "o"],
            ["h", "r", "t"]]


def _lines(handle: IO[bytes], max_line: int) -> Iterator[bytes | None]:
    """The file's lines, each at most ``max_line`` bytes; None stands for a longer line (its
    bytes are skipped, never held in memory)."""
    while True:
        line = handle.readline(max_line + 1)
        if not line:
            return
        if len(line) > max_line and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = handle.readline(1 << 20)
            yield None
            continue
        yield line


def _guess_format(path: Path) -> str:
    suffix = path.suffix.lower()
    return {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}.get(suffix, "tsv")


def _parse_json(number: int, raw: str, limit: TextLimits) -> Triple | BadLine:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return BadLine(number, f"invalid JSON: {exc.msg} at column {exc.colno}", raw)
    except RecursionError:
        return BadLine(number, "invalid JSON: nested too deeply", raw)
    if isinstance(value, list) and len(value) == 3:
        return _triple(number, [str(v) if v is not None else "" for v in value], raw, limit)
    if not isinstance(value, dict):
        return BadLine(number, "expected an object with subject, predicate, object", raw)
    fields = []
    for names in _JSON_KEYS:
        found = next((value[n] for n in names if n in value), None)
        if found is None:
            return BadLine(number, f"missing {names[0]!r}", raw)
        if not isinstance(found, (str, int, float)) or isinstance(found, bool):
            return BadLine(number, f"{names[0]!r} must be a string or number", raw)
        fields.append(str(found))
    return _triple(number, fields, raw, limit)


def _triple(number: int, fields: list[str], raw: str, limit: TextLimits) -> Triple | BadLine:
    """Fields trimmed of spaces and tabs, then held to the text contract for keys."""
    subject, predicate, obj = (normalise_newlines(f.strip(" \t")) for f in fields)
    for name, value in (("subject", subject), ("predicate", predicate), ("object", obj)):
        if not value:
            return BadLine(number, f"empty {name}", raw)
        problem = text_problem(value, key=True, limit=limit)
        if problem:
            return BadLine(number, f"the {name} {problem}", raw)
    return Triple(number, subject, predicate, obj)


def count_lines(path: Path) -> int:
    with open_data_file(path, what="triples file") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def load_triples(store: GraphStore, embedder: Embedder, path: str | Path, *,
                 fmt: str | None = None, sep: str | None = None, on_error: str = "fail",
                 batch_size: int = 5000, rejects_path: str | Path | None = None,
                 progress: bool = True, mode: str = "incremental") -> LoadReport:
    """``mode``: ``incremental`` (the default) MERGEs each batch into any graph, safe beside
    other writers; ``bulk`` fills an empty graph as its only writer (it numbers the entities
    it writes; see :class:`_BulkLoad`): FalkorDB's ``GRAPH.BULK``, CREATE batches on Neo4j;
    ``auto`` is bulk when the graph is empty. Both give the same graph on both engines
    (tests/live/test_bulk_load.py)."""
    from kgdb.progress import progress_bar

    path = Path(path)
    if on_error not in ("fail", "skip"):
        raise LoadError(f"--on-error must be 'fail' or 'skip', not {on_error!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise LoadError(f"the batch size must be a whole number of at least 1, not {batch_size!r}")
    started = time.perf_counter()
    embed_before = getattr(embedder, "compute_seconds", 0.0)
    total = count_lines(path)
    report = LoadReport(str(path))
    bulk = _BulkLoad(store, embedder, report) if _use_bulk(store, mode) else None
    if bulk is None:
        ensure_base_schema(store, embedder)
    else:
        bulk.start()
    report.mode = "bulk" if bulk else "incremental"
    rejects_file = Path(rejects_path) if rejects_path else path.with_name(path.name + ".rejects")
    if on_error == "skip":
        _check_writable(rejects_file)
    rejects = None
    seen_entities: set[str] = set()
    seen_predicates: set[str] = set()
    writer = _Writer(store, path)
    bar = progress_bar(total=total, unit="rows", unit_scale=True, file=sys.stderr,
                       disable=not progress, desc=f"loading {path.name}", mininterval=0.5,
                       dynamic_ncols=True)
    try:
        for batch in batched(read_triples(path, fmt, sep), batch_size):
            good, bad = _check(store, batch)
            report.lines += len(batch)
            if bad and on_error == "fail":
                writer.drain()  # earlier batches are complete before we report
                first, last = batch[0].line, batch[-1].line
                more = f" (and {len(bad) - 1} more bad lines in this batch)" if len(bad) > 1 else ""
                raise LoadError(
                    f"{path}:{bad[0].line}: {bad[0].reason}{more}; nothing from lines "
                    f"{first}-{last} was written" + (f", lines before {first} are loaded" if
                                                     first > 1 else "") +
                    "; fix the file and run the same command again (loading is idempotent), "
                    "or add --on-error skip")
            if bad:
                if rejects is None:
                    try:
                        rejects = open(rejects_file, "w", encoding="utf-8",
                                       errors="backslashreplace")
                    except OSError as exc:
                        raise LoadError(f"{rejects_file}: cannot write the rejects file: "
                                        f"{exc.strerror or exc}") from exc
                    report.rejects_file = str(rejects_file)
                for b in bad:
                    rejects.write(f"{b.line}\t{b.reason}\t{_visible(b.raw)}\n")
                report.rejected += len(bad)
            lines = (batch[0].line, batch[-1].line)
            if bulk is not None:
                writer.submit(bulk.batch(good), lines)
            else:
                writer.submit_statements(_batch_statements(
                    store, embedder, good, seen_entities, seen_predicates, report), lines)
            bar.update(len(batch))
            # a string: tqdm writes a number like 40000 as "4e+4"
            bar.set_postfix(entities=f"{len(bulk.ids) if bulk else len(seen_entities):,}",
                            refresh=False)
        writer.drain()
    except BaseException:
        if bulk is not None:
            try:
                writer.close()
            finally:  # what was written gets its catalog and indexes: re-runs resume
                bulk.finish(after_error=True)
        raise
    finally:
        writer.close()
        bar.close()
        if rejects is not None:
            rejects.close()
    if bulk is not None:
        bulk.finish()
    report.entities_seen = len(bulk.ids) if bulk is not None else len(seen_entities)
    report.seconds = time.perf_counter() - started
    report.embed_seconds = getattr(embedder, "compute_seconds", 0.0) - embed_before
    return report


_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def _visible(raw: str) -> str:
    """A rejected line as one line of the rejects file: control characters, line separators
    and lone surrogates are written as ``\\xHH``/``\\uHHHH`` escapes."""
    return _INVISIBLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                          else f"\\u{ord(m.group()):04x}", raw)


def _check_writable(rejects_file: Path) -> None:
    """Before loading: the rejects file can be written (its folder exists, it is no folder)."""
    folder = rejects_file.parent
    if not folder.is_dir():
        raise LoadError(f"{rejects_file}: cannot write the rejects file: the folder {folder} "
                        "does not exist")
    if rejects_file.is_dir():
        raise LoadError(f"{rejects_file}: cannot write the rejects file: it is a folder")
    if not os.access(folder, os.W_OK) or (rejects_file.exists()
                                          and not os.access(rejects_file, os.W_OK)):
        raise LoadError(f"{rejects_file}: cannot write the rejects file: permission denied")


def _check(store: GraphStore, batch: list[Triple | BadLine]) -> tuple[list[Triple], list[BadLine]]:
    good: list[Triple] = []
    bad: list[BadLine] = []
    for item in batch:
        if isinstance(item, BadLine):
            bad.append(item)
            continue
        try:
            store.dialect.ident(item.predicate)
        except InvalidIdentifierError as exc:
            bad.append(BadLine(item.line, f"predicate cannot be a relationship type: {exc}",
                               f"{item.subject}|{item.predicate}|{item.object}"))
            continue
        good.append(item)
    return good, bad


def _batch_statements(store: GraphStore, embedder: Embedder, triples: list[Triple],
                      seen_entities: set[str], seen_predicates: set[str],
                      report: LoadReport) -> list[Statement]:
    """The statements that write one batch, in order: relation types, entities, facts."""
    d = store.dialect
    statements: list[Statement] = []
    new_predicates = sorted({t.predicate for t in triples} - seen_predicates)
    if new_predicates:
        texts = [humanize(p) for p in new_predicates]
        vectors = embedder.embed(texts)
        statements.append(catalog.merge_relation_types(d, list(zip(new_predicates, texts, vectors,
                                                                   strict=True))))
        seen_predicates.update(new_predicates)
    names = list(dict.fromkeys(n for t in triples for n in (t.subject, t.object)
                               if n not in seen_entities))
    if names:
        present = {r["id"] for r in store.run(load.match_embedded_entities(names)).records()}
        missing = [n for n in names if n not in present]
        vectors = embedder.embed(missing)
        for start in range(0, len(missing), ENTITY_BATCH):
            chunk = missing[start:start + ENTITY_BATCH]
            statements.append(load.merge_entities(d, chunk, chunk,
                                                  vectors[start:start + len(chunk)]))
        report.entities_written += len(missing)
        seen_entities.update(names)
    by_predicate: dict[str, list[tuple[str, str]]] = {}
    for t in triples:
        by_predicate.setdefault(t.predicate, []).append((t.subject, t.object))
    for predicate, rows in by_predicate.items():
        statements.append(load.merge_facts(d, predicate, rows))
        if predicate in new_predicates:  # see drop_repeated_facts: a concurrent writer's race
            statements.append(load.drop_repeated_facts(d, predicate, rows))
        report.predicates[predicate] = report.predicates.get(predicate, 0) + len(rows)
    report.triples += len(triples)
    return statements


def _use_bulk(store: GraphStore, mode: str) -> bool:
    if mode not in MODES:
        raise LoadError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "incremental":
        return False
    # the bulk-insert command makes the graph anew, so there it must not even have indexes
    # (Neo4j's two token lookup indexes are always there and not kgdb's)
    empty = not store.run(count_nodes()).value(0) and not (
        store.dialect.BULK_INSERT and any(i.kind != "lookup" for i in store.indexes()))
    if mode == "bulk" and not empty:
        raise LoadError(f"--mode bulk builds a new graph, and {store.address} already has "
                        "nodes" + (" or indexes" if store.dialect.BULK_INSERT else "") +
                        "; use --mode incremental to add to it")
    return empty


class PairSet:
    """The (head, tail) pairs of one relation type a bulk load has written, as 64-bit keys
    (``head << 32 | tail`` of kgdb's entity numbers) in sorted runs merged as they grow, so
    a run is searched in O(log n) and memory is 8 bytes per fact (a Python set of the same
    keys takes about 70). :meth:`add` returns which keys are new: MERGE's semantics, a
    repeated fact written once."""

    def __init__(self) -> None:
        self.runs: list[np.ndarray] = []

    def __len__(self) -> int:
        return sum(len(run) for run in self.runs)

    def add(self, keys: np.ndarray) -> np.ndarray:
        """Add ``keys`` (uint64); True where a key was neither added before nor earlier in
        ``keys`` itself."""
        new = np.zeros(len(keys), dtype=bool)
        _, first = np.unique(keys, return_index=True)
        new[first] = True
        for run in self.runs:
            where = np.minimum(np.searchsorted(run, keys), len(run) - 1)
            new &= run[where] != keys
        fresh = np.sort(keys[new])
        if len(fresh):
            self.runs.append(fresh)
        while len(self.runs) > 1 and len(self.runs[-1]) >= len(self.runs[-2]):
            top = self.runs.pop()
            self.runs[-1] = np.sort(np.concatenate([self.runs[-1], top]), kind="mergesort")
        return new


class _BulkLoad:
    """A first load into an empty graph, as its only writer: kgdb numbers the entities and
    drops repeated facts itself, so nothing is looked up or merged in the engine.

    Where the engine has a bulk-insert command (FalkorDB's ``GRAPH.BULK``), :meth:`start`
    makes the graph anew with its indexes (empty, so instant); each batch then sends its new
    entities as binary rows (with the next internal node ids, checked against the engine's
    numbering), makes their list embeddings vectors (which inserts them into the vector index
    while the next batch is prepared here), and sends its facts by internal id; predicates a
    bulk header cannot carry go through Cypher. Elsewhere (Neo4j) each batch is one
    transaction of CREATE statements: entities with their vectors as one matrix parameter,
    then facts matched by id through the uniqueness constraint's index."""

    def __init__(self, store: GraphStore, embedder: Embedder, report: LoadReport) -> None:
        self.store = store
        self.embedder = embedder
        self.report = report
        self.command = store.dialect.BULK_INSERT
        self.ids: dict[str, int] = {}
        self.facts: dict[str, PairSet] = {}
        """Per predicate, in first-seen order: the facts written."""
        self.offset = 0
        self.finished = False

    def start(self) -> None:
        """The graph's schema: indexes, constraints and catalog exist before the first entity,
        so the engine maintains them as rows arrive (created after the data, at 919k entities,
        FalkorDB's were not built within 600 s). With a bulk-insert command the graph is made
        anew by it first (it is empty: checked)."""
        if self.command:
            self.store.drop()
            self.store.execute(self.store.dialect.bulk_insert(begin=True))
        ensure_base_schema(self.store, self.embedder)
        if self.command:
            self.offset = int(self.store.run(count_nodes()).value(0))

    def batch(self, triples: list[Triple]) -> Callable[[], None]:
        """Prepare one batch (embedding, rows) here; the returned call sends it."""
        names = list(dict.fromkeys(n for t in triples for n in (t.subject, t.object)
                                   if n not in self.ids))
        first = self.offset + len(self.ids)
        if first + len(names) > ENTITY_NUMBERS:
            raise LoadError(f"a bulk load numbers entities below {ENTITY_NUMBERS:,}; load a "
                            "graph this large with --mode incremental")
        for offset, name in enumerate(names):
            self.ids[name] = first + offset
        vectors = self.embedder.embed(names)
        by_predicate: dict[str, list[Triple]] = {}
        for t in triples:
            by_predicate.setdefault(t.predicate, []).append(t)
        facts: dict[str, list[Triple]] = {}
        for predicate, rows in by_predicate.items():
            self.report.predicates[predicate] = (self.report.predicates.get(predicate, 0)
                                                 + len(rows))
            pairs = np.fromiter(((self.ids[t.subject] << 32) | self.ids[t.object]
                                 for t in rows), dtype=np.uint64, count=len(rows))
            new = self.facts.setdefault(predicate, PairSet()).add(pairs)
            kept = [t for t, keep in zip(rows, new.tolist(), strict=True) if keep]
            if kept:
                facts[predicate] = kept
        self.report.triples += len(triples)
        self.report.entities_written += len(names)
        if self.command:
            return self._command_batch(names, first, vectors, facts)
        return self._create_batch(names, vectors, facts)

    def _create_batch(self, names: list[str], vectors: np.ndarray,
                      facts: dict[str, list[Triple]]) -> Callable[[], None]:
        d = self.store.dialect
        statements = [load.create_entities(d, names[start:start + ENTITY_BATCH],
                                           names[start:start + ENTITY_BATCH],
                                           vectors[start:start + ENTITY_BATCH])
                      for start in range(0, len(names), ENTITY_BATCH)]
        statements += [load.create_facts(d, p, [(t.subject, t.object) for t in rows])
                       for p, rows in facts.items()]
        prepared = [self.store.prepare(s) for s in statements]

        def send() -> None:
            self.store.run_prepared_unit(prepared)

        return send

    def _command_batch(self, names: list[str], first: int, vectors: np.ndarray,
                       facts: dict[str, list[Triple]]) -> Callable[[], None]:
        d = self.store.dialect
        nodes = None
        if names:
            nodes = BulkNodes(ENTITY, ("id", "name"), [(n, n) for n in names],
                              "embedding", vectors)
        by_type: dict[str, list[tuple[int, int]]] = {}
        by_cypher: dict[str, list[tuple[str, str]]] = {}
        for predicate, rows in facts.items():
            if d.bulk_label_ok(predicate):
                by_type[predicate] = [(self.ids[t.subject], self.ids[t.object]) for t in rows]
            else:
                by_cypher[predicate] = [(t.subject, t.object) for t in rows]
        add_nodes = d.bulk_insert(begin=False, nodes=nodes) if nodes else None
        edges = [BulkEdges(p, np.asarray(rows, dtype=np.uint64)) for p, rows in by_type.items()]
        add_edges = d.bulk_insert(begin=False, edges=edges) if edges else None
        by_statement = [self.store.prepare(load.merge_facts(d, p, rows))
                        for p, rows in by_cypher.items()]
        last = (names[-1], first + len(names) - 1) if names else None

        def send() -> None:
            if add_nodes is not None and last is not None:
                self.store.execute(add_nodes)
                found = self.store.run(d.bulk_entity_at(last[1])).value(None)
                if found != last[0]:
                    raise LoadError(f"the bulk insert numbered nodes differently than kgdb "
                                    f"expected (node {last[1]} is {found!r}, not {last[0]!r}); "
                                    "load with --mode incremental")
                self.store.run(d.bulk_lists_to_vectors(first, last[1]))
            if add_edges is not None:
                self.store.execute(add_edges)
            if by_statement:
                self.store.run_prepared_unit(by_statement)

        return send

    def finish(self, *, after_error: bool = False) -> None:
        """The relation-type catalog, then every index online. After an error it is best
        effort (the error that stopped the load is what the user sees)."""
        if self.finished:
            return
        self.finished = True
        try:
            names = list(self.facts)
            if names:
                texts = [humanize(p) for p in names]
                self.store.run(catalog.merge_relation_types(
                    self.store.dialect,
                    list(zip(names, texts, self.embedder.embed(texts), strict=True))))
            await_indexes(self.store)
        except EngineError:
            if not after_error:
                raise


class _Writer:
    """Sends each batch's statements, in order, as one unit of work on one thread while the
    caller prepares the next batch, so embedding and parameter rendering overlap the
    engine's work. After a batch fails, later batches are not sent."""

    def __init__(self, store: GraphStore, path: Path, depth: int = 2) -> None:
        self.store = store
        self.path = path
        self.depth = depth
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgdb-writer")
        self._pending: deque[Future[object]] = deque()
        self._failed = False

    def submit_statements(self, statements: list[Statement], lines: tuple[int, int]) -> None:
        if not statements:
            return
        prepared = [self.store.prepare(s) for s in statements]
        self.submit(lambda: self.store.run_prepared_unit(prepared), lines)

    def submit(self, send: Callable[[], object], lines: tuple[int, int]) -> None:
        self._pending.append(self._pool.submit(self._send, send, lines))
        while len(self._pending) > self.depth:
            self._pending.popleft().result()

    def _send(self, send: Callable[[], object], lines: tuple[int, int]) -> None:
        if self._failed:
            return
        try:
            send()
        except EngineConnectionError:
            self._failed = True
            raise
        except EngineError as exc:
            self._failed = True
            first, last = lines
            if self.store.TRANSACTIONS:
                written = (f"nothing from lines {first}-{last} was written (the batch is one "
                           "transaction)")
            else:
                written = (f"lines {first}-{last} may be partly written (this engine has no "
                           "multi-statement transactions)")
            before = f", lines before {first} are loaded" if first > 1 else ""
            raise LoadError(
                f"{self.path}:{first}-{last}: the engine rejected the batch: {exc}; {written}"
                f"{before}; fix the cause and run the same command again (loading is "
                "idempotent)") from exc

    def drain(self) -> None:
        while self._pending:
            self._pending.popleft().result()

    def close(self) -> None:
        try:
            self.drain()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
