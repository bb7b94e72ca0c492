"""``kgdb load documents`` and ``kgdb delete document``: documents into the graph and out."""

from __future__ import annotations

from pathlib import Path

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.index import build_all, index_triples_for, steps_summary, triples_summary
from kgdb.cli.output import emit_json, json_option


@click.command("documents")
@click.argument("paths", nargs=-1, required=True,
                type=click.Path(path_type=Path))
@click.option("--extract", type=click.Choice(["none", "gazetteer", "llm"]), default="none",
              show_default=True,
              help="none: chunks only; gazetteer: link chunks to the graph's entities by name "
                   "(no model); llm: extract entities, relations and events with the LLM.")
@click.option("--chunk-size", default=1200, show_default=True, type=click.IntRange(100, 100_000),
              help="Largest chunk, in characters.")
@click.option("--title-entity", is_flag=True,
              help="Make each document's title an entity supported by all its chunks.")
@click.option("--mention-facts", is_flag=True,
              help="gazetteer with --title-entity: a fact (title)-[:mentions]->(entity) for each "
                   "entity a document's chunks name, supported by those chunks.")
@click.option("--ignore-case", is_flag=True, help="gazetteer: match names in any case.")
@click.option("--min-name-length", default=3, show_default=True, type=click.IntRange(1, 1000),
              help="gazetteer: shortest name that is matched.")
@click.option("--fuse-similarity", default=0.95, show_default=True,
              type=click.FloatRange(0.0, 1.0),
              help="llm: cosine similarity of name embeddings above which new entities of one "
                   "type are fused (1 turns fusion by meaning off).")
@click.option("--batch", default=32, show_default=True, type=click.IntRange(1, 100_000),
              help="Documents written per round of statements.")
@click.option("--dry-run", is_flag=True,
              help="Write nothing: say how many documents and chunks a load would write and how "
                   "many LLM requests it would make.")
@click.option("--on-error", type=click.Choice(["skip", "fail"]), default="skip",
              show_default=True,
              help="A file that cannot be read (corrupt, encrypted, too large, a scan without "
                   "text): skip: say so in one line and load the other files; fail: load "
                   "nothing.")
@click.option("--max-size-mb", default=200, show_default=True, type=click.IntRange(1, 1 << 20),
              help="Largest PDF, HTML, DOCX or ODT file read, in MiB.")
@click.option("--ttr", is_flag=True,
              help="Then give the facts their triple text representations (kgdb index triples).")
@click.option("--index", "build_index", is_flag=True,
              help="Then build or refresh every index the solvers need (kgdb index).")
