"""CLI verbs for questions: ``kgdb pattern``, ``kgdb ask``, ``kgdb retrieve``, ``kgdb eval ...``,
``kgdb bench retrieve``.

Registered in kgdb/cli/__init__.py (``pattern_command``, ``ask_command``, ``retrieve_command``,
``eval_group`` on the group, ``bench_retrieve_command`` under ``kgdb bench``). The solvers'
options are generated from their options models (:mod:`kgdb.cli.solvers`). Expected failures
are :class:`KgdbError`s, which ``kgdb.cli.main`` prints as one line with exit status 1.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from kgdb.cli.context import Context, current_context, pass_context
from kgdb.cli.output import emit_json, json_option
from kgdb.cli.results import record, results_option
from kgdb.cli.solvers import click_option, options_from_cli, pattern_field_options, solver_options
from kgdb.dsl.pattern import pattern_triples
from kgdb.errors import KgdbError
from kgdb.retrieve.export import FORMATS
from kgdb.retrieve.triple_context import TripleContextOptions

format_option = click.option(
    "--format", "output_format", type=click.Choice(["text", *FORMATS]), default="text",
    show_default=True, help="text for a person; json (as --json), mermaid (a flowchart), "
    "graphml (Gephi, yEd, NetworkX) or html (one self-contained page with the drawing, opens "
    "offline) for other tools: kgdb retrieve ... --format html > evidence.html")


def _chosen_format(output_format: str, as_json: bool) -> str:
    if as_json and output_format not in ("text", "json"):
        raise click.UsageError(f"--json and --format {output_format} disagree: give one")
    return "json" if as_json else output_format


@click.command("pattern")
@click.argument("question")
@click.option("--examples", default="metaqa", show_default=True,
              help="Few-shot examples: metaqa, factkg, or a JSON file.")
@json_option
def pattern_command(question: str, examples: str, as_json: bool) -> None:
    """Ask the LLM for QUESTION's pattern graph (SimGRAG query-to-pattern) and print it."""
    from kgdb.llm import ChatClient
    from kgdb.retrieve.pattern_llm import load_examples, query_to_pattern

    pattern = query_to_pattern(ChatClient(), question, load_examples(examples))
    if as_json:
        emit_json({"question": question, "triples": pattern_triples(pattern),
                               "pattern": pattern.to_json()})
        return
    for h, r, t in pattern_triples(pattern):
        click.echo(f"({h!r}, {r!r}, {t!r})")


def _llm_or_none() -> Any:
    from kgdb.llm.client import ChatClient, LlmSettings

    settings = LlmSettings.from_env()
    return ChatClient(settings) if settings.api_key or settings.base_url else None


@click.command("ask")
@click.argument("question")
@solver_options
@click.option("--cypher", "show_cypher", is_flag=True,
              help="Also show the Cypher that ran, with its parameters.")
@format_option
@json_option
@pass_context
def ask_command(ctx: Context, question: str, solver: str, pattern: tuple[str, ...],
                show_cypher: bool, output_format: str, as_json: bool, **options: Any) -> None:
    """Answer QUESTION from the graph with an LLM (OPENAI_BASE_URL, OPENAI_API_KEY): the
    answer as the LLM writes it, the evidence it came from (the Cypher that ran with
    --cypher) and the LLM's requests and tokens. Every solver needs the LLM to write the
    answer; pattern without --pattern and logical-form also need it to plan. Without an LLM,
    kgdb retrieve gives the evidence alone."""
    from kgdb.retrieve.ask import Answer, ask, ask_stream, require_llm

    chosen = _chosen_format(output_format, as_json)
    parsed = options_from_cli(solver, pattern, options)
    llm = _llm_or_none()
    require_llm(parsed, llm, answer=True)  # before the database is opened
    if chosen != "text":
        _emit(ask(ctx.store, ctx.embedder, llm, question, parsed), chosen, ctx.store)
        return
    answer = None
    for kind, value in ask_stream(ctx.store, ctx.embedder, llm, question, parsed):
        if kind == "token":
            click.echo(str(value), nl=False)
        elif kind == "answer" and isinstance(value, Answer):
            answer = value
    assert answer is not None
    click.echo("")
    if answer.verdict is not None:
        click.echo(f"\nverdict: {answer.verdict}")
    drawn = answer.evidence.detail.get("pattern")
    if isinstance(drawn, list):
        click.echo("\npattern: " + ", ".join(repr(tuple(t)) for t in drawn
                                             if isinstance(t, list)))
    click.echo("\nevidence:")
    for line in answer.evidence.render(cypher=show_cypher, width=78):
        click.echo(f"  {line}" if line else "")


