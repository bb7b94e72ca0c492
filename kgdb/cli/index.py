"""``kgdb index``: KG-Retriever's document layer (``knn``: SIMILAR edges between documents or
chunks and their K most similar ones), KG-CQR's triple text representations (``triples``),
the retrieval graph of ``ppr`` (``ppr``) and the lexical index over chunks (``fulltext``)."""

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


@index_group.command("ppr")
@click.option("--synonym-threshold", default=0.8, show_default=True,
              type=click.FloatRange(0.0, 1.0, min_open=True),
              help="Cosine of two phrases' name embeddings from which they get a synonym "
                   "edge (HippoRAG 2: 0.8).")
@click.option("--no-gazetteer", is_flag=True,
              help="Phrases only from the text's spans, not also the graph's entity names.")
@click.option("--no-titles", is_flag=True,
              help="Do not make a chunk's document title one of its phrases.")
@click.option("--title-weight", default=20.0, show_default=True,
              type=click.FloatRange(0.0, 1000.0, min_open=True),
              help="Weight of the edges between a document's title phrase and its chunks "
                   "(1: HippoRAG 2's uniform edges).")
@click.option("--full", is_flag=True, help="Rebuild from scratch instead of updating.")
@json_option
@pass_context
def ppr_command(ctx: Context, synonym_threshold: float, no_gazetteer: bool, no_titles: bool,
                title_weight: float, full: bool, as_json: bool) -> None:
    """Build or update the retrieval graph of `--mode ppr` (personalized PageRank): phrases
    the chunks name, sentences, synonym edges, and the stored projection. A re-run extracts
    only new chunks, removes what deleted ones left, and rewrites only the projection's
    blocks that changed."""
    from kgdb.documents.ppr_graph import build_graph
    from kgdb.link.ppr_options import GraphOptions

    report = build_graph(ctx.store, ctx.embedder,
                         GraphOptions(synonym_threshold, not no_gazetteer, not no_titles,
                                      title_weight),
                         full=full)
    if as_json:
        emit_json(report.to_json())
        return
    total = sum(report.seconds.values())
    click.echo(f"retrieval graph {report.mode}: {report.chunks} chunks extracted, "
               f"{report.phrases_created} phrases and {report.sentences_created} sentences "
               f"created, {report.phrases_removed} phrases and {report.sentences_removed} "
               f"sentences removed, {report.synonyms} synonym edges written in {total:.1f} s")
    if report.projection:
        p = report.projection
        click.echo(f"stored projection ({p['mode']}): {p['blocks']} of {p['total']} blocks "
                   f"written, {p['edges']} edges, {report.seconds.get('projection', 0):.1f} s")


@index_group.command("fulltext")
@click.option("--full", is_flag=True, help="Drop and create the index again.")
@json_option
@pass_context
def fulltext_command(ctx: Context, full: bool, as_json: bool) -> None:
    """Build the lexical index of `--solver keyword` (and of the lexical parts of hybrid and
    ppr): a full-text index over the chunks' text and their document's title, English
    stemming and stop words. The engines keep it current as chunks are loaded or deleted; a
    re-run writes only the titles of chunks loaded before it."""
    from kgdb.documents.fulltext import build_fulltext

    report = build_fulltext(ctx.store, full=full)
    if as_json:
        emit_json(report.to_json())
        return
    for dropped in report.dropped:
        click.echo(f"dropped the {dropped} (one full-text index per label on this engine)")
    total = sum(report.seconds.values())
    what = {"unchanged": "up to date", "created": "created", "rebuilt": "rebuilt"}[report.mode]
    click.echo(f"lexical index {what}: {report.chunks} chunks, {report.titles_written} chunk "
               f"titles written in {total:.1f} s; scored by {report.scorer.split(':')[0]}")
