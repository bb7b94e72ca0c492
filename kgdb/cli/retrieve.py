"""CLI verbs for SimGRAG: ``kgdb pattern``, ``kgdb ask``, ``kgdb eval metaqa``, ``kgdb bench retrieve``.

Registered in kgdb/cli/__init__.py (``pattern_command``, ``ask_command``, ``eval_group`` on the group,
``bench_retrieve_command`` under ``kgdb bench``). Expected failures are :class:`KgdbError`s,
which ``kgdb.cli.main`` prints as one line with exit status 1.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.output import emit_json, json_option
from kgdb.dsl.pattern import pattern_triples
from kgdb.errors import KgdbError
from kgdb.retrieve.simgrag import DISTINCT, ENGINES, Retrieval, describe

F = TypeVar("F", bound=Callable[..., Any])

SOLVERS = ["simgrag", "lf", "hig", "cqr"]
"""``kgdb ask --solver``: SimGRAG (pattern graph, top-k subgraphs), KAG logical forms
(plan, execute, judge, re-plan), KG-Retriever's hierarchical index graph (documents, then
their entities' facts) or KG-CQR (triple texts, beam completion, fused chunk retrieval)."""


DOCUMENT_MODES = ("vector", "kgr-onehop", "kgr-attentive", "kgr-multihop", "hig-onehop",
                  "hig-attentive", "hig-multihop", "cqr")


def _cqr_options(func: F) -> F:
    for option in reversed([
        click.option("--cqr-k", "cqr_k", default=10, show_default=True,
                     type=click.IntRange(1, 10000),
                     help="KG-CQR: facts extracted by their triple text's similarity."),
        click.option("--beam-width", default=3, show_default=True, type=click.IntRange(1, 100),
                     help="KG-CQR: paths kept per expanded path (the paper's beam width)."),
        click.option("--max-path", default=2, show_default=True, type=click.IntRange(1, 6),
                     help="KG-CQR: longest completion path, in facts."),
        click.option("--complete-k", default=20, show_default=True,
                     type=click.IntRange(0, 10000),
                     help="KG-CQR: new facts completion may add (the paper's K)."),
        click.option("--alpha", default=0.7, show_default=True, type=click.FloatRange(0, 1),
                     help="KG-CQR: weight of the question in the fused query vector."),
    ]):
        func = option(func)
    return func


def _cqr_settings(cqr_k: int, beam_width: int, max_path: int, complete_k: int, alpha: float,
                  chunks: int = 10) -> Any:
    from kgdb.retrieve.cqr import CqrSettings

    return CqrSettings(extract_k=cqr_k, width=beam_width, max_length=max_path,
                       complete_k=complete_k, alpha=alpha, chunks=chunks).check()


def _hig_options(func: F) -> F:
    from kgdb.retrieve.hig import HIG_LAMBDA, HIG_N, HIG_T, STRATEGIES

    for option in reversed([
        click.option("--strategy", type=click.Choice(list(STRATEGIES)), default="onehop",
                     show_default=True,
                     help="KG-Retriever: how the document layer widens the top-N documents."),
        click.option("--hig-n", default=HIG_N, show_default=True,
                     type=click.IntRange(1, 1000), help="KG-Retriever: seed documents (N)."),
        click.option("--hig-t", default=HIG_T, show_default=True,
                     type=click.IntRange(1, 10000), help="KG-Retriever: facts at most (T)."),
        click.option("--hig-lambda", default=HIG_LAMBDA, show_default=True, type=float,
                     help="KG-Retriever: entity threshold on w * cos (lambda)."),
    ]):
        func = option(func)
    return func


