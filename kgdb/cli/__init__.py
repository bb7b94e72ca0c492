"""The ``kgdb`` command line. Expected failures print one line and exit 1 (2 for usage)."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kgdb.cli.context import Context
from kgdb.engine.base import NodeValue, PathValue, RelationshipValue
from kgdb.errors import KgdbError
from kgdb.cli.records import records_command
from kgdb.cli.lf import lf
from kgdb.cli.rules import rules_group

pass_context = click.make_pass_decorator(Context)


def jsonable(value: Any) -> Any:
    if isinstance(value, (NodeValue, RelationshipValue, PathValue)):
        return value.to_json()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(jsonable(data), indent=2, ensure_ascii=False))


json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--uri", envvar="KGDB_URI", default=None,
              help="neo4j://... or bolt://... for Neo4j; unset for the embedded FalkorDB.")
@click.option("--graph", default=None, help="Graph name on FalkorDB (KGDB_GRAPH, default kgdb).")
@click.version_option(package_name="kgdb")
@click.pass_context
def cli(ctx: click.Context, uri: str | None, graph: str | None) -> None:
    """kgdb: knowledge-augmented retrieval inside a graph database."""
    ctx.obj = Context(uri, graph)
    ctx.call_on_close(ctx.obj.close)


# ---------------------------------------------------------------------- neo4j
@cli.group("neo4j")
def neo4j_group() -> None:
    """A local Neo4j 5.26 with APOC and GDS, started from Maven Central (Java 17 + Maven)."""


home_option = click.option(
    "--home", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Its folder (data, logs, password); default $KGDB_HOME/neo4j.")


def _local_neo4j(ctx: Context, home: Path | None) -> Any:
    from kgdb.engine.neo4j_local import LocalNeo4j

    return LocalNeo4j(home or ctx.settings.home / "neo4j")


def _echo_stopped(stopped: bool, as_json: bool) -> None:
    if as_json:
        emit_json({"stopped": stopped})
    else:
        click.echo("stopped" if stopped else "not running")


def _echo_settings(settings: dict[str, str], as_json: bool) -> None:
    if as_json:
        emit_json(settings)
    else:
        for name, value in settings.items():
            click.echo(f"{name}={value}")


@neo4j_group.command("start")
@home_option
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Bolt port on 127.0.0.1 (default: a free one).")
@json_option
@pass_context
def neo4j_start(ctx: Context, home: Path | None, port: int | None, as_json: bool) -> None:
    """Start it (or find it running) and print KGDB_URI, NEO4J_USERNAME and NEO4J_PASSWORD,
    one NAME=value per line: eval "$(kgdb neo4j start)"."""
    server = _local_neo4j(ctx, home)
    _echo_settings(server.settings(server.ensure_started(port)), as_json)


@neo4j_group.command("stop")
@home_option
@json_option
@pass_context
def neo4j_stop(ctx: Context, home: Path | None, as_json: bool) -> None:
    """Stop it (data stays in its folder)."""
    _echo_stopped(_local_neo4j(ctx, home).stop(), as_json)


@neo4j_group.command("status")
@home_option
@json_option
@pass_context
def neo4j_status(ctx: Context, home: Path | None, as_json: bool) -> None:
    """Whether it runs, and the settings to use when it does."""
    server = _local_neo4j(ctx, home)
    state = server.status()
    info: dict[str, Any] = {"running": state is not None, "home": str(server.home)}
    if state:
        info.update(pid=state.pid, uri=state.uri)
    if as_json:
        emit_json(info)
    elif state:
        click.echo(f"running: Neo4j on {state.uri} (pid {state.pid}; home {server.home})")
    else:
        click.echo(f"not running (home {server.home})")


# ---------------------------------------------------------------------- db
@cli.group()
def db() -> None:
    """Manage the embedded FalkorDB server."""


def _server(ctx: Context) -> Any:
    from kgdb.engine.embedded import EmbeddedServer

    if not ctx.settings.embedded:
        raise KgdbError(f"'kgdb db' manages the embedded FalkorDB; KGDB_URI points at "
                        f"{ctx.settings.uri}")
    return EmbeddedServer(ctx.settings.home)


@db.command("start")
@json_option
@pass_context
def db_start(ctx: Context, as_json: bool) -> None:
    """Start the embedded FalkorDB (it also starts on first use)."""
    server = _server(ctx)
    state = server.ensure_started()
    info = {"running": True, "pid": state.pid, "address": state.address,
            "version": state.version, "data_dir": str(server.data_dir)}
    if as_json:
        emit_json(info)
    else:
        click.echo(f"embedded FalkorDB {state.version} running on {state.address} "
                   f"(pid {state.pid}, data {server.data_dir})")


@db.command("stop")
@json_option
@pass_context
def db_stop(ctx: Context, as_json: bool) -> None:
    """Stop the embedded FalkorDB (data stays on disk)."""
    _echo_stopped(_server(ctx).stop(), as_json)


@db.command("status")
@json_option
@pass_context
def db_status(ctx: Context, as_json: bool) -> None:
    """Show whether the embedded FalkorDB runs, where, and its graphs."""
    server = _server(ctx)
    state = server.status()
    info: dict[str, Any] = {"running": state is not None, "data_dir": str(server.data_dir),
                            "log": str(server.log_file)}
    if state:
        info.update(pid=state.pid, address=state.address, version=state.version)
        info["graphs"] = ctx.store.graphs()  # type: ignore[attr-defined]
    if as_json:
        emit_json(info)
    elif state:
        graphs = ", ".join(info["graphs"]) or "-"
        click.echo(f"running: FalkorDB {state.version} on {state.address} (pid {state.pid}); "
                   f"graphs: {graphs}; data {server.data_dir}")
    else:
        click.echo(f"not running (data {server.data_dir})")


@db.command("reset")
@click.option("--yes", is_flag=True, help="Confirm deleting everything in the graph.")
@pass_context
def db_reset(ctx: Context, yes: bool) -> None:
    """Delete every node, relationship, index and constraint of the current graph."""
    if not yes:
        raise click.UsageError("this deletes the whole graph; add --yes to confirm")
    ctx.store.reset()
    click.echo(f"reset {ctx.store.address}")


# ---------------------------------------------------------------------- schema
@cli.group()
def schema() -> None:
    """SPG-style schemas: check, print DDL, apply."""


@schema.command("apply")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@json_option
@pass_context
def schema_apply(ctx: Context, file: Path, as_json: bool) -> None:
    """Create the catalog, constraints and indexes of FILE (idempotent)."""
    from kgdb.schema import apply_schema, parse_schema_file

    parsed = parse_schema_file(file)
    report = apply_schema(ctx.store, parsed, ctx.embedder)
    if as_json:
        emit_json(report.to_json())
        return
    for line in report.created:
        click.echo(f"created {line}")
    for note in report.notes:
        click.echo(f"note: {note}")
    click.echo(f"{len(report.created)} created, {len(report.existing)} already present; "
               f"{report.entity_types} types, {report.relation_types} relation types, "
               f"{report.concepts} concepts")


@schema.command("reindex")
@json_option
@pass_context
def schema_reindex(ctx: Context, as_json: bool) -> None:
    """Rebuild the vector indexes (after many updates of embedded nodes on FalkorDB)."""
    from kgdb.schema.apply import rebuild_vector_indexes

    rebuilt = rebuild_vector_indexes(ctx.store)
    if as_json:
        emit_json({"rebuilt": rebuilt})
    else:
        click.echo(f"rebuilt {len(rebuilt)} vector indexes: {', '.join(rebuilt) or '-'}")


@schema.command("ddl")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--dialect", "dialect_name", default="neo4j", show_default=True)
@click.option("--dimension", default=384, show_default=True, help="Embedding dimension.")
def schema_ddl(file: Path | None, dialect_name: str, dimension: int) -> None:
    """Print the DDL a schema needs, for one dialect, without a database."""
    from kgdb.schema import Schema, parse_schema_file
    from kgdb.schema.export import schema_ddl as ddl

    parsed = parse_schema_file(file) if file else Schema(source="<built-in>")
    click.echo(ddl(parsed, dialect_name, dimension), nl=False)


# ---------------------------------------------------------------------- load
@cli.group()
def load() -> None:
    """Load data into the graph."""


@load.command("triples")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--sep", default=None, help="Field separator for tsv (default: tab, else '|').")
@click.option("--format", "fmt", type=click.Choice(["tsv", "csv", "jsonl"]), default=None,
              help="Default: from the file extension.")
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True)
@click.option("--rejects", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where --on-error skip writes bad lines (default FILE.rejects).")
@click.option("--batch-size", default=5000, show_default=True, type=click.IntRange(1, 1_000_000))
@click.option("--no-progress", is_flag=True)
@json_option
@pass_context
def load_triples_cmd(ctx: Context, file: Path, sep: str | None, fmt: str | None, on_error: str,
                     rejects: Path | None, batch_size: int, no_progress: bool,
                     as_json: bool) -> None:
    """Load subject|predicate|object triples (MERGE: loading twice changes nothing)."""
    from kgdb.load.triples import load_triples

    report = load_triples(ctx.store, ctx.embedder, file, fmt=fmt, sep=sep, on_error=on_error,
                          batch_size=batch_size, rejects_path=rejects, progress=not no_progress)
    if as_json:
        emit_json(report.to_json())
        return
    click.echo(f"loaded {report.triples} triples ({len(report.predicates)} predicates), "
               f"{report.entities_seen} entities ({report.entities_written} written) in "
               f"{report.seconds:.1f} s")
    if report.rejected:
        click.echo(f"rejected {report.rejected} lines -> {report.rejects_file}")


load.add_command(records_command)
cli.add_command(rules_group)


# ---------------------------------------------------------------------- stats
@cli.command()
@json_option
@pass_context
def stats(ctx: Context, as_json: bool) -> None:
    """Counts by label and relationship type; indexes and their state."""
    store = ctx.store
    d = store.dialect
    labels = {r["label"]: r["count"] for r in store.run(d.label_counts()).records()}
    types = {r["type"]: r["count"] for r in store.run(d.relationship_type_counts()).records()}
    infos = store.indexes()
    indexes: list[dict[str, Any]] = [
        {"kind": i.kind, "label": i.label, "properties": list(i.properties), "state": i.state,
         **({"dimension": i.dimension} if i.dimension else {})} for i in infos]
    engine = {**store.server_info(), "plugins": store.plugins()}
    if as_json:
        emit_json({"engine": engine, "labels": labels,
                   "relationship_types": types, "indexes": indexes})
        return
    click.echo(store.address)
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
        raise click.BadParameter(f"{key}: the JSON value is nested too deeply",
                                 param_hint="--param") from None
    # A string may end up in an indexed key (MERGE (:Entity {id: $v})), so --param strings
    # follow the key limits of the text contract (kgdb/text.py).
    try:
        check_statement("", {key: value})
    except TextError as exc:
        raise click.BadParameter(str(exc), param_hint="--param") from None
    if isinstance(value, str):
        problem = text_problem(value, key=True, limit=limits())
        if problem:
            raise click.BadParameter(f"{key}: the value {problem}", param_hint="--param")
    return key, value


@cli.command()
@click.argument("query")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="A parameter; VALUE is JSON if it parses, else a string. Repeatable.")
@click.option("--write", is_flag=True, help="Allow the query to write.")
@json_option
@pass_context
def cypher(ctx: Context, query: str, params: tuple[str, ...], write: bool, as_json: bool) -> None:
    """Run a Cypher QUERY (read-only unless --write)."""
    values = dict(_parse_param(p) for p in params)
    result = ctx.store.run(query, values, write=write)
    if as_json:
        emit_json({"columns": result.columns, "rows": result.records(), "stats": result.stats})
        return
    if result.columns:
        click.echo("\t".join(result.columns))
        for row in result.rows:
            click.echo("\t".join(_cell(v) for v in row))
    changes = {k: v for k, v in result.stats.items() if v and k != "run_time_ms"}
    if changes:
        click.echo(", ".join(f"{k.replace('_', ' ')}: {int(v)}" for k, v in changes.items()))


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(jsonable(value), ensure_ascii=False)


# ---------------------------------------------------------------------- bench
@cli.group()
def bench() -> None:
    """Benchmarks that print numbers (JSON with --json)."""


@bench.command("load")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--sep", default=None)
@click.option("--cold", is_flag=True, help="Use an empty embedding cache (cold start).")
@click.option("--keep", is_flag=True, help="Keep the benchmark graph afterwards.")
@json_option
@pass_context
def bench_load(ctx: Context, file: Path, sep: str | None, cold: bool, keep: bool,
               as_json: bool) -> None:
    """Load FILE into a fresh graph and report entities/s, triples/s, embedding and total time."""
    from kgdb.bench import bench_load as run

    result = run(ctx.settings, file, sep=sep, cold=cold, keep=keep, progress=not as_json)
    if as_json:
        emit_json(result)
    else:
        for key, value in result.items():
            click.echo(f"{key}: {value}")


# ---------------------------------------------------------------------- demo
@cli.command()
@pass_context
def demo(ctx: Context) -> None:
    """Load the bundled movie sample into graph 'demo' and answer a question from it."""
    from kgdb.demo import run_demo

    run_demo(ctx.settings, echo=click.echo)


# ---------------------------------------------------------------------- logical forms
cli.add_command(lf)


# ---------------------------------------------------------------------- simgrag
from kgdb.cli.retrieve import (  # noqa: E402 - registered after the groups exist
    ask_command,
    bench_retrieve_command,
    eval_group,
    pattern_command,
)

cli.add_command(pattern_command)
cli.add_command(ask_command)
cli.add_command(eval_group)
bench.add_command(bench_retrieve_command)


# ---------------------------------------------------------------------- entry point
def _configure_logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("kgdb: %(levelname)s: %(message)s"))
    logger = logging.getLogger("kgdb")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if os.environ.get("KGDB_DEBUG") else logging.WARNING)
    logger.propagate = False
    # The Neo4j driver logs each retry of a managed transaction as a multi-line warning;
    # kgdb reports the outcome itself, so those show only with KGDB_DEBUG.
    driver_log = logging.getLogger("neo4j")
    driver_log.addHandler(handler if os.environ.get("KGDB_DEBUG") else logging.NullHandler())
    driver_log.propagate = False


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def main(argv: list[str] | None = None, run: Callable[..., Any] | None = None) -> None:
    """Run the CLI; KgdbError becomes one line on stderr and exit status 1."""
    _configure_logging()
    try:
        (run or cli.main)(args=argv, prog_name="kgdb", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("kgdb: aborted", err=True)
        sys.exit(1)
    except click.UsageError as exc:  # click's own "Error:" lines become kgdb's, exit 2
        where = exc.ctx.command_path if exc.ctx is not None else "kgdb"
        click.echo(f"kgdb: error: {_one_line(exc.format_message())} (see '{where} --help')",
                   err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"kgdb: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KgdbError as exc:
        click.echo(f"kgdb: error: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("kgdb: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug: still no traceback unless asked for
        if os.environ.get("KGDB_DEBUG"):
            raise
        click.echo(f"kgdb: internal error: {type(exc).__name__}: {exc} "
                   "(set KGDB_DEBUG=1 for the traceback)", err=True)
        sys.exit(1)
