"""``kgdb index``: every index the solvers need, in one step (no subcommand), or one of them:
KG-Retriever's document layer (``knn``: SIMILAR edges between documents or chunks and their K
most similar ones), KG-CQR's triple text representations (``triples``), the retrieval graph
of personalized PageRank (``ppr``) and the lexical index over chunks (``fulltext``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from kgdb.cli.context import Context, current_context, pass_context
from kgdb.cli.output import emit_json, json_option, waiting

if TYPE_CHECKING:
    from kgdb.documents.fulltext import FulltextReport
    from kgdb.documents.indexing import IndexStep
    from kgdb.documents.knn import KnnReport
    from kgdb.documents.ppr_graph import GraphReport
    from kgdb.documents.triple_index import TripleIndexReport
    from kgdb.retrieve.readiness import IndexStatus


@click.group("index", invoke_without_command=True)
@click.option("--no-progress", "no_progress_all", is_flag=True,
              help="Without a subcommand: no progress on stderr.")
@json_option
@click.pass_context
def index_group(click_ctx: click.Context, no_progress_all: bool, as_json: bool) -> None:
    """Build derived index structures inside the graph. Without a subcommand: build or
    refresh every index a solver needs that is missing or stale (kgdb stats says which),
    each as its own subcommand would with the options it was last built with; a second run
    writes nothing."""
    if click_ctx.invoked_subcommand is not None:
        if as_json or no_progress_all:
            raise click.UsageError("--json and --no-progress go after the subcommand "
                                   f"(kgdb index {click_ctx.invoked_subcommand} --json)")
        return
    steps = build_all(current_context(), progress=not no_progress_all and not as_json)
    if as_json:
        emit_json({"indexes": [s.to_json() for s in steps]})
        return
    for line in steps_summary(steps):
        click.echo(line)


def build_all(ctx: Context, *, progress: bool = True) -> list[IndexStep]:
    """``kgdb index`` (and ``kgdb load documents --index``): every index a solver needs,
    with one line on stderr as each starts (a spinner on a terminal)."""
    from kgdb.documents.indexing import OWN_PROGRESS, build_indexes, needed_indexes

    names = needed_indexes()
    position = {name: i for i, name in enumerate(names, 1)}
    waits: list[contextlib.ExitStack] = []

    def started(name: str, before: IndexStatus) -> None:
        for wait in waits:
            wait.close()
        waits.clear()
        message = f"[{position[name]}/{len(names)}] {name} ({before.state}: {before.detail})"
        if progress and name in OWN_PROGRESS:
            click.echo(f"{message}...", err=True)  # its bar follows
        elif progress:
            stack = contextlib.ExitStack()
            stack.enter_context(waiting(message))
            waits.append(stack)

    try:
        return build_indexes(ctx.store, ctx.embedder, names, progress=progress,
                             on_step=started)
    finally:
        for wait in waits:
            wait.close()


def steps_summary(steps: Sequence[IndexStep]) -> list[str]:
    """One line per index: what was built, or why it was skipped."""
    lines = []
    for step in steps:
        if step.outcome == "skipped":
            lines.append(f"{step.name}: skipped, {step.reason}")
        elif step.before.state == "ready" and _unchanged(step.report):
            lines.append(f"{step.name}: up to date ({step.before.detail})")
        elif step.name in SUMMARIES:
            lines.append(f"{step.name}: {SUMMARIES[step.name](step.report)}")
        else:
            detail = f" ({step.after.detail})" if step.after else ""
            lines.append(f"{step.name}: built in {step.seconds:.1f} s{detail}")
    return lines


def _unchanged(report: object) -> bool:
    mode = getattr(report, "mode", None)
    if mode is not None:
        return mode == "unchanged"
    return not getattr(report, "written", 0) and not getattr(report, "indexes_created", None) \
        and not getattr(report, "indexes_rebuilt", None)


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
    click.echo(knn_summary(report))


def knn_summary(report: KnnReport) -> str:
    if report.mode == "unchanged":
        return (f"{report.label} layer up to date: {report.nodes} nodes, {report.edges} "
                f"SIMILAR edges (k={report.k}) in {report.seconds:.1f} s")
    how = (f"rebuilt with {report.method} ({report.reason})" if report.mode == "full" else
           f"updated with {report.method}: {report.changed} changed, {report.affected} "
           "affected")
    return (f"{report.label} layer {how}: {report.rewritten} of {report.nodes} nodes "
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
    """Run :func:`kgdb.documents.triple_index.index_triples` on the command's store (the loaders'
    ``--ttr`` option calls it after their load)."""
    from kgdb.documents.triple_index import index_triples

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
    from kgdb.stored.ppr_options import GraphOptions

    report = build_graph(ctx.store, ctx.embedder,
                         GraphOptions(synonym_threshold, not no_gazetteer, not no_titles,
                                      title_weight),
                         full=full)
    if as_json:
        emit_json(report.to_json())
        return
    click.echo(ppr_summary(report))


def ppr_summary(report: GraphReport) -> str:
    total = sum(report.seconds.values())
    line = (f"retrieval graph {report.mode}: {report.chunks} chunks extracted, "
            f"{report.phrases_created} phrases and {report.sentences_created} sentences "
            f"created, {report.phrases_removed} phrases and {report.sentences_removed} "
            f"sentences removed, {report.synonyms} synonym edges written in {total:.1f} s")
    if report.projection:
        p = report.projection
        line += (f"\nstored projection ({p['mode']}): {p['blocks']} of {p['total']} blocks "
                 f"written, {p['edges']} edges, {report.seconds.get('projection', 0):.1f} s")
    return line


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
    click.echo(fulltext_summary(report))


def fulltext_summary(report: FulltextReport) -> str:
    lines = [f"dropped the {dropped} (one full-text index per label on this engine)"
             for dropped in report.dropped]
    total = sum(report.seconds.values())
    what = {"unchanged": "up to date", "created": "created", "rebuilt": "rebuilt"}[report.mode]
    lines.append(f"lexical index {what}: {report.chunks} chunks, {report.titles_written} chunk "
                 f"titles written in {total:.1f} s; scored by {report.scorer.split(':')[0]}")
    return "\n".join(lines)


SUMMARIES: dict[str, Callable[[Any], str]] = {
    "knn": knn_summary, "triples": triples_summary, "ppr": ppr_summary,
    "fulltext": fulltext_summary}
"""The line each subcommand prints, by index name (``kgdb index`` prints the same)."""