def _retrieval_options(func: F, distinct: str = "all") -> F:
    for option in reversed([
        click.option("--k", "k", default=3, show_default=True, type=click.IntRange(1, 1000),
                     help="How many subgraphs (top-k by Graph Semantic Distance)."),
        click.option("--kn", "k_nodes", default=16, show_default=True,
                     type=click.IntRange(1, 100000), help="Candidate entities per known node."),
        click.option("--kr", "k_relations", default=16, show_default=True,
                     type=click.IntRange(1, 100000),
                     help="Candidate relation types per known relation."),
        click.option("--kt", "k_types", default=16, show_default=True,
                     type=click.IntRange(1, 100000),
                     help="Candidate entity types per typed unknown node."),
        click.option("--engine", type=click.Choice(list(ENGINES)), default="cypher",
                     show_default=True,
                     help="cypher: one generated statement per component (on a Neo4j with "
                          "kgdb's plugin: one kgdb.simgrag.match call); optimized: the "
                          "paper's pruned greedy search, one Cypher step per expansion; "
                          "native: the plugin's procedure, required."),
        click.option("--distinct", type=click.Choice(list(DISTINCT)), default=distinct,
                     show_default=True,
                     help="all: isomorphic subgraphs (the paper); known: unknown nodes that "
                          "are not neighbours may be the same entity (MetaQA's gold answers "
                          "follow relations and may revisit any node but the topic)."),
    ]):
        func = option(func)
    return func


def _metaqa_retrieval_options(func: F) -> F:
    return _retrieval_options(func, distinct="known")


def _open() -> tuple[contextlib.AbstractContextManager[Any], Any]:
    """The store (closed with the invocation, so ``with`` leaves it open) and embedder of the
    ``kgdb`` invocation (``--uri``/``--graph``)."""
    from kgdb.cli.context import current_context

    context = current_context()
    return contextlib.nullcontext(context.store), context.embedder


def _print_retrieval(result: Retrieval) -> None:
    for line in describe(result):
        click.echo(line)


@click.command("pattern")
@click.argument("question")
@click.option("--examples", default="metaqa", show_default=True,
              help="Few-shot examples: metaqa, factkg, or a JSON file.")
@json_option
def pattern_command(question: str, examples: str, as_json: bool) -> None:
    """Ask the LLM for QUESTION's pattern graph (SimGRAG query-to-pattern) and print it."""
    from kgdb.llm import ChatClient
    from kgdb.retrieve.simgrag_llm import load_examples, query_to_pattern

    pattern = query_to_pattern(ChatClient(), question, load_examples(examples))
    if as_json:
        emit_json({"question": question, "triples": pattern_triples(pattern),
                               "pattern": pattern.to_json()})
        return
    for h, r, t in pattern_triples(pattern):
        click.echo(f"({h!r}, {r!r}, {t!r})")


@click.command("ask")
@click.argument("question")
@click.option("--solver", type=click.Choice(SOLVERS), default="simgrag", show_default=True,
              help="How to answer.")
@click.option("--verify", is_flag=True,
              help="Fact verification: judge QUESTION as a statement, True or False.")
@click.option("--rounds", default=3, show_default=True, type=click.IntRange(1, 10),
              help="--solver lf: plan-execute-judge rounds at most (KAG's n).")
@click.option("--examples", default="metaqa", show_default=True,
              help="Few-shot examples: metaqa, factkg, or a JSON file.")
@_retrieval_options
@_hig_options
@_cqr_options
@click.option("--chunks", default=10, show_default=True, type=click.IntRange(0, 1000),
              help="hig: source chunks of the facts given to the model; cqr: chunks retrieved.")
@json_option
def ask_command(question: str, solver: str, verify: bool, rounds: int, examples: str, k: int,
                k_nodes: int, k_relations: int, k_types: int, engine: str, distinct: str,
                strategy: str, hig_n: int, hig_t: int, hig_lambda: float, cqr_k: int,
                beam_width: int, max_path: int, complete_k: int, alpha: float, chunks: int,
                as_json: bool) -> None:
    """Answer QUESTION from the graph: pattern, top-k subgraphs, answer citing them
    (--solver simgrag), a logical-form plan run against the graph (--solver lf),
    KG-Retriever's documents and their entities' facts (--solver hig), or KG-CQR's
    contextual chunk retrieval (--solver cqr)."""
    from pydantic import ValidationError

    from kgdb.llm import ChatClient
    from kgdb.retrieve.ask import AskOptions, ask

    if verify and solver != "simgrag":
        raise click.UsageError("--verify works with --solver simgrag")
    if examples not in ("metaqa", "factkg"):  # a file of examples: loaded (and checked) here
        from kgdb.retrieve.simgrag_llm import load_examples

        load_examples(examples)
    try:
        options = AskOptions.model_validate({
            "solver": solver, "k": k, "kn": k_nodes, "kr": k_relations, "kt": k_types,
            "engine": engine, "distinct": distinct, "verify": verify, "rounds": rounds,
            "strategy": strategy, "hig_n": hig_n, "hig_t": hig_t, "hig_lambda": hig_lambda,
            "cqr_k": cqr_k, "beam_width": beam_width, "max_path": max_path,
            "complete_k": complete_k, "alpha": alpha, "chunks": chunks,
            **({"examples": examples} if examples in ("metaqa", "factkg") else {})})
    except ValidationError as exc:
        raise click.UsageError(_first_error(exc)) from None
    opened, embedder = _open()
    with opened as store:
        answer = ask(store, embedder, ChatClient(), question, options,
                     examples=None if examples in ("metaqa", "factkg") else examples)
    if as_json:
        emit_json(answer.to_json())
        return
    if solver == "lf":
        click.echo(answer.found.render())
        return
    click.echo(answer.answer)
    if answer.verdict is not None:
        click.echo(f"\nverdict: {answer.verdict}")
    if solver == "simgrag":
        click.echo("\npattern: " + ", ".join(f"({h!r}, {r!r}, {t!r})"
                                             for h, r, t in answer.detail["pattern"]))
        click.echo("\nevidence:")
        _print_retrieval(answer.found)
        return
    click.echo("\nevidence:")
    for line in answer.found.lines():
        click.echo(f"  {line[:300]}")


