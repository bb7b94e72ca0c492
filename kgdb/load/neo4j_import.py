"""Bulk import the Neo4j way: a triples file written as ``neo4j-admin database import full``
input and imported offline into kgdb's local Neo4j (:class:`~kgdb.engine.neo4j_local.LocalNeo4j`),
then given kgdb's indexes and catalog. The graph is the one ``kgdb load triples`` writes
(tests/live/test_neo4j_import.py): ``(:Entity {id, name, embedding})`` per distinct subject or
object, one relationship typed by its predicate per distinct fact, one ``(:RelationType)``
per predicate, the ``(:KgdbMeta)`` embedding setting, and the indexes of
:func:`~kgdb.schema.apply.ensure_base_schema`.

Steps (docs/engines/neo4j-import.md):

1. The triples are read and checked as ``kgdb load triples`` reads them, their entities
   embedded, and two CSV files written with typed headers: ``entities.csv``
   (``id:ID,name,embedding:float[]``, the label ``Entity`` given on the command line) and
   ``facts.csv`` (``:START_ID,:END_ID,:TYPE``: the type is a CSV value, so any predicate
   kgdb accepts, ``ns:weird type`` too, needs no escaping on a command line). A bad line
   (``--on-error fail``) stops here: the database has not been touched.
2. The server is stopped (the importer writes store files itself), the database is replaced
   (``--overwrite-destination``), the server started again on the same ports.
3. kgdb's schema (constraints, range, full-text and vector indexes, the embedding setting),
   then the relation-type catalog, are written through Cypher, and every index awaited.

Embeddings are stored as ``float[]`` (32-bit) arrays: kgdb's embedders give float32, each
written as the shortest decimal that reads back as the same float32 (Arrow's float to string
cast; without pyarrow, 9 significant digits, also exact), so every value read back equals
the one ``kgdb load triples`` stores as a list of 64-bit floats, in half the space on disk.

With pyarrow installed the files are written by Arrow's C++ CSV writer in a second thread
(it releases the GIL), while this one parses and embeds the next batch: formatting 384 floats
a row in Python was most of the writer's time (docs/engines/neo4j-import.md).
"""

from __future__ import annotations

import csv
import gzip
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

import numpy as np

from kgdb.cypher import catalog
from kgdb.cypher.explore import count_nodes
from kgdb.dialects.base import Dialect, VectorIndexOptions
from kgdb.dialects.neo4j import Neo4jDialect
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore, batched
from kgdb.errors import InvalidIdentifierError, KgdbError, LoadError
from kgdb.load.triples import (
    ENTITY_NUMBERS,
    BadLine,
    LoadReport,
    PairSet,
    Triple,
    _check_writable,
    _visible,
    count_lines,
    read_triples,
)
from kgdb.schema.apply import await_indexes, ensure_base_schema
from kgdb.schema.model import humanize
from kgdb.vocabulary import ENTITY

DATABASE = "neo4j"
"""Neo4j Community has one user database: the import replaces it."""

QUANTIZED_FROM = 5_000_000
"""Entities from which an import builds the entities' vector index quantized (int8) by default
(:func:`vector_index_for`)."""

QUANTIZED = VectorIndexOptions(quantization=True, m=16, ef_construction=200)
"""The entities' vector index of a large import: int8 vectors (a quarter of the bytes that a
search reads: the index stays in the page cache at sizes where float32 would not), Lucene's
16 neighbours per node, and twice its default insertion beam to win back the recall that
quantization costs (docs/engines/neo4j-import.md). kgdb re-ranks every proposal exactly from
the stored float32 values, so quantization changes which candidates are proposed, never a
distance that kgdb reports from them."""

VECTOR_INDEX_CHOICES = ("auto", "exact", "quantized")


def vector_index_for(entities: int, choice: str = "auto") -> VectorIndexOptions:
    """The entities' vector index options: ``exact`` (float32, unquantized scores: Neo4j's
    default graph), ``quantized`` (:data:`QUANTIZED`), or ``auto``: quantized from
    :data:`QUANTIZED_FROM` entities, where the plugin's int8 copy (400 bytes a 384-d row)
    outgrows a quarter of an 8 GB heap and Lucene's index proposes every candidate."""
    if choice not in VECTOR_INDEX_CHOICES:
        raise LoadError(f"--vector-index must be one of {', '.join(VECTOR_INDEX_CHOICES)}, "
                        f"not {choice!r}")
    if choice == "quantized" or (choice == "auto" and entities >= QUANTIZED_FROM):
        return QUANTIZED
    return VectorIndexOptions()


