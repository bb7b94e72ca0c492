"""``kgdb spark load-documents``: the document pipeline as a PySpark job writing into Neo4j
through the Neo4j Connector for Apache Spark (kgdb/spark/, docs/spark.md)."""

from __future__ import annotations

from pathlib import Path

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.index import build_all, steps_summary
from kgdb.cli.output import emit_json, json_option


@click.group("spark")
def spark_group() -> None:
    """Load with Apache Spark into Neo4j (needs the optional extra: pip install 'kgdb[spark]')."""


@spark_group.command("load-documents")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--master", default="local[*]", show_default=True,
              help="Spark master when no session exists yet (spark-submit's --master wins).")
@click.option("--partitions", type=click.IntRange(1, 1_000_000), default=None,
              help="Partitions of the documents (default: Spark's parallelism).")
@click.option("--connector-jar", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The connector's jar (default: KGDB_SPARK_CONNECTOR_JAR, the jar in ~/.m2, "
                   "else spark.jars.packages fetches it).")
@click.option("--batch-size", default=1000, show_default=True, type=click.IntRange(1, 100_000),
              help="Rows per connector transaction.")
@click.option("--extract", type=click.Choice(["none", "gazetteer"]), default="none",
              show_default=True,
              help="none: chunks only; gazetteer: link chunks to the graph's entities by name.")
@click.option("--chunk-size", default=1200, show_default=True, type=click.IntRange(100, 100_000),
              help="Largest chunk, in characters.")
@click.option("--title-entity", is_flag=True,
              help="Make each document's title an entity supported by all its chunks.")
@click.option("--ignore-case", is_flag=True, help="gazetteer: match names in any case.")
@click.option("--min-name-length", default=3, show_default=True, type=click.IntRange(1, 1000),
              help="gazetteer: shortest name that is matched.")
@click.option("--on-error", type=click.Choice(["skip", "fail"]), default="skip",
              show_default=True,
              help="A file that cannot be read: skip it (one line each) or load nothing.")
@click.option("--max-size-mb", default=200, show_default=True, type=click.IntRange(1, 1 << 20),
              help="Largest PDF, HTML, DOCX or ODT file read, in MiB.")
@click.option("--index", "build_index", is_flag=True,
              help="Then build or refresh every index the solvers need (kgdb index).")
@json_option
@pass_context
def spark_load_documents_cmd(ctx: Context, paths: tuple[Path, ...], master: str,
                             partitions: int | None, connector_jar: Path | None,
                             batch_size: int, extract: str, chunk_size: int,
                             title_entity: bool, ignore_case: bool, min_name_length: int,
                             on_error: str, max_size_mb: int, build_index: bool,
                             as_json: bool) -> None:
    """The graph `kgdb load documents` writes (documents, chunks, embeddings, title entities,
    the mutual index), computed by a Spark job and written through the Neo4j connector with
    idempotent keys: a second run changes nothing, a run after a failed one finishes it."""
    from kgdb.documents.pipeline import DocumentOptions
    from kgdb.errors import LoadError
    from kgdb.spark.job import load_documents_spark, spark_session

    if ctx.settings.embedded:  # before the embedded FalkorDB would start
        raise LoadError("kgdb spark writes through the Neo4j Connector for Apache Spark: "
                        "point KGDB_URI at a Neo4j (bolt://... or neo4j://...)")
    options = DocumentOptions(extract=extract, chunk_size=chunk_size, title_entity=title_entity,
                              ignore_case=ignore_case, min_length=min_name_length,
                              max_document_bytes=max_size_mb << 20)
    store = ctx.store
    spark = spark_session(master, jar=str(connector_jar) if connector_jar else None)
    report = load_documents_spark(spark, store, ctx.embedder, paths, options=options,
                                  partitions=partitions, batch_size=batch_size,
                                  on_error=on_error)
    for line in report.skipped:
        click.echo(f"kgdb: skipped {line}", err=True)
    steps = build_all(ctx, progress=not as_json) if build_index else None
    if as_json:
        emit_json({**report.to_json(),
                   **({"indexes": [s.to_json() for s in steps]} if steps is not None else {})})
        return
    rate = report.chunks / report.seconds if report.seconds else 0.0
    skipped = f", {len(report.skipped)} skipped" if report.skipped else ""
    click.echo(f"{report.documents} documents: {report.written} written, {report.unchanged} "
               f"unchanged{skipped}; {report.chunks} chunks ({rate:.0f}/s), {report.mentions} "
               f"mentions on {report.master} in {report.partitions} partition(s), "
               f"{report.seconds:.1f} s")
    for line in steps_summary(steps or []):
        click.echo(line)
    if steps is None and report.written:
        click.echo("next: kgdb index (the global steps run in the database)")
