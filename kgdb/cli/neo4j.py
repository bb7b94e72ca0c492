"""``kgdb neo4j``: a local Neo4j 5.26 started from Maven Central."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.output import emit_json, json_option, waiting
from kgdb.cli.serve import rules_option


@click.group("neo4j")
def neo4j_group() -> None:
    """A local Neo4j 5.26 with APOC and GDS, started from Maven Central (Java 17 + Maven)."""


home_option = click.option(
    "--home", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Its folder (data, logs, password); default $KGDB_HOME/neo4j.")


def _local_neo4j(ctx: Context, home: Path | None, **memory: Any) -> Any:
    from kgdb.engine.neo4j_local import LocalNeo4j

    return LocalNeo4j(home or ctx.settings.home / "neo4j", **memory)


def _memory_size(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A JVM / Neo4j memory size: digits and a unit k, m or g (``6g``), or ``auto``."""
    if value is None or value.lower() == "auto":
        return None if value is None else "auto"
    if not re.fullmatch(r"[1-9][0-9]{0,6}[kKmMgG]", value):
        raise click.BadParameter(f"{value!r} is not a size like 512m or 6g (or auto)")
    return value.lower()


def _bytes(size: str) -> int:
    return int(size[:-1]) << {"k": 10, "m": 20, "g": 30}[size[-1]]


def _fixed_size(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """:func:`_memory_size` without ``auto`` (a restart keeps the sizes it is given)."""
    size = _memory_size(ctx, param, value)
    if size == "auto":
        raise click.BadParameter("give a size like 512m or 6g here (auto is kgdb neo4j "
                                 "start's)")
    return size


def _memory_plan(ctx: Context, home: Path | None, heap: str, pagecache: str,
                 memory: str | None) -> tuple[str, str, Any]:
    """The heap and page cache to start with: the sizes given, or for ``auto`` the plan of
    kgdb/engine/neo4j_memory.py (Neo4j's own rule, the page cache capped by the store)."""
    if heap != "auto" and pagecache != "auto":
        return heap, pagecache, None
    from kgdb.engine import neo4j_memory

    found = neo4j_memory.plan(home or ctx.settings.home / "neo4j",
                              memory=_bytes(memory) if memory else None)
    return (neo4j_memory.jvm_size(found.heap) if heap == "auto" else heap,
            neo4j_memory.jvm_size(found.pagecache) if pagecache == "auto" else pagecache, found)


def echo_stopped(stopped: bool, as_json: bool) -> None:
    if as_json:
        emit_json({"stopped": stopped})
    else:
        click.echo("stopped" if stopped else "not running")


def _start_with_service(ctx: Context, server: Any, rule_specs: tuple[str, ...],
                        ports: dict[str, int | None], as_json: bool) -> None:
    from kgdb.serve.wiring import wire

    rules = {}
    for spec in rule_specs:
        name, _, file = spec.rpartition("=")
        rules[name or Path(file).stem] = Path(file)
    with waiting("starting Neo4j and kgdb serve, installing kgdb's procedures"):
        wired = wire(server, ctx.settings.home, rules, port=ports["service"],
                     bolt_port=ports["bolt"], http_port=ports["http"])
    extra = {"service_url": wired.service_url, "service_pid": wired.service_pid,
             "procedures": wired.installed}
    _echo_settings(server, server.status(), as_json, extra)


def start_command(server: Any, with_service: bool) -> str:
    """The command that reaches this same server again: its ``--home`` always (without it
    ``kgdb neo4j start`` means ``$KGDB_HOME/neo4j``, another server), its ports being those it
    runs on already."""
    import shlex

    words = ["kgdb", "neo4j", "start", "--home", str(server.home.resolve())]
    if with_service:
        words.append("--with-service")
    return shlex.join(words)


def _echo_settings(server: Any, state: Any, as_json: bool,
                   extra: dict[str, Any] | None = None) -> None:
    """The settings as ``export NAME=value`` lines for ``eval "$(kgdb neo4j start)"`` (or
    JSON), the HTTP and Browser URLs as a comment, and one line on stderr saying what runs
    and the command that reaches this same server."""
    import shlex

    settings = server.settings(state)
    browser = server.browser_url(state)
    if as_json:
        emit_json({**settings, "http_url": state.http_url, "browser_url": browser,
                   "home": str(server.home), "pid": state.pid, **(extra or {})})
        return
    for name, value in settings.items():
        click.echo(f"export {name}={shlex.quote(value)}")
    http = f"; HTTP {state.http_url}" if state.http_url else ""
    shown = f"; Neo4j Browser {browser}" if browser else ""
    click.echo(f"# Neo4j 5.26 on {state.uri}{http}{shown}")
    if extra:
        click.echo(f"# kgdb serve at {extra['service_url']} (pid {extra['service_pid']}); "
                   f"{len(extra['procedures'])} procedures installed")
    click.echo(f"Neo4j runs on {state.uri}{http}{shown} (home {server.home}). kgdb uses it only "
               f"where these variables are exported: eval \"$({start_command(server, bool(extra))})\"; "
               "check with kgdb stats.", err=True)


@neo4j_group.command("start")
@home_option
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Bolt port on 127.0.0.1 (default: 7687 when free, else a free one); taken: "
                   "an error.")
