"""CLI glue for logical forms: ``kgdb lf compile`` and ``kgdb lf run`` (``kgdb ask --solver
lf`` lives with the other ``ask`` in :mod:`kgdb.cli.retrieve`). Commands use the store and
embedder of the ``kgdb`` invocation (:func:`kgdb.cli.context.current_context`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from kgdb.cli.context import current_context
from kgdb.cli.output import emit_json, json_option


def _read(file: Path) -> str:
    from kgdb.text import read_text_file

    return read_text_file(file, what="logical form")


def _llm_or_none() -> Any:
    from kgdb.llm.client import ChatClient, LlmSettings

    settings = LlmSettings.from_env()
    if not settings.api_key and not settings.base_url:
        return None
    return ChatClient(settings)


def render_compiled(compiled: Any) -> str:
    """The text ``kgdb lf compile`` prints: notes, then each operation's Cypher and params."""
    from kgdb.solve.lf_compile import CypherOp

    lines = [f"// note: {note}" for note in compiled.notes]
    for op in compiled.ops:
        steps = ", ".join(str(i + 1) for i in op.steps)
        if isinstance(op, CypherOp):
            lines.append(f"// steps {steps}: {op.kind} (Cypher)")
            lines.append(op.query.statement.text + ";")
            params = dict(op.query.statement.params)
            for param, alias in op.bound.items():
                params[param] = f"<ids bound to {alias} at run time>"
            lines.append(f"// params: {json.dumps(params, ensure_ascii=False, default=str)}")
        else:
            lines.append(f"// steps {steps}: {op.kind} (Python: {op.reason})")
    return "\n".join(lines)


@click.group("lf")
def lf() -> None:
    """Logical forms (KAG): compile plans to Cypher and run them."""


@lf.command("compile")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--dialect", "dialect_name", type=click.Choice(["neo4j", "falkordb"]),
              default="neo4j", show_default=True)
@click.option("--link", "use_link", is_flag=True,
              help="Link names through the database first (otherwise names are used as written).")
@json_option
def lf_compile(file: Path, dialect_name: str, use_link: bool,
               as_json: bool) -> None:
    """Print the Cypher and parameters FILE compiles to, without running it."""
    from kgdb.dialects import get_dialect
    from kgdb.dsl.logical_form import parse_plan
    from kgdb.solve.lf_compile import CypherOp, compile_plan, store_linker

    plan = parse_plan(_read(file), str(file))
    runtime = current_context()
    linker = store_linker(runtime.store, runtime.embedder) if use_link else None
    compiled = compile_plan(plan, get_dialect(dialect_name), linker)
    if as_json:
        emit_json({
            "dialect": compiled.dialect, "linked": compiled.linked,
            "notes": list(compiled.notes),
            "ops": [
                {"steps": [i + 1 for i in op.steps], "kind": op.kind,
                 "cypher": op.query.statement.text, "params": op.query.statement.params,
                 "bound_at_run_time": op.bound}
                if isinstance(op, CypherOp) else
                {"steps": [i + 1 for i in op.steps], "kind": op.kind, "python": op.reason}
                for op in compiled.ops
            ],
        })
        return
    click.echo(render_compiled(compiled))


@lf.command("run")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--no-link", is_flag=True, help="Match names exactly as written (no linking).")
@json_option
def lf_run(file: Path, no_link: bool, as_json: bool) -> None:
    """Run FILE on the graph and print each step's Cypher, its result, and the output."""
    from kgdb.dsl.logical_form import parse_plan
    from kgdb.solve.lf_compile import store_linker
    from kgdb.solve.lf_run import Executor

    plan = parse_plan(_read(file), str(file))
    runtime = current_context()
    embedder = runtime.embedder  # loads the model only if linking or chunk search embeds
    executor = Executor(runtime.store,
                        linker=None if no_link else store_linker(runtime.store, embedder),
                        embedder=embedder, llm=_llm_or_none())
    result = executor.run(plan)
    if as_json:
        emit_json(result.to_json())
    else:
        click.echo(result.render())