ENTITY_HEADER = ("id:ID", "name", "embedding:float[]")
FACT_HEADER = (":START_ID", ":END_ID", ":TYPE")
ARRAY_DELIMITER = ";"


@dataclass
class ImportFiles:
    """The importer's input, written by :func:`write_import_files`."""

    entities: Path
    facts: Path
    report: LoadReport
    relationships: int = 0
    """Facts written (repeated facts once)."""
    multiline: bool = False
    """Whether a value holds a line break (the importer then parses quoted newlines)."""

    @property
    def predicates(self) -> list[str]:
        return list(self.report.predicates)

    @property
    def bytes(self) -> int:
        return self.entities.stat().st_size + self.facts.stat().st_size

    def options(self) -> list[str]:
        """The ``neo4j-admin database import full`` options that read these files."""
        options = [f"--nodes={ENTITY}={self.entities}", f"--relationships={self.facts}",
                   "--id-type=string", f"--array-delimiter={ARRAY_DELIMITER}",
                   "--bad-tolerance=0"]
        if self.multiline:
            options.append("--multiline-fields=true")
        return options


@dataclass
class ImportReport:
    file: str
    home: str
    uri: str = ""
    lines: int = 0
    triples: int = 0
    rejected: int = 0
    rejects_file: str | None = None
    entities: int = 0
    relationships: int = 0
    predicates: dict[str, int] = field(default_factory=dict)
    replaced_nodes: int = 0
    """Nodes the database held before (replaced; 0 for an empty one)."""
    csv_bytes: int = 0
    store_bytes: int = 0
    """The imported database's store files on disk, before kgdb's indexes."""
    store_bytes_with_indexes: int = 0
    transaction_log_bytes: int = 0
    """Its transaction logs after kgdb's indexes (Neo4j allocates 256 MiB per log file)."""
    vector_index: dict[str, object] = field(default_factory=dict)
    """How the entities' vector index was built (:class:`VectorIndexOptions`)."""
    seconds: dict[str, float] = field(default_factory=dict)
    log: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file, "home": self.home, "uri": self.uri, "mode": "neo4j-import",
            "lines": self.lines, "triples": self.triples, "rejected": self.rejected,
            "rejects_file": self.rejects_file, "entities": self.entities,
            "relationships": self.relationships, "predicates": self.predicates,
            "replaced_nodes": self.replaced_nodes, "csv_bytes": self.csv_bytes,
            "store_bytes": self.store_bytes,
            "store_bytes_with_indexes": self.store_bytes_with_indexes,
            "transaction_log_bytes": self.transaction_log_bytes,
            "vector_index": self.vector_index,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()}, "log": self.log}