@click.command("retrieve")
@click.argument("question")
@solver_options
@click.option("--cypher/--no-cypher", "show_cypher", default=None,
              help="Show the Cypher that ran, with its parameters (text: off by default; "
                   "--json has the statements unless --no-cypher).")
@format_option
@json_option
@pass_context
def retrieve_command(ctx: Context, question: str, solver: str, pattern: tuple[str, ...],
                     show_cypher: bool | None, output_format: str, as_json: bool,
                     **options: Any) -> None:
    """The evidence for QUESTION, without an answer: no LLM needed, except for the pattern
    solver without --pattern (the LLM writes the pattern graph) and logical-form (it plans).
    Passages are printed with their score, document and source, cut at a sentence end
    ("…"; --json has them whole). Example: kgdb retrieve 'who directed Kismet?' --pattern
    'Kismet|directed_by|UNKNOWN 1'; kgdb retrieve 'who founded X?' --solver ppr."""
    from kgdb.retrieve.ask import llm_needed, require_llm, retrieve

    chosen = _chosen_format(output_format, as_json)
    parsed = options_from_cli(solver, pattern, options)
    llm = _llm_or_none() if llm_needed(parsed, answer=False) else None
    require_llm(parsed, llm, answer=False)
    evidence = retrieve(ctx.store, ctx.embedder, question, parsed, llm)
    if chosen == "json":
        emit_json(evidence.to_json(statements=show_cypher is not False))
    elif chosen != "text":
        _emit(evidence, chosen, ctx.store)
    else:
        for line in evidence.render(cypher=bool(show_cypher)):
            click.echo(line)


def _emit(result: Any, output_format: str, store: Any) -> None:
    from kgdb.retrieve.export import export, passage_mentions

    if output_format == "json":
        emit_json(result.to_json())
    else:
        evidence = getattr(result, "evidence", result)
        click.echo(export(result, output_format, passage_mentions(store, evidence)), nl=False)


@click.group("eval")
def eval_group() -> None:
    """Evaluate retrieval on benchmark question sets."""


def _metaqa_run(questions_files: tuple[Path, ...], patterns: str, limit: int | None,
                **options: Any) -> dict[str, Any]:
    from kgdb.retrieve.metaqa import evaluate, read_questions

    if patterns != "oracle":
        raise KgdbError(f"unknown --patterns {patterns!r}: only 'oracle' is available")
    questions = []
    for path in questions_files:
        questions += read_questions(path)[: limit or None]
    context = current_context()
    return evaluate(context.store, context.embedder, questions, **options)


def _print_report(report: dict[str, Any]) -> None:
    k = report["k"]
    click.echo(f"{report['questions']} questions, k={k}, {report['options']}, "
               f"{report['seconds']} s")
    for hop, row in report["hops"].items():
        lat = row["latency_ms"]
        click.echo(f"{hop}: hits@{k} {row[f'hits@{k}']:.2%}  hits@1 {row['hits@1']:.2%}  "
                   f"({row['questions']} questions, {len(row['misses'])} misses)")
        for phase in ("embed", "vector", "match", "retrieval_excluding_embed"):
            p = lat[phase]
            click.echo(f"    {phase:<26} p50 {p['p50']:8.2f} ms  p90 {p['p90']:8.2f} ms  "
                       f"p99 {p['p99']:8.2f} ms")
        for miss in row["misses"][:10]:
            click.echo(f"    miss line {miss['line']}: {miss['question']} -> "
                       f"{miss['retrieved']} (gold {miss['gold']})")


