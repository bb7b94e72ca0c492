"""``kgdb load``: triples and records into the graph."""

from __future__ import annotations

from pathlib import Path

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.documents import load_documents_cmd
from kgdb.cli.index import index_triples_for, triples_summary
from kgdb.cli.output import emit_json, json_option
from kgdb.cli.records import records_command


@click.group()
def load() -> None:
    """Load data into the graph."""


@load.command("triples")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--sep", default=None, help="Field separator for tsv (default: tab, else '|').")
@click.option("--format", "fmt", type=click.Choice(["tsv", "csv", "jsonl"]), default=None,
              help="Default: from the file extension.")
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True)
@click.option("--rejects", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where --on-error skip writes bad lines (default FILE.rejects).")
@click.option("--batch-size", default=5000, show_default=True, type=click.IntRange(1, 1_000_000))
@click.option("--mode", type=click.Choice(["incremental", "bulk", "auto"]),
              default="incremental", show_default=True,
              help="incremental: batched upserts into any graph, beside other writers; bulk: "
                   "fill an empty graph as its only writer (FalkorDB's bulk insert, CREATE "
                   "batches on Neo4j); auto: bulk when the graph is empty.")
@click.option("--ttr", is_flag=True,
              help="Then give the facts their triple text representations (kgdb index triples).")
@click.option("--no-progress", is_flag=True)
@json_option
@pass_context
def load_triples_cmd(ctx: Context, file: Path, sep: str | None, fmt: str | None, on_error: str,
                     rejects: Path | None, batch_size: int, mode: str, ttr: bool,
                     no_progress: bool, as_json: bool) -> None:
    """Load subject|predicate|object triples (MERGE: loading twice changes nothing)."""
    from kgdb.load.triples import load_triples

    report = load_triples(ctx.store, ctx.embedder, file, fmt=fmt, sep=sep, on_error=on_error,
                          batch_size=batch_size, rejects_path=rejects, progress=not no_progress,
                          mode=mode)
    texts = (index_triples_for(ctx, sorted(report.predicates), progress=not no_progress)
             if ttr else None)
    if as_json:
        emit_json({**report.to_json(), **({"ttr": texts.to_json()} if texts else {})})
        return
    click.echo(f"loaded {report.triples} triples ({len(report.predicates)} predicates), "
               f"{report.entities_seen} entities ({report.entities_written} written) in "
               f"{report.seconds:.1f} s ({report.mode})")
    if report.rejected:
        click.echo(f"rejected {report.rejected} lines -> {report.rejects_file}")
    if texts is not None:
        click.echo(triples_summary(texts))


load.add_command(records_command)
load.add_command(load_documents_cmd)