def write_import_files(path: Path, embedder: Embedder, dialect: Dialect, folder: Path, *,
                       fmt: str | None = None, sep: str | None = None,
                       on_error: str = "fail", batch_size: int = 5000,
                       rejects_path: Path | None = None,
                       progress: bool = True, compress: bool = False,
                       fast: bool | None = None) -> ImportFiles:
    """Read ``path`` as ``kgdb load triples`` does and write the importer's CSV files into
    ``folder``: each entity once with its embedding, each fact once (MERGE's semantics).
    ``compress``: gzip them (level 1; the importer reads ``.csv.gz`` as it is), about 2.3
    times smaller for 384-d vectors. ``fast``: Arrow's writer (default: where pyarrow is
    installed); False: the standard library's csv module (the same graph, more slowly)."""
    from kgdb.progress import progress_bar

    if on_error not in ("fail", "skip"):
        raise LoadError(f"--on-error must be 'fail' or 'skip', not {on_error!r}")
    report = LoadReport(str(path), mode="neo4j-import")
    rejects_file = rejects_path or path.with_name(path.name + ".rejects")
    if on_error == "skip":
        _check_writable(rejects_file)
    suffix = ".csv.gz" if compress else ".csv"
    files = ImportFiles(folder / f"entities{suffix}", folder / f"facts{suffix}", report)
    ids: dict[str, int] = {}
    facts: dict[str, PairSet] = {}
    bar = progress_bar(total=count_lines(path), unit="rows", unit_scale=True, file=sys.stderr,
                       disable=not progress, desc=f"writing import files for {path.name}",
                       mininterval=0.5, dynamic_ncols=True)
    rejects: IO[str] | None = None
    out = _writer(files, compress, embedder.dimension, fast)
    try:
        for batch in batched(read_triples(path, fmt, sep), batch_size):
            good, bad = _check(dialect, batch)
            report.lines += len(batch)
            if bad and on_error == "fail":
                more = (f" (and {len(bad) - 1} more bad lines in this batch)"
                        if len(bad) > 1 else "")
                raise LoadError(f"{path}:{bad[0].line}: {bad[0].reason}{more}; nothing was "
                                "imported (the database is untouched); fix the file, or "
                                "add --on-error skip")
            if bad:
                if rejects is None:
                    rejects = _open_rejects(rejects_file)
                    report.rejects_file = str(rejects_file)
                for b in bad:
                    rejects.write(f"{b.line}\t{b.reason}\t{_visible(b.raw)}\n")
                report.rejected += len(bad)
            names = list(dict.fromkeys(n for t in good for n in (t.subject, t.object)
                                       if n not in ids))
            if len(ids) + len(names) > ENTITY_NUMBERS:
                raise LoadError(f"an import numbers entities below {ENTITY_NUMBERS:,}; "
                                "this file has more")
            for name in names:
                ids[name] = len(ids)
                files.multiline = files.multiline or "\n" in name
            if names:
                out.entities(names, np.asarray(embedder.embed(names), dtype=np.float32))
            files.relationships += _write_facts(out, good, ids, facts, report)
            report.triples += len(good)
            bar.update(len(batch))
            bar.set_postfix(entities=f"{len(ids):,}", refresh=False)
        out.close()
    finally:
        out.close(abandon=True)
        bar.close()
        if rejects is not None:
            rejects.close()
    report.entities_seen = report.entities_written = len(ids)
    return files


def _open_csv(path: Path, compress: bool) -> IO[str]:
    if compress:
        return gzip.open(path, "wt", compresslevel=1, encoding="utf-8", newline="")
    return open(path, "w", encoding="utf-8", newline="")


def _open_binary(path: Path, compress: bool) -> BinaryIO:
    if compress:
        return gzip.GzipFile(path, "wb", compresslevel=1)  # type: ignore[return-value]
    return open(path, "wb")


def has_pyarrow() -> bool:
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


class CsvImportWriter:
    """The two files through the standard library's csv module, rows formatted in Python."""

    def __init__(self, files: ImportFiles, compress: bool, dimension: int) -> None:
        self._entity_file = _open_csv(files.entities, compress)
        self._fact_file = _open_csv(files.facts, compress)
        self._entities = csv.writer(self._entity_file, lineterminator="\n")
        self._facts = csv.writer(self._fact_file, lineterminator="\n")
        self._entities.writerow(ENTITY_HEADER)
        self._facts.writerow(FACT_HEADER)
        self._row = ARRAY_DELIMITER.join(["%.9g"] * dimension)
        self._open = True

    def entities(self, names: list[str], vectors: np.ndarray) -> None:
        row = self._row
        self._entities.writerows((name, name, row % tuple(vector))
                                 for name, vector in zip(names, vectors.tolist(), strict=True))

    def facts(self, starts: list[str], ends: list[str], types: list[str]) -> None:
        self._facts.writerows(zip(starts, ends, types, strict=True))

    def close(self, abandon: bool = False) -> None:
        if self._open:
            self._open = False
            self._entity_file.close()
            self._fact_file.close()