@click.option("--no-progress", is_flag=True)
@json_option
@pass_context
def load_documents_cmd(ctx: Context, paths: tuple[Path, ...], extract: str, chunk_size: int,
                       title_entity: bool, mention_facts: bool, ignore_case: bool,
                       min_name_length: int, fuse_similarity: float, batch: int, dry_run: bool,
                       on_error: str, max_size_mb: int, ttr: bool, build_index: bool,
                       no_progress: bool, as_json: bool) -> None:
    """Load PDF, HTML, DOCX, ODT, text and Markdown files and JSON/JSONL corpora as
    documents, chunks and the mutual index (a changed document replaces its old version; an
    unchanged one writes nothing). Each passage of a PDF, HTML, DOCX or ODT file knows its
    source: the file and its page or section."""
    from kgdb.documents.align import AlignSettings
    from kgdb.documents.pipeline import DocumentOptions, load_documents

    if mention_facts and (extract != "gazetteer" or not title_entity):
        from kgdb.errors import LoadError

        raise LoadError("--mention-facts needs --extract gazetteer and --title-entity")
    options = DocumentOptions(extract=extract, chunk_size=chunk_size, title_entity=title_entity,
                              mention_facts=mention_facts, ignore_case=ignore_case,
                              min_length=min_name_length, batch=batch,
                              align=AlignSettings(similarity=fuse_similarity),
                              max_document_bytes=max_size_mb << 20)
    extractor = _llm_extractor(ctx) if extract == "llm" else None
    report = load_documents(ctx.store, ctx.embedder, paths, options=options,
                            extractor=extractor, progress=not no_progress, dry_run=dry_run,
                            on_error=on_error)
    for line in report.skipped:  # on stderr, also with --json: stdout stays one JSON value
        click.echo(f"kgdb: skipped {line}", err=True)
    texts = (index_triples_for(ctx, progress=not no_progress) if ttr and not dry_run
             else None)
    steps = build_all(ctx, progress=not no_progress and not as_json) \
        if build_index and not dry_run else None
    if as_json:
        emit_json({**report.to_json(), **({"ttr": texts.to_json()} if texts else {}),
                   **({"indexes": [s.to_json() for s in steps]} if steps is not None else {})})
        return
    if dry_run:
        requests = ("" if report.requests_needed is None else
                    f", {report.requests_needed} LLM requests (the rest is cached)")
        click.echo(f"dry run: {report.written} of {report.documents} documents would be written "
                   f"({report.chunks} chunks){requests}; nothing was written")
        return
    rate = report.chunks / report.seconds if report.seconds else 0.0
    pages = f" ({report.pages} PDF pages)" if report.pages else ""
    skipped = f", {len(report.skipped)} skipped" if report.skipped else ""
    click.echo(f"{report.documents} documents{pages}: {report.written} written, "
               f"{report.unchanged} unchanged{skipped}; {report.chunks} chunks ({rate:.0f}/s), "
               f"{report.mentions} mentions, {report.facts} facts in {report.seconds:.1f} s")
    if extract == "llm":
        x = report.extraction
        click.echo(f"LLM: {x.requests} requests, {x.retries} retries, {x.cached} cached, "
                   f"{x.tokens_in} tokens in, {x.tokens_out} out, {x.failed_chunks} failed")
    for note in report.notes:
        click.echo(f"note: {note}")
    if texts is not None:
        click.echo(triples_summary(texts))
    for line in steps_summary(steps or []):
        click.echo(line)
    if steps is None:
        behind = _indexes_behind(ctx)
        if behind:
            click.echo(f"next: kgdb index (to build or refresh {', '.join(behind)} for the "
                       "solvers that need them)")


def _indexes_behind(ctx: Context) -> list[str]:
    """The indexes a solver needs that ``kgdb index`` would build or refresh now (missing or
    stale, and not waiting for other data: triple texts without facts)."""
    from kgdb.documents.indexing import needed_indexes
    from kgdb.retrieve.readiness import INDEXES, index_statuses

    return [f"{name} ({status.state})" for name, status in
            index_statuses(ctx.store, needed_indexes()).items()
            if status.state != "ready" and status.command == INDEXES[name].command]


def _llm_extractor(ctx: Context):  # type: ignore[no-untyped-def]
    from kgdb.documents.extract_llm import LlmExtractor
    from kgdb.documents.pipeline import schema_types

    entity_types, relation_types = schema_types(ctx.store)
    return LlmExtractor(entity_types=entity_types, relation_types=relation_types)


@click.group("delete")
def delete() -> None:
    """Remove what a load wrote."""


@delete.command("document")
@click.argument("ids", nargs=-1, required=True)
@json_option
@pass_context
def delete_document_cmd(ctx: Context, ids: tuple[str, ...], as_json: bool) -> None:
    """Delete documents: their chunks, mutual-index edges, and the extracted facts and
    entities no other source supports (never what triples or records loads created)."""
    from kgdb.documents.pipeline import delete_documents

    report = delete_documents(ctx.store, list(ids))
    if as_json:
        emit_json(report.to_json())
        return
    click.echo(f"deleted {len(ids)} document(s); {report.facts_removed} facts and "
               f"{report.entities_removed} entities no longer supported were removed")
