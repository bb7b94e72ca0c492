"""``kgdb neo4j``: a local Neo4j 5.26 started from Maven Central."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.output import emit_json, json_option


@click.group("neo4j")
def neo4j_group() -> None:
    """A local Neo4j 5.26 with APOC and GDS, started from Maven Central (Java 17 + Maven)."""


home_option = click.option(
    "--home", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Its folder (data, logs, password); default $KGDB_HOME/neo4j.")


def _local_neo4j(ctx: Context, home: Path | None) -> Any:
    from kgdb.engine.neo4j_local import LocalNeo4j

    return LocalNeo4j(home or ctx.settings.home / "neo4j")


def echo_stopped(stopped: bool, as_json: bool) -> None:
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
@click.option("--service-url", default=None,
              help="The kgdb serve URL that custom.kgdb.ask/embed call (apoc.static.kgdb.url).")
@click.option("--service-token-file", type=click.Path(exists=True, dir_okay=False,
                                                       path_type=Path), default=None,
              help="A file holding the token those calls send (apoc.static.kgdb.token).")
@json_option
@pass_context
def neo4j_start(ctx: Context, home: Path | None, port: int | None, service_url: str | None,
                service_token_file: Path | None, as_json: bool) -> None:
    """Start it (or find it running) and print KGDB_URI, NEO4J_USERNAME and NEO4J_PASSWORD,
    one NAME=value per line: eval "$(kgdb neo4j start)"."""
    from kgdb.errors import ConfigError

    server = _local_neo4j(ctx, home)
    if (service_url is None) != (service_token_file is None):
        raise click.UsageError("give --service-url and --service-token-file together")
    if service_url and service_token_file:
        changed = server.configure_service(service_url,
                                           service_token_file.read_text().strip())
        if changed and server.status() is not None:
            raise ConfigError("Neo4j is running with other service settings: restart it "
                              "(kgdb neo4j stop, then start) so that APOC reads them")
    _echo_settings(server.settings(server.ensure_started(port)), as_json)


@neo4j_group.command("stop")
@home_option
@json_option
@pass_context
def neo4j_stop(ctx: Context, home: Path | None, as_json: bool) -> None:
    """Stop it (data stays in its folder)."""
    echo_stopped(_local_neo4j(ctx, home).stop(), as_json)


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
        info.update(pid=state.pid, uri=state.uri, http=state.http_url)
    if as_json:
        emit_json(info)
    elif state:
        click.echo(f"running: Neo4j on {state.uri} (pid {state.pid}; home {server.home})")
    else:
        click.echo(f"not running (home {server.home})")


@neo4j_group.command("plugin")
@json_option
def neo4j_plugin(as_json: bool) -> None:
    """Build kgdb's Neo4j plugin (once per source state; Java 17 + Maven) and print the jar's
    path: copy it into a Neo4j 5.26+ server's plugins/ and allow ``kgdb.*``
    (dbms.security.procedures.allowlist) to give that server kgdb's native back ends."""
    from kgdb.engine.neo4j_plugin import VERSION, plugin_jar

    jar = plugin_jar()
    if as_json:
        emit_json({"jar": str(jar), "version": VERSION, "bytes": jar.stat().st_size})
    else:
        click.echo(str(jar))