def _first_error(exc: Any) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    return f"{where}: {error['msg']}"


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
    opened, embedder = _open()
    with opened as store:
        return evaluate(store, embedder, questions, **options)


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
@click.option("--questions", "questions_files", multiple=True, required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="MetaQA question file(s): question<TAB>answers<TAB>type.")
@click.option("--patterns", default="oracle", show_default=True,
              help="Where patterns come from: 'oracle' (what a perfect model would write).")
@_metaqa_retrieval_options
@click.option("--limit", type=click.IntRange(1), help="Only the first N questions per file.")
@json_option
def eval_metaqa_command(questions_files: tuple[Path, ...], patterns: str, k: int, k_nodes: int,
                        k_relations: int, k_types: int, engine: str, distinct: str,
                        limit: int | None, as_json: bool) -> None:
    """Hits@k, hits@1 and latency per hop of SimGRAG retrieval on MetaQA questions."""
    report = _metaqa_run(questions_files, patterns, limit, k=k, k_nodes=k_nodes,
                         k_relations=k_relations, k_types=k_types, engine=engine,
                         distinct=distinct)
    if as_json:
        emit_json(report)
    else:
        _print_report(report)


@click.command("retrieve")
@click.option("--questions", "questions_files", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="MetaQA question file(s) whose oracle patterns are retrieved (SimGRAG).")
@click.option("--documents", "documents_file", default=None,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Instead: document questions (JSONL or MuSiQue's questions.json) for the "
                   "document modes of kgdb eval retrieval.")
@click.option("--mode", "modes", default=",".join(DOCUMENT_MODES), show_default=True,
              help="--documents: comma-separated modes to time.")
@_metaqa_retrieval_options
@click.option("--limit", type=click.IntRange(1), help="Only the first N questions per file.")
@json_option
def bench_retrieve_command(questions_files: tuple[Path, ...], documents_file: Path | None,
                           modes: str, k: int, k_nodes: int, k_relations: int, k_types: int,
                           engine: str, distinct: str, limit: int | None,
                           as_json: bool) -> None:
    """Latency percentiles of SimGRAG retrieval, split into embedding, vector search, matching;
    with --documents, of every document retrieval mode (p50/p90 per mode, excluding the
    question's embedding)."""
    if documents_file is not None:
        _bench_documents(documents_file, modes, limit, as_json)
        return
    if not questions_files:
        raise click.UsageError("give --questions (MetaQA) or --documents")
    report = _metaqa_run(questions_files, "oracle", limit, k=k, k_nodes=k_nodes,
                         k_relations=k_relations, k_types=k_types, engine=engine,
                         distinct=distinct)
    if as_json:
        emit_json({hop: {"questions": row["questions"], "latency_ms": row["latency_ms"],
                         "paths": row["paths"]}
                   for hop, row in report["hops"].items()})
        return
    for hop, row in report["hops"].items():
        click.echo(f"{hop} ({row['questions']} questions, engine {engine}; "
                   f"{'; '.join(row['paths'])})")
        for phase, p in row["latency_ms"].items():
            click.echo(f"    {phase:<26} p50 {p['p50']:8.2f}  p90 {p['p90']:8.2f}  "
                       f"p99 {p['p99']:8.2f}  max {p['max']:8.2f} ms")




def _bench_documents(path: Path, modes: str, limit: int | None, as_json: bool) -> None:
    from kgdb.cli.context import current_context
    from kgdb.retrieve.documents import evaluate, read_questions

    context = current_context()
    questions = read_questions(path)[:limit]
    result = evaluate(context.store, context.embedder, questions, ks=(10,),
                      modes=[m.strip() for m in modes.split(",") if m.strip()])
    payload = {"questions": result.questions, "engine": context.store.dialect.NAME,
               "latency_ms": result.latency_ms}
    if as_json:
        emit_json(payload)
        return
    click.echo(f"{result.questions} questions on {payload['engine']}")
    for mode, p in result.latency_ms.items():
        click.echo(f"    {mode:<14} p50 {p['p50']:8.2f}  p90 {p['p90']:8.2f} ms")


@eval_group.command("retrieval")
@click.option("--questions", "questions_file", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="JSONL {question, supporting: [document ids or titles]}, or MuSiQue's "
                   "questions.json as it is.")
@click.option("--k", "ks", default="2,5,10", show_default=True,
              help="Comma-separated cut-offs for recall@k.")
@click.option("--mode", "modes", default="vector,entities,hybrid", show_default=True,
              help="Comma-separated modes: vector (chunk vector search), entities (the "
                   "question's entities and their supporting chunks), hybrid (both, fused), "
                   "kgr-onehop, kgr-attentive, kgr-multihop (KG-Retriever's document layer), "
                   "cqr (KG-CQR with the verbalised subgraph as context).")
@click.option("--kgr-n", default=3, show_default=True, type=click.IntRange(1, 1000),
              help="kgr-* modes: seed documents (KG-Retriever's N).")
@click.option("--kgr-lambda", default=0.1, show_default=True, type=float,
              help="kgr-attentive/multihop: admission threshold (KG-Retriever's lambda).")
@_cqr_options
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N questions.")
@json_option
@pass_context
def eval_retrieval_command(ctx: Context, questions_file: Path, ks: str, modes: str,
                           kgr_n: int, kgr_lambda: float, cqr_k: int, beam_width: int,
                           max_path: int, complete_k: int, alpha: float, limit: int | None,
                           as_json: bool) -> None:
    """Recall@k of supporting documents per retrieval mode, without an LLM."""
    from kgdb.retrieve.documents import evaluate, read_questions

    cutoffs = _cutoffs(ks)
    questions = read_questions(questions_file)[:limit]
    result = evaluate(ctx.store, ctx.embedder, questions, ks=cutoffs,
                      modes=[m.strip() for m in modes.split(",") if m.strip()],
                      kgr_n=kgr_n, kgr_lambda=kgr_lambda,
                      cqr=_cqr_settings(cqr_k, beam_width, max_path, complete_k, alpha))
    if as_json:
        emit_json(result.to_json())
        return
    click.echo(f"{result.questions} questions")
    for mode, recalls in result.recall.items():
        click.echo(f"  {mode:13} " + "  ".join(f"{k} {v:.3f}" for k, v in recalls.items()))


@eval_group.command("beam")
@click.option("--questions", "questions_files", multiple=True, required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="MetaQA question file(s) (dev_2hop.tsv, dev_3hop.tsv).")
@click.option("--k", "ks", default="1,3,10", show_default=True,
              help="Comma-separated cut-offs for hits@k.")
@click.option("--beam-width", default=3, show_default=True, type=click.IntRange(1, 100),
              help="Paths kept per expanded path.")
@click.option("--direction", type=click.Choice(["both", "out"]), default="both",
              show_default=True,
              help="both: a path may follow a fact either way; out: head to tail only.")
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
    opened, embedder = _open()
    with opened as store:
        report = evaluate_beam(store, embedder, questions, ks=cutoffs, width=beam_width,
                               direction=direction)
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
    except ValueError:
        raise click.BadParameter(f"not a list of integers: {ks!r}", param_hint="--k") from None
    if not cutoffs or min(cutoffs) < 1:
        raise click.BadParameter("give positive cut-offs, e.g. 2,5,10", param_hint="--k")
    return tuple(sorted(set(cutoffs)))