class ArrowImportWriter:
    """The two files as Arrow formats them, in threads of their own (Arrow's kernels and zlib
    release the GIL, so formatting runs on every core while the caller parses and embeds the
    next batch): each float32 becomes the shortest decimal that reads back as itself (Arrow's
    cast; Java's Float.parseFloat, which the importer uses, rounds correctly), the array
    elements joined by ``;``, every string quoted as RFC 4180 (a ``"`` doubled). Batches are
    formatted by a pool of :data:`THREADS` threads and written in order by one more; at most
    :data:`QUEUED` wait. An error in a thread is raised by the next call or by :meth:`close`."""

    QUEUED = 4
    THREADS = max(1, min(4, os.cpu_count() or 1))
    ROWS = 50_000
    """Rows formatted at a time (Arrow's string offsets are 32-bit: 2 GB a chunk)."""

    def __init__(self, files: ImportFiles, compress: bool, dimension: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._outputs = {"entities": _open_binary(files.entities, compress),
                         "facts": _open_binary(files.facts, compress)}
        self._outputs["entities"].write((",".join(ENTITY_HEADER) + "\n").encode())
        self._outputs["facts"].write((",".join(FACT_HEADER) + "\n").encode())
        self._pool = ThreadPoolExecutor(self.THREADS, thread_name_prefix="kgdb-import-format")
        self._queue: queue.Queue[tuple[str, Any] | None] = queue.Queue(self.QUEUED)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kgdb-import-writer",
                                        daemon=True)
        self._open = True
        self._thread.start()

    def entities(self, names: list[str], vectors: np.ndarray) -> None:
        for start in range(0, len(names), self.ROWS):
            self._put("entities", (names[start:start + self.ROWS],
                                   vectors[start:start + self.ROWS]))

    def facts(self, starts: Any, ends: Any, types: Any) -> None:
        """One batch of facts: lists of strings, or Arrow string arrays."""
        for start in range(0, len(starts), self.ROWS):
            end = start + self.ROWS
            self._put("facts", (starts[start:end], ends[start:end], types[start:end]))

    def _put(self, kind: str, payload: Any) -> None:
        self._raise()
        self._queue.put((kind, self._pool.submit(_csv_rows, kind, payload)))

    def _raise(self) -> None:
        if self._error is not None:
            raise LoadError(f"writing the import files failed: {self._error}") from self._error

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            kind, future = item
            try:
                data = future.result()
                if self._error is None:
                    self._outputs[kind].write(data)
            except BaseException as exc:  # reported to the caller, never lost in the thread
                self._error = self._error or exc

    def close(self, abandon: bool = False) -> None:
        if not self._open:
            return
        self._open = False
        self._queue.put(None)
        self._thread.join()
        self._pool.shutdown()
        for out in self._outputs.values():
            out.close()
        if not abandon:
            self._raise()


