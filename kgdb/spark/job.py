"""``kgdb load documents`` as a PySpark job that writes through the Neo4j Connector for Apache
Spark (docs/spark.md).

The driver reads the files with kgdb's readers (:func:`kgdb.documents.readers.read_documents`:
the same documents, ids and skipped files as the CLI), builds the gazetteer from the graph's
entities, and sends both to the executors (the gazetteer's entries as a broadcast). Each
executor chunks its documents (:func:`kgdb.documents.chunking.chunk_document`), hashes them
as the CLI does, and, for the documents whose hash differs from the stored one, embeds the
chunks and titles with one embedder per Python worker, and finds the gazetteer's names.

The writes go through the connector, in this order, each with idempotent keys (the
connector's ``Overwrite`` mode is a MERGE on ``node.keys`` / the relationship's end keys, then
``SET +=`` of the other columns):

1. ``Document`` nodes (``id``), with ``hash`` and ``chunks`` null: not complete yet;
2. ``Chunk`` nodes (``id``) with their embeddings;
3. ``hasChunk {position}``, partitioned by document: a partition locks only its own documents
   and chunks, so the partitions write in parallel without deadlocks;
4. the title entities (``Entity {id}``, the pipeline's own MERGE: :mod:`kgdb.cypher.spark`);
5. ``supporting_chunks`` (the mutual index) in ONE partition: an entity is mentioned by chunks
   of many partitions, and two transactions that MERGE edges on the same entity and chunk
   nodes in different orders deadlock;
6. the documents' ``hash`` and ``chunks`` (``Document {id}``): the mark that a document is
   complete, written last.

A job that fails anywhere (an executor killed, a partition raising, Neo4j gone) leaves the
hashes unset, so the documents it touched are incomplete in the graph; running it again
removes what the failed run wrote for them (as the CLI replaces a changed document) and
writes them whole. Before the writes the driver removes the previous versions of changed
documents (:func:`kgdb.documents.pipeline._remove`), and after them the orphaned extracted
entities, as ``kgdb load documents`` does. The global steps (``kgdb index``) stay in the
database and run after the job.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgdb.cypher import documents as cy
from kgdb.cypher.spark import title_entities_query
from kgdb.documents.chunking import chunk_document
from kgdb.documents.pipeline import (
    ON_ERROR,
    DocumentOptions,
    DocumentReport,
    _hash,
    _remove,
    chunk_title,
    embedding_text,
)
from kgdb.documents.readers import read_documents
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.errors import LoadError
from kgdb.link.gazetteer import name_entries
from kgdb.schema.apply import ensure_base_schema
from kgdb.vocabulary import CHUNK, DOCUMENT, ENTITY, HAS_CHUNK, SUPPORTING_CHUNKS

if TYPE_CHECKING:
    from kgdb.documents.model import Chunk, Document

CONNECTOR_VERSION = "5.0.3_for_spark_3"
"""The newest ``_for_spark_3`` release Maven Central serves here (docs/spark.md: 5.1+ where
your repository has it; the options used are the same)."""
CONNECTOR = f"org.neo4j:neo4j-connector-apache-spark_2.12:{CONNECTOR_VERSION}"
"""The connector's Maven coordinates for Spark 3 with Scala 2.12 (PyPI's pyspark 3.5)."""
FORMAT = "org.neo4j.spark.DataSource"
WRITES = ("documents", "chunks", "hasChunk", "entities", "mentions", "hashes")
"""The job's writes, in order (``fail_after`` names one of them)."""
EMBED_BATCH = 512
"""Texts an executor embeds per call (its memory stays bounded on a large partition)."""


@dataclass
class SparkLoadReport:
    documents: int = 0
    unchanged: int = 0
    written: int = 0
    chunks: int = 0
    mentions: int = 0
    title_entities: int = 0
    entities_removed: int = 0
    facts_removed: int = 0
    partitions: int = 0
    master: str = ""
    seconds: float = 0.0
    prepare_seconds: float = 0.0
    """Of ``seconds``: chunking, extraction and embedding in the executors."""
    write_seconds: dict[str, float] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


