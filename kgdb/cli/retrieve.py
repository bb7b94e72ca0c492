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
from kgdb.retrieve.simgrag import DISTINCT, ENGINES, Retrieval, describe, search

F = TypeVar("F", bound=Callable[..., Any])

SOLVERS = ["simgrag", "lf"]
"""``kgdb ask --solver``: SimGRAG (pattern graph, top-k subgraphs) or KAG logical forms
(plan, execute, judge, re-plan)."""


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
                     help="cypher: one generated statement per component; optimized: the "
                          "paper's pruned greedy search, one Cypher step per expansion."),
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
@json_option
def ask_command(question: str, solver: str, verify: bool, rounds: int, examples: str, k: int,
                k_nodes: int, k_relations: int, k_types: int, engine: str, distinct: str,
                as_json: bool) -> None:
    """Answer QUESTION from the graph: pattern, top-k subgraphs, answer citing them
    (--solver simgrag), or a logical-form plan run against the graph (--solver lf)."""
    from kgdb.llm import ChatClient
    from kgdb.retrieve.simgrag_llm import generate_answer, load_examples, query_to_pattern

    if solver == "lf":
        if verify:
            raise click.UsageError("--verify works with --solver simgrag")
        from kgdb.solve.lf_solver import solve_lf

        opened, embedder = _open()
        with opened as store:
            solved = solve_lf(question, store, embedder, ChatClient(), rounds)
        if as_json:
            emit_json(solved.to_json())
        else:
            click.echo(solved.render())
        return

    shots = load_examples(examples)
    client = ChatClient()
    pattern = query_to_pattern(client, question, shots)
    opened, embedder = _open()
    with opened as store:
        result = search(store, embedder, pattern, k=k, k_nodes=k_nodes,
                        k_relations=k_relations, k_types=k_types, engine=engine,
                        distinct=distinct)
    answer = generate_answer(client, question, result.subgraphs, shots, verify=verify)
    if as_json:
        payload = {"question": question, "solver": solver, "answer": answer.text,
                   "pattern": pattern_triples(pattern), **result.to_json()}
        if verify:
            payload["verdict"] = answer.verdict
        emit_json(payload)
        return
    click.echo(answer.text)
    if verify:
        click.echo(f"\nverdict: {answer.verdict}")
    click.echo("\npattern: " + ", ".join(f"({h!r}, {r!r}, {t!r})"
                                         for h, r, t in pattern_triples(pattern)))
    click.echo("\nevidence:")
    _print_retrieval(result)


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
@click.option("--questions", "questions_files", multiple=True, required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="MetaQA question file(s) whose oracle patterns are retrieved.")
@_metaqa_retrieval_options
@click.option("--limit", type=click.IntRange(1), help="Only the first N questions per file.")
@json_option
def bench_retrieve_command(questions_files: tuple[Path, ...], k: int, k_nodes: int,
                           k_relations: int, k_types: int, engine: str, distinct: str,
                           limit: int | None, as_json: bool) -> None:
    """Latency percentiles of SimGRAG retrieval, split into embedding, vector search, matching."""
    report = _metaqa_run(questions_files, "oracle", limit, k=k, k_nodes=k_nodes,
                         k_relations=k_relations, k_types=k_types, engine=engine,
                         distinct=distinct)
    if as_json:
        emit_json({hop: {"questions": row["questions"], "latency_ms": row["latency_ms"]}
                   for hop, row in report["hops"].items()})
        return
    for hop, row in report["hops"].items():
        click.echo(f"{hop} ({row['questions']} questions, engine {engine})")
        for phase, p in row["latency_ms"].items():
            click.echo(f"    {phase:<26} p50 {p['p50']:8.2f}  p90 {p['p90']:8.2f}  "
                       f"p99 {p['p99']:8.2f}  max {p['max']:8.2f} ms")




@eval_group.command("retrieval")
@click.option("--questions", "questions_file", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="JSONL {question, supporting: [document ids or titles]}, or MuSiQue's "
                   "questions.json as it is.")
@click.option("--k", "ks", default="2,5,10", show_default=True,
              help="Comma-separated cut-offs for recall@k.")
@click.option("--mode", "modes", default="vector,entities,hybrid", show_default=True,
              help="Comma-separated modes: vector (chunk vector search), entities (the "
                   "question's entities and their supporting chunks), hybrid (both, fused).")
@click.option("--kgr-n", default=3, show_default=True, type=click.IntRange(1, 1000),
              help="kgr-* modes: seed documents (KG-Retriever's N).")
@click.option("--kgr-lambda", default=0.1, show_default=True, type=float,
              help="kgr-attentive/multihop: admission threshold (KG-Retriever's lambda).")
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N questions.")
@json_option
@pass_context
def eval_retrieval_command(ctx: Context, questions_file: Path, ks: str, modes: str,
                           kgr_n: int, kgr_lambda: float, limit: int | None,
                           as_json: bool) -> None:
    """Recall@k of supporting documents per retrieval mode, without an LLM."""
    from kgdb.retrieve.documents import evaluate, read_questions

    try:
        cutoffs = tuple(int(k) for k in ks.split(",") if k.strip())
    except ValueError:
        raise click.BadParameter(f"not a list of integers: {ks!r}", param_hint="--k") from None
    if not cutoffs or min(cutoffs) < 1:
        raise click.BadParameter("give positive cut-offs, e.g. 2,5,10", param_hint="--k")
    questions = read_questions(questions_file)[:limit]
    result = evaluate(ctx.store, ctx.embedder, questions, ks=cutoffs,
                      modes=[m.strip() for m in modes.split(",") if m.strip()],
                      kgr_n=kgr_n, kgr_lambda=kgr_lambda)
    if as_json:
        emit_json(result.to_json())
        return
    click.echo(f"{result.questions} questions")
    for mode, recalls in result.recall.items():
        click.echo(f"  {mode:13} " + "  ".join(f"{k} {v:.3f}" for k, v in recalls.items()))