def _csv_rows(kind: str, payload: Any) -> memoryview:
    """CSV rows (every field quoted) of one batch, as the bytes of one Arrow string array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def column(values: Any) -> Any:
        return values if isinstance(values, pa.Array) else pa.array(values, pa.string())

    def quoted(values: Any) -> Any:
        return pc.binary_join_element_wise('"', pc.replace_substring(column(values), '"', '""'),
                                           '"', "")

    if kind == "entities":
        names, vectors = payload
        name = quoted(names)
        fields = [name, name, vector_text(vectors)]
    else:
        fields = [quoted(v) for v in payload]
    fields[-1] = pc.binary_join_element_wise(fields[-1], "\n", "")
    lines = pc.binary_join_element_wise(*fields, ",")
    if len(lines) == 0:
        return memoryview(b"")
    _, offsets, data = lines.buffers()
    bounds = np.frombuffer(offsets, dtype=np.int32, count=len(lines) + 1, offset=4 * lines.offset)
    return memoryview(data)[int(bounds[0]):int(bounds[-1])]


def vector_text(vectors: np.ndarray) -> Any:
    """Rows of float32 as an Arrow string array of ``x;y;...``: each value the shortest decimal
    that reads back as the same float32 (Arrow's cast), vectorised in C++."""
    import pyarrow as pa
    import pyarrow.compute as pc

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    rows, dim = vectors.shape
    if rows == 0:
        return pa.array([], pa.string())
    text = pc.cast(pa.array(vectors.reshape(-1)), pa.string())
    offsets = pa.array(np.arange(0, vectors.size + 1, dim, dtype=np.int32))
    return pc.binary_join(pa.ListArray.from_arrays(offsets, text), ARRAY_DELIMITER)


def _writer(files: ImportFiles, compress: bool, dimension: int,
            fast: bool | None) -> CsvImportWriter | ArrowImportWriter:
    if fast is None:
        fast = has_pyarrow()
    if fast and not has_pyarrow():
        raise LoadError("the fast import writer needs pyarrow: pip install pyarrow")
    return (ArrowImportWriter if fast else CsvImportWriter)(files, compress, dimension)


def _write_facts(out: CsvImportWriter | ArrowImportWriter, triples: list[Triple], ids: dict[str, int],
                 facts: dict[str, PairSet], report: LoadReport) -> int:
    by_predicate: dict[str, list[Triple]] = {}
    for t in triples:
        by_predicate.setdefault(t.predicate, []).append(t)
    starts: list[str] = []
    ends: list[str] = []
    types: list[str] = []
    for predicate, rows in by_predicate.items():
        report.predicates[predicate] = report.predicates.get(predicate, 0) + len(rows)
        pairs = np.fromiter(((ids[t.subject] << 32) | ids[t.object] for t in rows),
                            dtype=np.uint64, count=len(rows))
        new = facts.setdefault(predicate, PairSet()).add(pairs)
        kept = [t for t, keep in zip(rows, new.tolist(), strict=True) if keep]
        starts += [t.subject for t in kept]
        ends += [t.object for t in kept]
        types += [predicate] * len(kept)
    if starts:
        out.facts(starts, ends, types)
    return len(starts)


def _check(dialect: Dialect, batch: list[Triple | BadLine]) -> tuple[list[Triple], list[BadLine]]:
    good: list[Triple] = []
    bad: list[BadLine] = []
    for item in batch:
        if isinstance(item, BadLine):
            bad.append(item)
            continue
        try:
            dialect.ident(item.predicate)
        except InvalidIdentifierError as exc:
            bad.append(BadLine(item.line, f"predicate cannot be a relationship type: {exc}",
                               f"{item.subject}|{item.predicate}|{item.object}"))
            continue
        good.append(item)
    return good, bad


def _open_rejects(rejects_file: Path) -> IO[str]:
    try:
        return open(rejects_file, "w", encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise LoadError(f"{rejects_file}: cannot write the rejects file: "
                        f"{exc.strerror or exc}") from exc


def database_contents(store: GraphStore) -> tuple[int, int]:
    """(nodes, kgdb or user indexes): what an import would replace. Neo4j's two token
    lookup indexes are always there and are not counted."""
    nodes = int(store.run(count_nodes()).value(0) or 0)
    return nodes, sum(1 for i in store.indexes() if i.kind != "lookup")


def import_triples(server: Any, embedder: Embedder, path: str | Path, *, replace: bool = False,
                   fmt: str | None = None, sep: str | None = None, on_error: str = "fail",
                   batch_size: int = 5000, rejects_path: str | Path | None = None,
                   progress: bool = True, work_dir: Path | None = None,
                   echo: Callable[[str], None] | None = None,
                   standard_ports: bool = True, heap: str | None = None,
                   pagecache: str | None = None, compress: bool = False,
                   write_files: Callable[[Path], ImportFiles] | None = None,
                   vector_index: VectorIndexOptions | None = None) -> ImportReport:
    """Import a triples file into ``server`` (a :class:`LocalNeo4j`) offline (the module
    docstring). The import replaces the database: one that holds nodes or indexes is refused
    unless ``replace``. The server runs afterwards (on the ports it ran on, else as
    ``kgdb neo4j start`` picks them: 7687 and 7474 when free and ``standard_ports``);
    ``heap`` and ``pagecache`` are those it restarts with (default: those it ran with, else
    the server's own). ``echo`` gets the importer's output lines. The CSV files are written
    under ``work_dir`` (default: the home's ``import/`` folder, on the database's disk),
    gzipped with ``compress``, and removed after. ``write_files`` writes them instead of
    :func:`write_import_files` of ``path`` (given the folder; ``kgdb bench scale`` writes its
    generated graph directly). ``vector_index``: the entity vector index's options (default:
    :func:`vector_index_for` the number of entities imported)."""
    from kgdb.engine.neo4j import Neo4jStore
    from kgdb.engine.neo4j_local import USERNAME

    server.heap, server.pagecache = heap or server.heap, pagecache or server.pagecache
    path = Path(path)
    began = time.perf_counter()
    report = ImportReport(str(path), str(server.home))
    seconds = report.seconds
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise LoadError(f"the batch size must be a whole number of at least 1, not {batch_size!r}")
    if write_files is None and not path.is_file():
        raise LoadError(f"{path}: no such triples file")
    state = server.status()
    if state is None and not replace and any(d.exists()
                                             for d in server.database_dirs(DATABASE)):
        state = server.ensure_started(standard_ports=standard_ports)  # only it knows if empty
    ports: tuple[int | None, int | None] = (None, None)
    if state is not None:
        ports = (state.port, state.http_port or None)
        ran_heap, ran_pagecache = server.running_memory(state)
        server.heap = heap or ran_heap or server.heap
        server.pagecache = pagecache or ran_pagecache or server.pagecache
        store = Neo4jStore(state.uri, USERNAME, server.password(), None)
        try:
            nodes, indexes = database_contents(store)
        finally:
            store.close()
        report.replaced_nodes = nodes
        if (nodes or indexes) and not replace:
            raise LoadError(
                f"the Neo4j database of {server.home} holds {nodes:,} nodes and {indexes} "
                "indexes: an import replaces the whole database; add --replace to replace it, "
                "or use kgdb load triples to add to it")
    work_dir = work_dir or server.home / "import"
    work_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="kgdb-import-", dir=work_dir))
    try:
        t = time.perf_counter()
        embed_before = getattr(embedder, "compute_seconds", 0.0)
        if write_files is not None:
            files = write_files(scratch)
        else:
            files = write_import_files(path, embedder, Neo4jDialect(), scratch, fmt=fmt,
                                       sep=sep, on_error=on_error, batch_size=batch_size,
                                       rejects_path=Path(rejects_path) if rejects_path else None,
                                       progress=progress, compress=compress)
        seconds["write_files"] = time.perf_counter() - t
        seconds["embed"] = getattr(embedder, "compute_seconds", 0.0) - embed_before
        loaded = files.report
        report.lines, report.triples, report.rejected = (loaded.lines, loaded.triples,
                                                         loaded.rejected)
        report.rejects_file, report.predicates = loaded.rejects_file, dict(loaded.predicates)
        report.entities, report.relationships = loaded.entities_seen, files.relationships
        report.csv_bytes = files.bytes
        t = time.perf_counter()
        server.stop()
        seconds["stop"] = time.perf_counter() - t
        log_file = server.home / "logs" / "import.log"
        report.log = str(log_file)
        t = time.perf_counter()
        try:
            server.import_full(files.options(), log_file=log_file, echo=echo)
        except KgdbError as exc:
            raise LoadError(f"{exc}; the database {DATABASE} of {server.home} may be empty or "
                            "partly imported and the server is stopped: fix the cause and run "
                            "the import again with --replace") from exc
        seconds["import"] = time.perf_counter() - t
        report.store_bytes = server.database_bytes(DATABASE)["store"]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    t = time.perf_counter()
    state = server.ensure_started(ports[0], http_port=ports[1],
                                  standard_ports=standard_ports and ports[0] is None)
    seconds["start"] = time.perf_counter() - t
    report.uri = state.uri
    t = time.perf_counter()
    store = Neo4jStore(state.uri, USERNAME, server.password(), None)
    options = vector_index or vector_index_for(report.entities)
    report.vector_index = options.to_json()
    try:
        write_schema(store, embedder, files.predicates, entity_vectors=options)
    finally:
        store.close()
    seconds["schema"] = time.perf_counter() - t
    sizes = server.database_bytes(DATABASE)
    report.store_bytes_with_indexes = sizes["store"]
    report.transaction_log_bytes = sizes["transaction_logs"]
    seconds["total"] = time.perf_counter() - began
    return report


def write_schema(store: GraphStore, embedder: Embedder, predicates: list[str], *,
                 entity_vectors: VectorIndexOptions | None = None) -> None:
    """What ``kgdb load triples`` writes besides entities and facts: kgdb's indexes and
    embedding setting, the relation-type catalog (in first-seen order), every index online;
    ``entity_vectors``: how the entities' vector index is built."""
    ensure_base_schema(store, embedder, entity_vectors=entity_vectors)
    if predicates:
        texts = [humanize(p) for p in predicates]
        store.run(catalog.merge_relation_types(
            store.dialect, list(zip(predicates, texts, embedder.embed(texts), strict=True))))
    await_indexes(store)