# ------------------------------------------------------------------------------ the session

def _maven_repository() -> Path:
    return Path.home() / ".m2" / "repository"


def connector_jar() -> Path | None:
    """The connector's jar in the local Maven repository (``mvn dependency:get``), if there."""
    group = _maven_repository() / "org" / "neo4j"
    name = f"neo4j-connector-apache-spark_2.12-{CONNECTOR_VERSION}.jar"
    path = group / "neo4j-connector-apache-spark_2.12" / CONNECTOR_VERSION / name
    return path if path.is_file() else None


def fetch_connector_jar() -> Path | None:
    """The connector's jar, fetched into ``~/.m2`` with Maven where it is not there yet (its
    jar alone: it carries its own Neo4j driver); None without ``mvn`` or when Maven fails."""
    found = connector_jar()
    if found is not None or shutil.which("mvn") is None:
        return found
    try:
        subprocess.run(["mvn", "-q", "-B", "dependency:get", f"-Dartifact={CONNECTOR}",
                        "-Dtransitive=false", f"-Dmaven.repo.local={_maven_repository()}"],
                       capture_output=True, timeout=600, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return connector_jar()


def spark_session(master: str = "local[1]", *, jar: str | None = None,
                  app: str = "kgdb spark load-documents") -> Any:
    """A SparkSession with the connector: ``jar`` (or ``KGDB_SPARK_CONNECTOR_JAR``, or the jar
    in ``~/.m2``, fetched there with Maven if need be), else ``spark.jars.packages`` (Ivy
    fetches it with its dependencies: 5.0.3's ``_common`` module is not on Central). An
    active session (a Databricks notebook's) is returned as it is; under spark-submit, its
    ``--master`` and its ``--packages`` / ``--jars`` naming the connector win."""
    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise LoadError("kgdb spark needs PySpark: pip install 'kgdb[spark]'") from exc
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit started this process and its JVM
        SparkContext._ensure_initialized()  # so SparkConf() reads spark-submit's settings
    given = SparkConf()
    builder = SparkSession.builder.appName(app).config("spark.ui.enabled", "false") \
        .config("spark.ui.showConsoleProgress", "false") \
        .config("spark.sql.shuffle.partitions", "4")
    if not given.contains("spark.master"):
        builder = builder.master(master)
    effective = str(given.get("spark.master", master))
    named = " ".join(str(given.get(k, "")) for k in ("spark.jars", "spark.jars.packages"))
    if "neo4j-connector-apache-spark" not in named:
        found = jar or os.environ.get("KGDB_SPARK_CONNECTOR_JAR") or fetch_connector_jar()
        if found:
            builder = builder.config("spark.jars", str(found))
        else:
            builder = builder.config("spark.jars.packages", CONNECTOR)
    if effective.startswith("local"):
        # local workers run this interpreter and import this kgdb (a cluster installs the
        # wheel on its nodes: docs/spark.md); PySpark reads PYSPARK_PYTHON from the
        # environment, not from spark.pyspark.python
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        root = str(Path(__file__).resolve().parents[2])
        builder = builder.config("spark.executorEnv.PYTHONPATH", root)
    return builder.getOrCreate()


# ------------------------------------------------------------------------------ executors

_EXECUTOR: dict[str, Any] = {}
"""Per Python worker: the embedder and the gazetteer, built once (workers are reused)."""


def _embedder(model: str | None) -> Embedder:
    key = f"embedder:{model}"
    if key not in _EXECUTOR:
        from kgdb.embed.models import inner_embedder

        _EXECUTOR[key] = inner_embedder(model)
    embedder: Embedder = _EXECUTOR[key]
    return embedder


def _gazetteer(job: str, entries: Any, options: DocumentOptions) -> Any:
    key = f"gazetteer:{job}"
    if key not in _EXECUTOR:
        from kgdb.documents.gazetteer import Gazetteer

        for old in [k for k in _EXECUTOR if k.startswith("gazetteer:")]:
            del _EXECUTOR[old]  # one job's gazetteer at a time
        _EXECUTOR[key] = Gazetteer(entries.value, ignore_case=options.ignore_case,
                                   min_length=options.min_length)
    return _EXECUTOR[key]


def _chunked(document: Document, options: DocumentOptions,
             fingerprint: dict[str, Any]) -> tuple[Document, list[Chunk], str]:
    chunks = chunk_document(document, options.chunk_size)
    return document, chunks, _hash(document, chunks, fingerprint)


def _embed(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    out: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        out += [[float(x) for x in row] for row in
                embedder.embed(list(texts[start:start + EMBED_BATCH]))]
    return out


def _prepare(items: Iterable[tuple[Document, list[Chunk], str]], options: DocumentOptions,
             model: str | None, job: str, entries: Any) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """One partition's rows, tagged with the write they belong to."""
    items = list(items)
    embedder = _embedder(model)
    pairs = [(doc, c) for doc, chunks, _ in items for c in chunks]
    vectors = _embed(embedder, [embedding_text(doc, c) for doc, c in pairs])
    for doc, chunks, digest in items:
        yield "documents", (doc.id, doc.title, doc.source, doc.meta.get("format", ""))
        yield "hashes", (doc.id, digest, len(chunks))
    for (doc, c), vector in zip(pairs, vectors, strict=True):
        yield "chunks", (c.id, c.document_id, c.position, c.text, list(c.headings),
                         chunk_title(doc, c), vector, c.source, list(c.pages) or None)
        yield "hasChunk", (c.document_id, c.id, c.position)
    mentions: list[tuple[str, str]] = []
    if options.title_entity:
        titles = list(dict.fromkeys(doc.title for doc, _, _ in items))
        for title, vector in zip(titles, _embed(embedder, titles), strict=True):
            yield "entities", (title, title, None, [], vector)
        mentions += [(doc.title, c.id) for doc, c in pairs]
    if options.extract == "gazetteer":
        gazetteer = _gazetteer(job, entries, options)
        mentions += [(e.id, x.chunk_id) for x in gazetteer.extract([c for _, c in pairs])
                     for e in x.entities if e.id]
    for entity, chunk in dict.fromkeys(mentions):
        yield "mentions", (entity, chunk)


class _FailAfter:
    """A fault for tests of a failed write: the partition raises after ``rows`` rows."""

    def __init__(self, rows: int) -> None:
        self.rows = rows

    def __call__(self, index: int, rows: Iterable[Any]) -> Iterator[Any]:
        for i, row in enumerate(rows):
            if index == 0 and i == self.rows:
                raise RuntimeError(f"injected failure in partition {index} after {i} rows")
            yield row


# ------------------------------------------------------------------------------ the driver

def _schemas() -> dict[str, Any]:
    from pyspark.sql.types import (
        ArrayType,
        DoubleType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    def schema(*fields: tuple[str, Any]) -> Any:
        return StructType([StructField(name, kind, True) for name, kind in fields])

    vector = ArrayType(DoubleType(), False)
    return {
        "documents": schema(("id", StringType()), ("title", StringType()),
                            ("source", StringType()), ("format", StringType())),
        "hashes": schema(("id", StringType()), ("hash", StringType()), ("chunks", LongType())),
        "chunks": schema(("id", StringType()), ("document", StringType()),
                         ("position", LongType()), ("text", StringType()),
                         ("headings", ArrayType(StringType(), False)), ("title", StringType()),
                         ("embedding", vector), ("source", StringType()),
                         ("pages", ArrayType(LongType(), False))),
        "hasChunk": schema(("document", StringType()), ("chunk", StringType()),
                           ("position", LongType())),
        "entities": schema(("id", StringType()), ("name", StringType()),
                           ("description", StringType()),
                           ("synonyms", ArrayType(StringType(), False)), ("embedding", vector)),
        "mentions": schema(("entity", StringType()), ("chunk", StringType())),
    }


def _write_options(store: GraphStore, batch_size: int) -> dict[str, dict[str, str]]:
    def rel(rel_type: str, source: tuple[str, str], target: tuple[str, str],
            properties: str = "") -> dict[str, str]:
        out = {"relationship": rel_type, "relationship.save.strategy": "keys",
               "relationship.source.labels": f":{source[0]}",
               "relationship.source.save.mode": "Match",
               "relationship.source.node.keys": source[1],
               "relationship.target.labels": f":{target[0]}",
               "relationship.target.save.mode": "Match",
               "relationship.target.node.keys": target[1]}
        if properties:
            out["relationship.properties"] = properties
        return out

    uri = getattr(store, "uri", "")
    base = {"url": uri, "authentication.type": "basic",
            "authentication.basic.username": getattr(store, "username", "neo4j"),
            "authentication.basic.password": getattr(store, "password", None) or "",
            "batch.size": str(batch_size)}
    database = getattr(store, "database", None)
    if database:
        base["database"] = str(database)
    options = {
        "documents": {"labels": f":{DOCUMENT}", "node.keys": "id"},
        "chunks": {"labels": f":{CHUNK}", "node.keys": "id"},
        "hasChunk": rel(HAS_CHUNK, (DOCUMENT, "document:id"), (CHUNK, "chunk:id"), "position"),
        "entities": {"query": title_entities_query(store.dialect)},
        "mentions": rel(SUPPORTING_CHUNKS, (ENTITY, "entity:id"), (CHUNK, "chunk:id")),
        "hashes": {"labels": f":{DOCUMENT}", "node.keys": "id"},
    }
    return {name: {**base, **extra} for name, extra in options.items()}


def _spark_error(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    causes = [line for line in lines if "Exception:" in line or "Error:" in line]
    return (causes[-1] if causes else lines[0] if lines else type(exc).__name__)[:300]


def load_documents_spark(spark: Any, store: GraphStore, embedder: Embedder,
                         paths: Iterable[str | Path], *,
                         options: DocumentOptions | None = None, partitions: int | None = None,
                         batch_size: int = 1000, on_error: str = "skip",
                         model: str | None = None,
                         fail_after: tuple[str, int] | None = None) -> SparkLoadReport:
    """Load the documents of ``paths`` into ``store`` (a Neo4j) with the Spark session
    ``spark`` (module docstring). ``embedder`` is the driver's (the schema's dimension);
    the executors embed with ``model`` (default ``KGDB_EMBED_MODEL``). ``partitions``: of the
    documents (default: Spark's parallelism). ``batch_size``: rows per connector
    transaction. ``fail_after`` (tests): the write named (:data:`WRITES`) fails in its
    first partition after that many rows."""
    t0 = time.perf_counter()
    options = options or DocumentOptions()
    if store.dialect.NAME != "neo4j":
        raise LoadError("kgdb spark writes through the Neo4j Connector for Apache Spark: point "
                        "KGDB_URI at a Neo4j (bolt://... or neo4j://...)")
    if options.extract not in ("none", "gazetteer"):
        raise LoadError(f"kgdb spark load-documents extracts with none or gazetteer, not "
                        f"{options.extract!r} (use kgdb load documents for --extract llm)")
    if options.mention_facts:
        raise LoadError("kgdb spark load-documents has no --mention-facts yet (use kgdb load "
                        "documents)")
    if on_error not in ON_ERROR:
        raise LoadError(f"unknown on_error {on_error!r}; choose one of {', '.join(ON_ERROR)}")
    if fail_after is not None and fail_after[0] not in WRITES:
        raise LoadError(f"unknown write {fail_after[0]!r}; choose one of {', '.join(WRITES)}")
    from pyspark import StorageLevel

    skipped: list[LoadError] | None = [] if on_error == "skip" else None
    documents = read_documents(paths, skipped=skipped, max_bytes=options.max_document_bytes)
    sc = spark.sparkContext
    report = SparkLoadReport(documents=len(documents), master=str(sc.master),
                             skipped=[str(e) for e in skipped or []])
    if not documents:
        report.seconds = round(time.perf_counter() - t0, 3)
        return report
    ensure_base_schema(store, embedder)
    entries: list[tuple[str, str, list[str]]] = []
    if options.extract == "gazetteer":
        entries = name_entries(store)
        if options.title_entity:  # the titles this load makes entities are found too
            entries += [(d.title, d.title, []) for d in documents]
    fingerprint = options.fingerprint(None)
    report.partitions = max(1, min(partitions or sc.defaultParallelism, len(documents)))
    chunked = sc.parallelize(documents, report.partitions) \
        .map(lambda d: _chunked(d, options, fingerprint)).persist(StorageLevel.MEMORY_AND_DISK)
    rows: Any = None
    try:
        hashes = dict(chunked.map(lambda t: (t[0].id, t[2])).collect())
        stored: dict[str, Any] = {}
        ids = list(hashes)
        for start in range(0, len(ids), 1000):
            for row in store.run(cy.document_states(ids[start:start + 1000])).records():
                stored[str(row["id"])] = row["hash"]
        todo = {i for i, h in hashes.items() if stored.get(i) != h}
        report.unchanged = len(hashes) - len(todo)
        report.written = len(todo)
        if not todo:
            report.seconds = round(time.perf_counter() - t0, 3)
            return report
        removed = DocumentReport()
        replaced = sorted(i for i in todo if i in stored)  # changed or left incomplete
        for start in range(0, len(replaced), options.batch):
            _remove(store, replaced[start:start + options.batch], removed)
        report.facts_removed = removed.facts_removed
        todo_ids = sc.broadcast(todo)
        job = uuid.uuid4().hex
        gazetteer = sc.broadcast(entries)
        rows = chunked.filter(lambda t: t[0].id in todo_ids.value) \
            .mapPartitions(lambda items: _prepare(items, options, model, job, gazetteer)) \
            .persist(StorageLevel.MEMORY_AND_DISK)
        t1 = time.perf_counter()
        counts = rows.map(lambda r: r[0]).countByValue()  # embeds once, before any write
        report.prepare_seconds = round(time.perf_counter() - t1, 3)
        report.chunks, report.mentions = counts.get("chunks", 0), counts.get("mentions", 0)
        schemas = _schemas()
        writes = _write_options(store, batch_size)
        for name in WRITES:
            part = rows.filter(lambda r, n=name: r[0] == n).map(lambda r: r[1])
            if name == "entities":  # one row per title, however many partitions named it
                part = part.keyBy(lambda r: r[0]).reduceByKey(lambda a, _: a).values()
            if name == "mentions":
                part = part.coalesce(1)  # no two transactions lock the same entity
            if fail_after is not None and fail_after[0] == name:
                part = part.mapPartitionsWithIndex(_FailAfter(fail_after[1]))
            frame = spark.createDataFrame(part, schemas[name])
            t1 = time.perf_counter()
            try:
                frame.write.format(FORMAT).mode("Overwrite").options(**writes[name]).save()
            except Exception as exc:  # py4j's Py4JJavaError: the job failed
                raise LoadError(
                    f"the Spark job failed writing {name}: {_spark_error(exc)}; the documents "
                    "it was loading are marked incomplete: run it again to finish the "
                    "load") from exc
            report.write_seconds[name] = round(time.perf_counter() - t1, 3)
        report.title_entities = counts.get("entities", 0)
        report.entities_removed = int(store.run(cy.delete_orphan_entities()).records()[0]
                                      ["deleted"])
        store.run(cy.delete_orphan_concepts())
    finally:
        chunked.unpersist()
        if rows is not None:
            rows.unpersist()
    report.seconds = round(time.perf_counter() - t0, 3)
    return report
