"""``kgdb index knn``: KG-Retriever's document layer, SIMILAR edges between documents (or
chunks) and their K most similar ones."""

from __future__ import annotations

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.output import emit_json, json_option


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