@eval_group.command("metaqa")
@results_option("eval-metaqa")
@click.option("--questions", "questions_files", multiple=True, required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="MetaQA question file(s): question<TAB>answers<TAB>type.")
@click.option("--patterns", default="oracle", show_default=True,
              help="Where patterns come from: 'oracle' (what a perfect model would write).")
@pattern_field_options(("k", "kn", "kr", "kt", "engine", "distinct"), distinct="known")
@click.option("--limit", type=click.IntRange(1), help="Only the first N questions per file.")
@json_option
def eval_metaqa_command(questions_files: tuple[Path, ...], patterns: str, k: int, kn: int,
                        kr: int, kt: int, engine: str, distinct: str,
                        limit: int | None, as_json: bool) -> None:
    """Hits@k, hits@1 and latency per hop of SimGRAG retrieval on MetaQA questions."""
    report = _metaqa_run(questions_files, patterns, limit, k=k, k_nodes=kn,
                         k_relations=kr, k_types=kt, engine=engine, distinct=distinct)
    record(report)
    if as_json:
        emit_json(report)
    else:
        _print_report(report)


@click.command("retrieve")
@results_option("bench-retrieve")
@click.option("--questions", "questions_files", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="MetaQA question file(s) whose oracle patterns are retrieved (SimGRAG).")
@click.option("--documents", "documents_file", default=None,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Instead: document questions (JSONL or MuSiQue's questions.json) for the "
                   "document modes of kgdb eval retrieval.")
@click.option("--mode", "modes", multiple=True,
              help="--documents: a mode to time, SOLVER[:OPTION=VALUE,...] (repeat; see kgdb "
                   "eval retrieval); default: every retrieval-only solver with its defaults.")
@pattern_field_options(("k", "kn", "kr", "kt", "engine", "distinct"), distinct="known")
@click.option("--limit", type=click.IntRange(1), help="Only the first N questions per file.")
@click.option("--engines", default=None,
              help="--questions: compare databases in one run, alternating question by "
                   "question: comma-separated falkordb (the embedded FalkorDB, graph "
                   "--graph), neo4j (KGDB_URI, with kgdb's plugin where loaded), neo4j-cypher "
                   "(KGDB_URI, plain Cypher). The first is the reference for GSD agreement "
                   "and paired ratios.")
@click.option("--warmup", type=click.IntRange(0), default=None,
              help="--engines: at least N unmeasured retrievals per engine first, the hops "
                   "taking turns, more (up to 5 N) while the latency still falls by 10 % per "
                   "round of 50 (default 200: a Neo4j started just before needs 150 or more "
                   "to warm its JIT and caches; the report shows each round's p50).")
@json_option
def bench_retrieve_command(questions_files: tuple[Path, ...], documents_file: Path | None,
                           modes: tuple[str, ...], k: int, kn: int, kr: int, kt: int,
                           engine: str, distinct: str, limit: int | None,
                           engines: str | None, warmup: int | None, as_json: bool) -> None:
    """Latency percentiles of SimGRAG retrieval, split into embedding, vector search, matching;
    with --documents, of every document retrieval mode (p50/p90 per mode, excluding the
    question's embedding); with --engines, several databases side by side."""
    if documents_file is not None:
        _bench_documents(documents_file, modes, limit, as_json)
        return
    if not questions_files:
        raise click.UsageError("give --questions (MetaQA) or --documents")
    if warmup is not None and engines is None:
        raise click.UsageError("--warmup goes with --engines")
    if engines is not None:
        from kgdb.bench import SIDE_BY_SIDE_WARMUP

        _bench_side_by_side(questions_files, engines, limit, as_json, k=k, k_nodes=kn,
                            k_relations=kr, k_types=kt, engine=engine, distinct=distinct,
                            warmup=SIDE_BY_SIDE_WARMUP if warmup is None else warmup)
        return
    report = _metaqa_run(questions_files, "oracle", limit, k=k, k_nodes=kn,
                         k_relations=kr, k_types=kt, engine=engine, distinct=distinct)
    from kgdb.bench import index_state
    from kgdb.measure import cpu_model, load_average

    context = current_context()
    machine = {"cpu": cpu_model(), "cores": os.cpu_count(), "load_average": load_average()}
    state = index_state(context.store)
    latency = {**{hop: {"questions": row["questions"], "latency_ms": row["latency_ms"],
                        "paths": row["paths"]}
                  for hop, row in report["hops"].items()},
               "machine": machine, "index_state": state}
    record(latency, engine=context.store.dialect.NAME)
    if as_json:
        emit_json(latency)
        return
    click.echo(f"{machine['cpu']}, {machine['cores']} cores, load {machine['load_average']}; "
               f"{state['vector_search']}")
    for hop, row in report["hops"].items():
        click.echo(f"{hop} ({row['questions']} questions, engine {engine}; "
                   f"{'; '.join(row['paths'])})")
        for phase, p in row["latency_ms"].items():
            click.echo(f"    {phase:<26} p50 {p['p50']:8.2f}  p90 {p['p90']:8.2f}  "
                       f"p99 {p['p99']:8.2f}  max {p['max']:8.2f} ms")




SIDE_BY_SIDE = ("falkordb", "neo4j", "neo4j-cypher")


def _bench_side_by_side(questions_files: tuple[Path, ...], engines: str, limit: int | None,
                        as_json: bool, **options: Any) -> None:
    import dataclasses

    from kgdb.bench import bench_side_by_side
    from kgdb.engine import connect
    from kgdb.retrieve.metaqa import read_questions

    names = [n.strip() for n in engines.split(",") if n.strip()]
    unknown = [n for n in names if n not in SIDE_BY_SIDE]
    if unknown or not names or len(set(names)) != len(names):
        raise click.UsageError(f"--engines: give distinct names among {', '.join(SIDE_BY_SIDE)}"
                               f" (not {engines!r})")
    context = current_context()
    settings = context.settings
    if any(n.startswith("neo4j") for n in names) and settings.embedded:
        raise KgdbError("--engines neo4j/neo4j-cypher: KGDB_URI is not set to a Neo4j server")
    stores: dict[str, Any] = {}
    try:
        for name in names:
            if name == "falkordb":
                stores[name] = connect(dataclasses.replace(settings, uri="embedded"),
                                       create=False)
            else:
                stores[name] = connect(settings)
                if name == "neo4j-cypher":
                    stores[name].detect_plugin(use=False)
        questions = []
        for path in questions_files:
            questions += read_questions(path)[: limit or None]
        report = bench_side_by_side(stores, context.embedder, questions, **options)
    finally:
        for store in stores.values():
            store.close()
    record(report, engine=",".join(names))
    if as_json:
        emit_json(report)
        return
    m = report["machine"]
    click.echo(f"{m['cpu']}, {m['cores']} cores, load {m['load_average_at_start']} -> "
               f"{m['load_average_at_end']}")
    for name, info in report["engines"].items():
        click.echo(f"{name}: {info['address']}; {info['index_state']['vector_search']}")
    w = report["warmup"]
    click.echo(f"warm-up: {w['retrievals']} retrievals per engine; p50 ms per round: "
               + "; ".join(f"{name} " + " ".join(f"{v:.1f}" for v in rounds)
                           for name, rounds in w.get("rounds_p50_ms", {}).items()))
    for hop, row in report["hops"].items():
        click.echo(f"{hop} ({row['questions']} questions, load {row['load_average']})")
        for name in names:
            r = row[name]
            lat = "  ".join(f"{phase} {p['p50']:.2f}/{p['p90']:.2f}"
                            for phase, p in r["latency_ms"].items())
            ratio = next((f"  ratio {v:.2f}" for key, v in r.items()
                          if key.startswith("paired_ratio")), "")
            agree = next(v for key, v in r.items() if key.startswith("gsds_equal"))
            click.echo(f"    {name:<13} p50/p90 ms: {lat}{ratio}  GSDs equal {agree}")


BENCH_MODES = ("vector", "entities", "hybrid", "document-graph:facts=0",
               "document-graph:facts=0,strategy=attentive",
               "document-graph:facts=0,strategy=multihop", "document-graph",
               "document-graph:strategy=attentive", "document-graph:strategy=multihop",
               "triple-context")
"""What ``kgdb bench retrieve --documents`` times without ``--mode``."""


def _bench_documents(path: Path, modes: tuple[str, ...], limit: int | None,
                     as_json: bool) -> None:
    from kgdb.cli.context import current_context
    from kgdb.cypher.documents import passage_search
    from kgdb.measure import load_average
    from kgdb.retrieve.documents import evaluate, parse_modes, read_questions

    context = current_context()
    questions = read_questions(path)[:limit]
    started = load_average()
    result = evaluate(context.store, context.embedder, questions, ks=(10,),
                      modes=parse_modes(modes or BENCH_MODES), progress=not as_json)
    payload = {"questions": result.questions, "engine": context.store.dialect.NAME,
               "passage_search": passage_search(context.store.dialect),
               "latency_ms": result.latency_ms,
               "load_average": {"at_start": started, "at_end": load_average()}}
    record(payload)
    if as_json:
        emit_json(payload)
        return
    click.echo(f"{result.questions} questions on {payload['engine']} (passages by "
               f"{payload['passage_search']}; load {started} -> {load_average()})")
    for mode, p in result.latency_ms.items():
        click.echo(f"    {mode:<42} p50 {p['p50']:8.2f}  p90 {p['p90']:8.2f} ms")


@eval_group.command("retrieval")
@results_option("eval-retrieval")
@click.option("--questions", "questions_file", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="JSONL {question, supporting: [document ids or titles]}, or MuSiQue's "
                   "questions.json as it is.")
@click.option("--k", "ks", default="2,5,10", show_default=True,
              help="Comma-separated cut-offs for recall@k.")
@click.option("--mode", "modes", multiple=True,
              help="A retrieval mode: a solver, optionally with options, "
                   "SOLVER[:OPTION=VALUE,...] (e.g. document-graph:facts=0,strategy=attentive); "
                   "repeat for several, or list plain solver names separated by commas. "
                   "Default: vector, entities, hybrid.")
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N questions.")
@json_option
@pass_context
def eval_retrieval_command(ctx: Context, questions_file: Path, ks: str, modes: tuple[str, ...],
                           limit: int | None, as_json: bool) -> None:
    """Recall@k of supporting documents per retrieval mode, without an LLM: each mode is a
    solver, retrieving exactly as kgdb retrieve does."""
    from kgdb.retrieve.documents import DEFAULT_MODES, evaluate, parse_modes, read_questions

    cutoffs = _cutoffs(ks)
    parsed = parse_modes(modes or DEFAULT_MODES)
    questions = read_questions(questions_file)[:limit]
    result = evaluate(ctx.store, ctx.embedder, questions, ks=cutoffs, modes=parsed,
                      progress=not as_json)
    record(result.to_json(), engine=ctx.store.dialect.NAME)
    if as_json:
        emit_json(result.to_json())
        return
    click.echo(f"{result.questions} questions")
    for mode, recalls in result.recall.items():
        click.echo(f"  {mode:42} " + "  ".join(f"{k} {v:.3f}" for k, v in recalls.items()))


@eval_group.command("beam")
@results_option("eval-beam")
@click.option("--questions", "questions_files", multiple=True, required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="MetaQA question file(s) (dev_2hop.tsv, dev_3hop.tsv).")
@click.option("--k", "ks", default="1,3,10", show_default=True,
              help="Comma-separated cut-offs for hits@k.")
@click_option("beam_width", TripleContextOptions.model_fields["beam_width"], default=3)
@click_option("direction", TripleContextOptions.model_fields["direction"], default="both")
@click.option("--limit", type=click.IntRange(1), help="Only the first N questions per file.")
@json_option
def eval_beam_command(questions_files: tuple[Path, ...], ks: str, beam_width: int,
                      direction: str, limit: int | None, as_json: bool) -> None:
    """Hits@k of KG-CQR's beam completion alone on MetaQA: from the topic entity, paths of as
    many facts as the question has hops, scored by the question against the facts' triple
    texts (kgdb index triples); the answers are the paths' ends."""
    from kgdb.retrieve.metaqa import evaluate_beam, read_questions

    cutoffs = _cutoffs(ks)
    questions = []
    for path in questions_files:
        questions += read_questions(path)[: limit or None]
    context = current_context()
    report = evaluate_beam(context.store, context.embedder, questions, ks=cutoffs,
                           width=beam_width, direction=direction)
    record(report, engine=context.store.dialect.NAME)
    if as_json:
        emit_json(report)
        return
    click.echo(f"{report['questions']} questions, beam width {beam_width}, {direction}, "
               f"{report['seconds']} s")
    for hop, row in report["hops"].items():
        hits = "  ".join(f"hits@{k} {row[f'hits@{k}']:.2%}" for k in cutoffs)
        lat = row["latency_ms"]
        click.echo(f"{hop}: {hits}  ({row['questions']} questions; beam p50 {lat['p50']:.1f} "
                   f"ms, p90 {lat['p90']:.1f} ms)")


def _cutoffs(ks: str) -> tuple[int, ...]:
    try:
        cutoffs = tuple(int(k) for k in ks.split(",") if k.strip())
    except ValueError as exc:
        raise click.BadParameter(f"not a list of integers: {ks!r}", param_hint="--k") from exc
    if not cutoffs or min(cutoffs) < 1:
        raise click.BadParameter("give positive cut-offs, e.g. 2,5,10", param_hint="--k")
    return tuple(sorted(set(cutoffs)))


@eval_group.command("qa")
@results_option("eval-qa")
@click.option("--questions", "questions_file", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="JSONL {question, answer | answers, answer_aliases?} (the 2wiki and "
                   "MuSiQue question files as they are), MuSiQue's questions.json, or MetaQA's "
                   "question<TAB>answers lines (scored by Hits@1 too).")
@click.option("--mode", "modes", multiple=True,
              help="A solver, optionally with options, SOLVER[:OPTION=VALUE,...] (as kgdb eval "
                   "retrieval); repeat for several. Default: vector.")
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N questions.")
@click.option("--answers", "show_answers", is_flag=True,
              help="Also print (or put in the JSON) every question's answer beside its gold.")
@json_option
@pass_context
def eval_qa_command(ctx: Context, questions_file: Path, modes: tuple[str, ...],
                    limit: int | None, show_answers: bool, as_json: bool) -> None:
    """EM and F1 of the LLM's answers (the datasets' official normalisation; Hits@1 too for
    MetaQA) and the LLM requests and tokens per question, per mode: each question asked as
    kgdb ask does, through the OpenAI-compatible endpoint of OPENAI_BASE_URL/OPENAI_API_KEY
    (model: KGDB_LLM_MODEL)."""
    from kgdb.retrieve.documents import parse_modes
    from kgdb.retrieve.qa import evaluate, read_questions

    parsed = parse_modes(modes or ("vector",))
    questions, kind = read_questions(questions_file)
    questions = questions[:limit]
    llm = _llm_or_none()
    if llm is None:
        raise KgdbError("kgdb eval qa asks an LLM: set OPENAI_BASE_URL (and OPENAI_API_KEY) "
                        "to an OpenAI-compatible endpoint")
    result = evaluate(ctx.store, ctx.embedder, llm, questions, parsed, kind=kind,
                      progress=not as_json)
    report = result.to_json(answers=show_answers)
    record(report, engine=ctx.store.dialect.NAME)
    if as_json:
        emit_json(report)
        return
    click.echo(f"{result.questions} questions ({kind})")
    for mode, scores in report["scores"].items():
        llm_use = scores["llm_per_question"]
        hits = f"hits@1 {scores['hits@1']:.3f}  " if "hits@1" in scores else ""
        click.echo(f"  {mode:32} {hits}EM {scores['em']:.3f}  F1 {scores['f1']:.3f}  "
                   f"LLM {llm_use['requests']:.2f} requests, {llm_use['tokens_in']:.0f} in / "
                   f"{llm_use['tokens_out']:.0f} out per question"
                   + (f"  ({scores['failed']} failed: {scores['errors'][0]})"
                      if scores["failed"] else ""))
    if show_answers:
        for mode, answers in report["answers"].items():
            for a in answers:
                click.echo(f"  [{mode}] {a['question']} -> {a['answer']!r} (gold "
                           f"{a['gold'][0]!r})")
