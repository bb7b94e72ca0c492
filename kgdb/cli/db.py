"""``kgdb db``: the embedded FalkorDB server."""

from __future__ import annotations

from typing import Any

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.neo4j import echo_stopped
from kgdb.cli.output import emit_json, json_option
from kgdb.errors import KgdbError


@click.group()
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
    echo_stopped(_server(ctx).stop(), as_json)


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
