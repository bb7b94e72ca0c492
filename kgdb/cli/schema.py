"""``kgdb schema``: check, print DDL, apply."""

from __future__ import annotations

from pathlib import Path

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.output import emit_json, json_option


@click.group()
def schema() -> None:
    """SPG-style schemas: check, print DDL, apply."""


@schema.command("apply")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@json_option
@pass_context
def schema_apply(ctx: Context, file: Path, as_json: bool) -> None:
    """Create the catalog, constraints and indexes of FILE (idempotent)."""
    from kgdb.schema import apply_schema, parse_schema_file

    parsed = parse_schema_file(file)
    report = apply_schema(ctx.store, parsed, ctx.embedder)
    if as_json:
        emit_json(report.to_json())
        return
    for line in report.created:
        click.echo(f"created {line}")
    for note in report.notes:
        click.echo(f"note: {note}")
    click.echo(f"{len(report.created)} created, {len(report.existing)} already present; "
               f"{report.entity_types} types, {report.relation_types} relation types, "
               f"{report.concepts} concepts")


@schema.command("reindex")
@json_option
@pass_context
def schema_reindex(ctx: Context, as_json: bool) -> None:
    """Rebuild the vector indexes (after many updates of embedded nodes on FalkorDB; on
    Neo4j after a load in many batches: fewer Lucene segments to search)."""
    from kgdb.schema.apply import rebuild_vector_indexes

    rebuilt = rebuild_vector_indexes(ctx.store)
    if as_json:
        emit_json({"rebuilt": rebuilt})
    else:
        click.echo(f"rebuilt {len(rebuilt)} vector indexes: {', '.join(rebuilt) or '-'}")


@schema.command("ddl")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--dialect", "dialect_name", default="neo4j", show_default=True)
@click.option("--dimension", default=384, show_default=True, help="Embedding dimension.")
def schema_ddl(file: Path | None, dialect_name: str, dimension: int) -> None:
    """Print the DDL a schema needs, for one dialect, without a database."""
    from kgdb.schema import Schema, parse_schema_file
    from kgdb.schema.export import schema_ddl as ddl

    parsed = parse_schema_file(file) if file else Schema(source="<built-in>")
    click.echo(ddl(parsed, dialect_name, dimension), nl=False)
