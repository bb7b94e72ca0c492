"""``kgdb stats`` and ``kgdb cypher``."""

from __future__ import annotations

import json
from typing import Any

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.output import elide_vectors, emit_json, json_option, jsonable
from kgdb.cypher import housekeeping
from kgdb.retrieve.readiness import INDEXES, SolverReadiness


@click.command()
@json_option
@pass_context
def stats(ctx: Context, as_json: bool) -> None:
    """Counts by label and relationship type; indexes and their state; whether each solver
    is ready (and, when not, the command that makes it so)."""
    from kgdb.retrieve.readiness import readiness

    store = ctx.store
    labels = {r["label"]: r["count"] for r in store.run(housekeeping.label_counts()).records()}
    types = {r["type"]: r["count"]
             for r in store.run(housekeeping.relationship_type_counts()).records()}
    infos = store.indexes()
    indexes: list[dict[str, Any]] = [
        {"kind": i.kind, "label": i.label, "properties": list(i.properties), "state": i.state,
         **({"dimension": i.dimension} if i.dimension else {})} for i in infos]
    engine = {**store.server_info(), "plugins": store.plugins()}
    solvers = readiness(store)
    if as_json:
        emit_json({"engine": engine, "labels": labels,
                   "relationship_types": types, "indexes": indexes,
                   "solvers": [s.to_json() for s in solvers]})
        return
    click.echo(f"database: {store.address}")
    edition = f" ({engine['edition']})" if engine.get("edition") else ""
    plugins = ", ".join(f"{p['title']} {p['version'] or '(version not reported)'}"
                        for p in engine["plugins"]) or "none"
    click.echo(f"engine: {engine['engine']} {engine['version']}{edition}; plugins: {plugins}")
    click.echo("nodes by label:")
    for name, count in labels.items():
        click.echo(f"  {name:<28} {count:>10,}")
    click.echo("relationships by type:")
    for name, count in types.items():
        click.echo(f"  {name:<28} {count:>10,}")
    click.echo("indexes:")
    for i in indexes:
        dim = f" [{i['dimension']} dims]" if "dimension" in i else ""
        click.echo(f"  {i['kind']:<9} :{i['label']}({', '.join(i['properties'])}){dim} "
                   f"{i['state']}")
    click.echo("solvers:")
    for line in readiness_lines(solvers):
        click.echo(line)


def readiness_lines(solvers: list[SolverReadiness]) -> list[str]:
    """``  NAME  ready`` per solver, or what it lacks and, below, the command that builds
    it (80 columns)."""
    lines = []
    for s in solvers:
        lacking = [i for i in s.indexes if i.state != "ready"]
        if not lacking:
            lines.append(f"  {s.solver:<15} ready")
            continue
        first = next((i for i in lacking if i.state == "missing"), lacking[0])
        state = "not ready" if s.state == "missing" else "stale"
        lines.append(f"  {s.solver:<15} {state}: {INDEXES[first.name].description} "
                     f"({first.detail})")
        lines.append(f"  {'':<15} run: {first.command}")
    return lines


# ---------------------------------------------------------------------- cypher
def _parse_param(text: str) -> tuple[str, Any]:
    from kgdb.text import TextError, check_param_name, check_statement, limits, text_problem

    key, sep, raw = text.partition("=")
    if not sep:
        raise click.BadParameter(f"expected NAME=VALUE, got {text[:80]!r}", param_hint="--param")
    problem = check_param_name(key)
    if problem:
        raise click.BadParameter(problem, param_hint="--param")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    except RecursionError:
        # from None: the cause is a recursion a thousand frames deep that says no
        # more than the message
        raise click.BadParameter(f"{key}: the JSON value is nested too deeply",
                                 param_hint="--param") from None
    # A string may end up in an indexed key (MERGE (:Entity {id: $v})), so --param strings
    # follow the key limits of the text contract (kgdb/text.py).
    try:
        check_statement("", {key: value})
    except TextError as exc:
        raise click.BadParameter(str(exc), param_hint="--param") from exc
    if isinstance(value, str):
        problem = text_problem(value, key=True, limit=limits())
        if problem:
            raise click.BadParameter(f"{key}: the value {problem}", param_hint="--param")
    return key, value


@click.command()
@click.argument("query")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="A parameter; VALUE is JSON if it parses, else a string. Repeatable.")
@click.option("--write", is_flag=True, help="Allow the query to write.")
@click.option("--vectors", is_flag=True,
              help="Print embedding vectors in full (default: their size, <vector: 384 floats>).")
@json_option
@pass_context
def cypher(ctx: Context, query: str, params: tuple[str, ...], write: bool, vectors: bool,
           as_json: bool) -> None:
    """Run a Cypher QUERY (read-only unless --write)."""
    values = dict(_parse_param(p) for p in params)
    result = ctx.store.run(query, values, write=write)
    shown = jsonable if vectors else elide_vectors
    if as_json:
        emit_json({"columns": result.columns, "rows": shown(result.records()),
                   "stats": result.stats})
        return
    if result.columns:
        click.echo("\t".join(result.columns))
        for row in result.rows:
            click.echo("\t".join(_cell(shown(v)) for v in row))
    changes = {k: v for k, v in result.stats.items() if v and k != "run_time_ms"}
    if changes:
        click.echo(", ".join(f"{k.replace('_', ' ')}: {int(v)}" for k, v in changes.items()))


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