@click.option("--http-port", type=click.IntRange(1, 65535), default=None,
              help="HTTP port on 127.0.0.1 (Query API, Browser; default: 7474 when free, else "
                   "a free one); taken: an error.")
@click.option("--service-port", type=click.IntRange(1, 65535), default=None,
              help="With --with-service: the port of kgdb serve (default: 8765 when free, "
                   "else a free one); taken: an error.")
@click.option("--service-url", default=None,
              help="The kgdb serve URL that custom.kgdb.ask/embed call (apoc.static.kgdb.url).")
@click.option("--service-token-file", type=click.Path(exists=True, dir_okay=False,
                                                       path_type=Path), default=None,
              help="A file holding the token those calls send (apoc.static.kgdb.token).")
@click.option("--with-service", is_flag=True,
              help="Also wire BI tools: a service token, APOC's settings, kgdb serve in the "
                   "background and kgdb's procedures installed (needs the serve extra).")
@click.option("--heap", default="auto", show_default=True, callback=_memory_size,
              envvar="KGDB_NEO4J_HEAP",
              help="The JVM heap (-Xms and -Xmx) when it starts; auto: Neo4j's own rule "
                   "(neo4j-admin server memory-recommendation) for --memory. kgdb's plugin keeps "
                   "its in-memory vector copies in a quarter of it: float32 (2,312 bytes a "
                   "384-d row) while they fit, int8 (400 bytes) beyond.")
@click.option("--pagecache", default="auto", show_default=True, callback=_memory_size,
              envvar="KGDB_NEO4J_PAGECACHE",
              help="Neo4j's page cache when it starts; auto: the store's size and a quarter "
                   "(at least 512m), at most Neo4j's own recommendation for --memory.")
@click.option("--vector-copy", type=click.Choice(["auto", "float32", "int8"]), default="auto",
              show_default=True, envvar="KGDB_NEO4J_VECTOR_COPY",
              help="The plugin's in-memory copies of vector indexes: float32 (exact scan with "
                   "a screen), int8 (a fifth of the memory at 384-d; exact distances re-ranked "
                   "from the store), or auto: float32 while they fit a quarter of the heap.")
@click.option("--memory", default=None, callback=_memory_size,
              help="The memory Neo4j may take, for the auto sizes (default: the machine's, "
                   "as neo4j-admin assumes).")
@rules_option
@json_option
@pass_context
def neo4j_start(ctx: Context, home: Path | None, port: int | None, http_port: int | None,
                service_port: int | None, service_url: str | None,
                service_token_file: Path | None, with_service: bool, heap: str, pagecache: str,
                vector_copy: str, memory: str | None, rule_specs: tuple[str, ...],
                as_json: bool) -> None:
    """Start it (or find it running) and print KGDB_URI, NEO4J_USERNAME and NEO4J_PASSWORD as
    `export NAME=value` lines for the shell: eval "$(kgdb neo4j start)"."""
    from kgdb.errors import ConfigError

    if memory == "auto":
        raise click.BadParameter("give a size like 16g (leave it out for the machine's)",
                                 param_hint="--memory")
    heap, pagecache, sized = _memory_plan(ctx, home, heap, pagecache, memory)
    server = _local_neo4j(ctx, home, heap=heap, pagecache=pagecache, vector_copy=vector_copy)
    if rule_specs and not with_service:
        raise click.UsageError("--rules goes with --with-service")
    if with_service:
        if service_url or service_token_file:
            raise click.UsageError("--with-service chooses the service's URL and token itself")
        _start_with_service(ctx, server, rule_specs, {"bolt": port, "http": http_port,
                                                      "service": service_port}, as_json)
        return
    if service_port is not None:
        raise click.UsageError("--service-port goes with --with-service")
    if (service_url is None) != (service_token_file is None):
        raise click.UsageError("give --service-url and --service-token-file together")
    if service_url and service_token_file:
        changed = server.configure_service(service_url,
                                           service_token_file.read_text().strip())
        if changed and server.status() is not None:
            raise ConfigError("Neo4j is running with other service settings: restart it "
                              "(kgdb neo4j stop, then start) so that APOC reads them")
    state = server.status()
    if state is None:
        if sized is not None and not as_json:
            click.echo(f"Neo4j memory: {sized.summary()}", err=True)
        with waiting("starting Neo4j (about a minute; the first start also downloads its "
                     "jars with Maven)"):
            state = server.ensure_started(port, http_port=http_port, standard_ports=True)
    else:
        state = server.ensure_started(port, http_port=http_port)  # the ports asked, or error
    _echo_settings(server, state, as_json)


