"""``kgdb index``: KG-Retriever's document layer (``knn``: SIMILAR edges between documents or
chunks and their K most similar ones) and KG-CQR's triple text representations
(``triples``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.output import emit_json, json_option

if TYPE_CHECKING:
    from kgdb.documents.ttr import TripleIndexReport


@click.group("index")
def index_group() -> None:
    """Build derived index structures inside the graph."""


@index_group.command("knn")
@click.option("--label", default="Document", show_default=True,
              help="Document or Chunk: whose K nearest neighbours to link.")
@click.option("--k", "k", default=3, show_default=True, type=click.IntRange(1, 1000),
              help="Neighbours per node (KG-Retriever uses 3 for MuSiQue).")
@click.option("--method", type=click.Choice(["auto", "gds", "vector"]), default="auto",
              show_default=True,
              help="gds: Neo4j Graph Data Science's gds.knn; vector: the vector index; auto: "
                   "gds where it is installed. Updates after a change use the vector index.")
@click.option("--full", is_flag=True, help="Rebuild from scratch instead of updating.")
@click.option("--batch", default=200, show_default=True, type=click.IntRange(1, 100_000),
              help="Nodes per statement.")
@json_option
@pass_context
def knn_command(ctx: Context, label: str, k: int, method: str, full: bool, batch: int,
                as_json: bool) -> None:
    """Link each node of LABEL to its K most similar nodes of LABEL by cosine similarity:
    (a)-[:SIMILAR {score}]->(b). A re-run rewrites only what changed."""
    from kgdb.documents.knn import build_knn

    report = build_knn(ctx.store, label=label, k=k, method=method, full=full, batch=batch)
    if as_json:
        emit_json(report.to_json())
        return
    for note in report.notes:
        click.echo(f"note: {note}")
    if report.mode == "unchanged":
        click.echo(f"{report.label} layer up to date: {report.nodes} nodes, {report.edges} "
                   f"SIMILAR edges (k={report.k}) in {report.seconds:.1f} s")
        return
    how = (f"rebuilt with {report.method} ({report.reason})" if report.mode == "full" else
           f"updated with {report.method}: {report.changed} changed, {report.affected} "
           "affected")
    click.echo(f"{report.label} layer {how}: {report.rewritten} of {report.nodes} nodes "
               f"rewritten, {report.edges} SIMILAR edges (k={report.k}) in "
               f"{report.seconds:.1f} s")


@index_group.command("triples")
@click.option("--type", "types", multiple=True, metavar="TYPE",
              help="Only facts of this relation type (repeatable; default all).")
@click.option("--batch", default=1000, show_default=True, type=click.IntRange(1, 100_000),
              help="Facts per statement.")
@click.option("--no-progress", is_flag=True)
@json_option
@pass_context
def triples_command(ctx: Context, types: tuple[str, ...], batch: int, no_progress: bool,
                    as_json: bool) -> None:
    """Give every fact its triple text representation (KG-CQR): a text verbalised from its
    head, relation and tail names and its embedding, under a relationship vector index per
    relation type. A re-run writes only new or renamed facts."""
    report = index_triples_for(ctx, types or None, batch=batch, progress=not no_progress)
    if as_json:
        emit_json(report.to_json())
        return
    click.echo(triples_summary(report))


def index_triples_for(ctx: Context, types: Sequence[str] | None = None, *, batch: int = 1000,
                      progress: bool = True) -> TripleIndexReport:
    """Run :func:`kgdb.documents.ttr.index_triples` on the command's store (the loaders'
    ``--ttr`` option calls it after their load)."""
    from kgdb.documents.ttr import index_triples

    return index_triples(ctx.store, ctx.embedder, types=types, batch=batch, progress=progress)


def triples_summary(report: TripleIndexReport) -> str:
    created = (f"; vector index created for {', '.join(report.indexes_created)}"
               if report.indexes_created else "")
    rebuilt = (f"; rebuilt for {', '.join(report.indexes_rebuilt)}"
               if report.indexes_rebuilt else "")
    rate = report.written / report.seconds if report.seconds else 0.0
    return (f"triple texts: {report.written} written ({rate:.0f}/s), {report.unchanged} "
            f"unchanged, {report.facts} facts of {report.types} relation types in "
            f"{report.seconds:.1f} s{created}{rebuilt}")
