"""``kgdb bench``: benchmarks that print numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.output import emit_json, json_option
from kgdb.cli.results import record, results_option

KEEP_HELP = ("Keep the benchmark graph afterwards (otherwise it is dropped; on a server, the "
             "graph the benchmark filled from empty is emptied again).")


@click.group()
def bench() -> None:
    """Benchmarks that print numbers (JSON with --json)."""


def _show(result: dict[str, Any], as_json: bool) -> None:
    record(result)
    if as_json:
        emit_json(result)
        return
    for key, value in result.items():
        click.echo(f"{key}: {value}")


@bench.command("load")
@results_option("bench-load")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--sep", default=None)
@click.option("--cold", is_flag=True, help="Use an empty embedding cache (cold start).")
@click.option("--keep", is_flag=True, help=KEEP_HELP)
@click.option("--mode", type=click.Choice(["auto", "bulk", "incremental"]), default="auto",
              show_default=True, help="The loader's mode (kgdb load triples --mode).")
@json_option
@pass_context
def bench_load(ctx: Context, file: Path, sep: str | None, cold: bool, keep: bool, mode: str,
               as_json: bool) -> None:
    """Load FILE into a fresh graph and report entities/s, triples/s, embedding and total time."""
    from kgdb.bench import bench_load as run

    result = run(ctx.settings, file, sep=sep, cold=cold, keep=keep, mode=mode,
                 progress=not as_json)
    _show(result, as_json)


@bench.command("documents")
@results_option("bench-documents")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--parts", default=4, show_default=True, type=click.IntRange(1, 1000),
              help="Consecutive loads the documents are split into (each reported).")
@click.option("--extract", type=click.Choice(["none", "gazetteer"]), default="gazetteer",
              show_default=True, help="As kgdb load documents --extract.")
@click.option("--title-entity/--no-title-entity", default=True, show_default=True)
@click.option("--mention-facts", is_flag=True)
@click.option("--batch", default=32, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--cold", is_flag=True, help="Use an empty embedding cache (cold start).")
@click.option("--keep", is_flag=True, help=KEEP_HELP)
@json_option
@pass_context
def bench_documents(ctx: Context, paths: tuple[Path, ...], parts: int, extract: str,
                    title_entity: bool, mention_facts: bool, batch: int, cold: bool, keep: bool,
                    as_json: bool) -> None:
    """Load documents into a fresh graph in PARTS consecutive loads and report each one's
    documents/s (with and without embedding) and statements per batch against the graph's
    size."""
    from kgdb.bench import bench_documents as run
    from kgdb.documents.pipeline import DocumentOptions

    options = DocumentOptions(extract=extract, title_entity=title_entity,
                              mention_facts=mention_facts and title_entity, batch=batch)
    _show(run(ctx.settings, list(paths), options=options, parts=parts, cold=cold, keep=keep,
              progress=not as_json), as_json)


@bench.command("corpus")
@click.argument("base", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.argument("extra", nargs=-1, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--passages", default=None, type=click.IntRange(1),
              help="Passages of the corpus (default: 10 times BASE's).")
@click.option("--distinct", default=None, type=click.IntRange(1),
              help="Use only the first N documents of EXTRA (the rest of the corpus repeats "
                   "them under new ids).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path))
def bench_corpus(base: Path, extra: tuple[Path, ...], passages: int | None,
                 distinct: int | None, output: Path) -> None:
    """Write a larger corpus for latency at scale: BASE's passages as they are, then the
    documents of EXTRA (JSON corpora of real distractors) as x1:<id>, repeated as x2:<id>...
    with the same title and text until --passages."""
    import json

    from kgdb.bench import scaled_corpus
    from kgdb.documents.readers import read_corpus

    target = passages or 10 * sum(len(d.sections) for d in read_corpus(base))
    records = scaled_corpus(base, list(extra), target, distinct)
    output.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    click.echo(f"{output}: {len(records)} passages, "
               f"{len({r['id'] for r in records})} documents")


@bench.command("scale")
@results_option("bench-scale")
@click.option("--entities", default=100_000, show_default=True,
              type=click.IntRange(100, 50_000_000), help="Entities of the synthetic graph.")
@click.option("--relationships", default=None, type=click.IntRange(1, 500_000_000),
              help="Relationships drawn (default 5 per entity; repeats are dropped).")
@click.option("--kn", "k_nodes", default="16,256,2048", show_default=True,
              help="Comma-separated candidates per known node to measure.")
@click.option("--queries", default=20, show_default=True, type=click.IntRange(1, 10_000),
              help="Patterns per hop count.")
@click.option("--seed", default=7, show_default=True, type=int)
@click.option("--keep", is_flag=True, help=KEEP_HELP)
@click.option("--reuse", is_flag=True,
              help="Measure the graph a run with --keep left on the server (the same "
                   "--entities, --relationships and --seed) instead of loading it again.")
@click.option("--warmup", default=50, show_default=True, type=click.IntRange(0, 100_000),
              help="Unmeasured retrievals before each k(n) is measured (the first builds "
                   "the plugin's in-memory vector copies on Neo4j; reported apart).")
@click.option("--bulk", is_flag=True,
              help="Load with kgdb neo4j import (offline, neo4j-admin): the server at "
                   "KGDB_URI must be one kgdb neo4j start runs; it is stopped and restarted.")
@click.option("--vector-index", type=click.Choice(["auto", "exact", "quantized"]),
              default="auto", show_default=True,
              help="With --bulk: the entities' vector index (as kgdb neo4j import "
                   "--vector-index).")
@click.option("--compress", is_flag=True,
              help="With --bulk: gzip the import files (as kgdb neo4j import --compress).")
@click.option("--reindex", type=click.Choice(["exact", "quantized"]), default=None,
              help="With --reuse: build the entities' vector index anew this way first and "
                   "report its build time (to compare candidate recall between the two).")
@click.option("--candidate-recall", "candidate_recall", default=0, show_default=True,
              type=click.IntRange(0, 10_000), metavar="SAMPLE",
              help="Compare the approximate path's top k(n) candidates (Lucene's HNSW, "
                   "re-ranked exactly) with brute force for SAMPLE pattern node texts and "
                   "report recall per k(n) (Neo4j).")
@json_option
@pass_context
def bench_scale(ctx: Context, entities: int, relationships: int | None, k_nodes: str,
                queries: int, seed: int, keep: bool, reuse: bool, warmup: int, bulk: bool,
                vector_index: str, candidate_recall: int, compress: bool,
                reindex: str | None, as_json: bool) -> None:
    """Generate a synthetic knowledge graph (skewed degrees, 12 types, 36 relations, names with
    near neighbours), load it, and report load rate, memory and retrieval p50/p90 for 1-, 2-
    and 3-hop patterns per k(n)."""
    from kgdb.scale import bench_scale as run

    try:
        kns = tuple(int(k) for k in k_nodes.split(",") if k.strip())
    except ValueError as exc:
        raise click.BadParameter(f"not a list of integers: {k_nodes!r}", param_hint="--kn") from exc
    result = run(ctx.settings, entities=entities, relationships=relationships, k_nodes=kns,
                 queries=queries, seed=seed, keep=keep, reuse=reuse, warmup=warmup,
                 progress=not as_json, bulk=bulk, vector_index=vector_index,
                 candidate_recall_sample=candidate_recall, compress=compress,
                 reindex=reindex)
    _show(result, as_json)


@bench.command("procedures")
@results_option("bench-procedures")
@click.argument("question")
@click.option("--options", "options_json", default="{}", show_default=True,
              help="The solver options as JSON (those of kgdb ask), e.g. '{\"solver\": \"hig\"}'.")
@click.option("--runs", default=20, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--evidence-only", is_flag=True,
              help="Time custom.kgdb.askEvidence against retrieval alone (no LLM answer).")
@json_option
@pass_context
def bench_procedures(ctx: Context, question: str, options_json: str, runs: int,
                     evidence_only: bool, as_json: bool) -> None:
    """Latency of CALL custom.kgdb.ask (Neo4j, procedures installed, kgdb serve running)
    against the same question answered in-process as kgdb ask does."""

    from kgdb.bench import bench_procedures as run

    options = _json_object(options_json, "--options")
    result = run(ctx.store, ctx.embedder, question, options, runs=runs,
                 answer=not evidence_only)
    _show(result, as_json)


@bench.command("bi")
@results_option("bench-bi")
@click.option("--text", default="Kismit", show_default=True,
              help="What kgdb.entities / custom.kgdb.entities look up.")
@click.option("--rules", "rule_files", multiple=True, metavar="[NAME=]FILE",
              help="A rule set whose ask-time to time (NAME defaults to the file name; as "
                   "installed by kgdb procedures install --rules). Repeatable.")
@click.option("--facts", "facts_json", default="{}", show_default=True,
              help="The facts the rule sets judge, as JSON.")
@click.option("--runs", default=50, show_default=True, type=click.IntRange(1, 10_000))
@json_option
@pass_context
def bench_bi(ctx: Context, text: str, rule_files: tuple[str, ...], facts_json: str, runs: int,
             as_json: bool) -> None:
    """Latency of what BI tools call on Neo4j: kgdb.entities (kgdb's plugin) and
    custom.kgdb.entities (APOC Extended), and each rule set's ask-time, directly and as
    custom.kgdb.rules.NAME."""

    from kgdb.bench import bench_bi as run
    from kgdb.cli.rules import read_rules
    from kgdb.errors import ConfigError

    facts = _json_object(facts_json, "--facts")
    rules = {}
    for spec in rule_files:
        name, _, path = spec.rpartition("=")
        file = Path(path)
        if not file.is_file():
            raise ConfigError(f"--rules {spec}: no such file")
        rules[name or file.stem] = read_rules(file)
    if ctx.store.dialect.NAME != "neo4j":
        raise ConfigError("kgdb bench bi times Neo4j's procedures: set KGDB_URI to a Neo4j")
    _show(run(ctx.store, text=text, rules=rules, facts=facts, runs=runs), as_json)


@bench.command("embed")
@results_option("bench-embed")
@click.option("--model", "models", multiple=True, default=("minilm",), show_default=True,
              help="KGDB_EMBED_MODEL values to measure (repeatable): minilm, minilm-torch.")
@click.option("--texts", "count", type=click.IntRange(1), default=2000, show_default=True,
              help="How many texts: the bundled sample's names and facts, repeated.")
@click.option("--rounds", type=click.IntRange(1), default=3, show_default=True,
              help="Alternating rounds per model (the best one counts).")
@json_option
def bench_embed(models: tuple[str, ...], count: int, rounds: int, as_json: bool) -> None:
    """Embedding throughput without the cache (texts/s), and the largest cosine distance
    between the models' vectors of the same texts."""
    from kgdb.bench import bench_embed as run

    _show(run(list(models), count, rounds), as_json)


def _json_object(text: str, flag: str) -> dict[str, Any]:
    """``text`` as a JSON object, or a one-line error naming ``flag``."""
    import json

    from kgdb.errors import ConfigError

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{flag} is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ConfigError(f"{flag} must be a JSON object")
    return value