@neo4j_group.command("stop")
@home_option
@json_option
@pass_context
def neo4j_stop(ctx: Context, home: Path | None, as_json: bool) -> None:
    """Stop it, and the kgdb serve that --with-service started (data stays in its folder)."""
    from kgdb.serve.wiring import stop_service

    server = _local_neo4j(ctx, home)
    stop_service(server.home, ctx.settings.home)
    echo_stopped(server.stop(), as_json)


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
        info.update(pid=state.pid, uri=state.uri, http=state.http_url,
                    browser=server.browser_url(state))
    if as_json:
        emit_json(info)
    elif state:
        http = f", HTTP {state.http_url}" if state.http_url else ""
        click.echo(f"running: Neo4j on {state.uri}{http} (pid {state.pid}; home {server.home})")
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


DOTS = re.compile(r"^[-.\s]*[0-9]+% ")
"""A progress line of neo4j-admin's importer (``.......... ..........  45% ∆0ms [2s]``)."""


@neo4j_group.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@home_option
@click.option("--replace", is_flag=True,
              help="Replace a database that holds nodes or indexes (the import always makes "
                   "the database anew; without this flag only an empty one is replaced).")
@click.option("--sep", default=None, help="Field separator for tsv (default: tab, else '|').")
@click.option("--format", "fmt", type=click.Choice(["tsv", "csv", "jsonl"]), default=None,
              help="Default: from the file extension.")
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True)
@click.option("--rejects", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where --on-error skip writes bad lines (default FILE.rejects).")
@click.option("--batch-size", default=5000, show_default=True, type=click.IntRange(1, 1_000_000),
              help="Triples read and embedded at a time.")
@click.option("--heap", default=None, callback=_fixed_size,
              help="The JVM heap of the server started after the import (default: the one "
                   "it ran with, else 1g).")
@click.option("--pagecache", default=None, callback=_fixed_size,
              help="Neo4j's page cache of the server started after the import (default: the "
                   "one it ran with, else 512m).")
@click.option("--compress", is_flag=True,
              help="Gzip the CSV files the importer reads (about 2.3 times smaller with "
                   "384-d vectors; they are removed after the import either way).")
@click.option("--vector-index", type=click.Choice(["auto", "exact", "quantized"]),
              default="auto", show_default=True,
              help="The entities' vector index: exact (float32 scores), quantized (int8, "
                   "m 16, ef_construction 200; kgdb re-ranks its proposals exactly), auto: "
                   "quantized from 5,000,000 entities.")
@click.option("--no-progress", is_flag=True)
@json_option
@pass_context
def neo4j_import(ctx: Context, file: Path, home: Path | None, replace: bool, sep: str | None,
                 fmt: str | None, on_error: str, rejects: Path | None, batch_size: int,
                 heap: str | None, pagecache: str | None, compress: bool, vector_index: str,
                 no_progress: bool, as_json: bool) -> None:
    """Bulk import a triples file offline with neo4j-admin database import full: the graph
    kgdb load triples gives, written as CSV, imported with the server stopped (it replaces
    the database: --replace for one with data), then kgdb's indexes and catalog. The server
    runs afterwards."""
    from kgdb.load.neo4j_import import import_triples, vector_index_for

    server = _local_neo4j(ctx, home)
    progress = not no_progress

    def echo(line: str) -> None:
        if not DOTS.match(line):  # its progress dots: 20 lines a stage
            click.echo(f"neo4j-admin: {line}", err=True)

    report = import_triples(server, ctx.embedder, file, replace=replace, fmt=fmt, sep=sep,
                            on_error=on_error, batch_size=batch_size, rejects_path=rejects,
                            progress=progress, echo=echo if progress else None, heap=heap,
                            pagecache=pagecache, compress=compress,
                            vector_index=None if vector_index == "auto"
                            else vector_index_for(0, vector_index))
    if as_json:
        emit_json(report.to_json())
        return
    s = report.seconds
    click.echo(f"imported {report.triples} triples ({len(report.predicates)} predicates): "
               f"{report.entities} entities, {report.relationships} relationships into "
               f"{report.uri} in {s['total']:.1f} s (files {s['write_files']:.1f} s, import "
               f"{s['import']:.1f} s, indexes {s['schema']:.1f} s); "
               f"{report.store_bytes_with_indexes / 1e6:.1f} MB on disk")
    if report.replaced_nodes:
        click.echo(f"replaced a database of {report.replaced_nodes} nodes")
    if report.rejected:
        click.echo(f"rejected {report.rejected} lines -> {report.rejects_file}")
