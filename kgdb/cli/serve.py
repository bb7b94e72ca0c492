"""``kgdb serve`` (the knowledge service), ``kgdb tokens`` (its bearer tokens) and
``kgdb procedures`` (kgdb inside the database: Neo4j custom procedures, FalkorDB UDFs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.output import emit_json, json_option
from kgdb.errors import ConfigError


def default_token_file(ctx: Context) -> Path:
    from kgdb.serve.policy import default_token_file as token_file

    return token_file(ctx.settings.home)


tokens_option = click.option(
    "--tokens", "token_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Bearer-token file (mode 0600); default $KGDB_HOME/tokens.json.")
rules_option = click.option(
    "--rules", "rule_specs", multiple=True, metavar="[NAME=]FILE",
    help="A rule set to serve (procedure custom.kgdb.rules.NAME); NAME defaults to the file "
         "name. Repeatable.")


def ctx_exit(code: int) -> None:
    """End the command with ``code`` (a state to report, not an error: nothing more printed)."""
    click.get_current_context().exit(code)


def read_rulesets(specs: tuple[str, ...]) -> dict[str, Any]:
    from kgdb.cli.rules import read_rules

    out: dict[str, Any] = {}
    for spec in specs:
        name, _, file = spec.rpartition("=")
        path = Path(file)
        name = name or path.stem
        if name in out:
            raise ConfigError(f"--rules: the name {name!r} is given twice")
        out[name] = read_rules(path)
    return out


# ---------------------------------------------------------------------- kgdb serve
@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; another than loopback needs a token file.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@tokens_option
@click.option("--allow-writes", is_flag=True,
              help="Allow the write endpoints (rules apply) for tokens with the write scope.")
@click.option("--timeout", "timeout_s", default=30.0, show_default=True,
              type=click.FloatRange(0.1, 3600),
              help="Seconds a request may run: each statement, and the whole request "
                   "(waiting for the embedding model included).")
@click.option("--max-rows", default=1000, show_default=True, type=click.IntRange(1, 1_000_000),
              help="Items at most in any list of a response (rows, outputs, trace, "
                   "subgraphs); a cut says truncated: true.")
@click.option("--max-body", default=1024 * 1024, show_default=True,
              type=click.IntRange(1024, 1 << 30),
              help="Bytes at most of a request body (413 before it is read).")
@click.option("--max-answer-chars", default=32_000, show_default=True,
              type=click.IntRange(1, 10_000_000),
              help="Characters at most of a streamed answer (the LLM's reply is closed past "
                   "them and done says truncated: true).")
@click.option("--audit-log", default=None, metavar="FILE",
              help="Append one JSON audit record per request to FILE (mode 0600; '-' for "
                   "stderr); the logger kgdb.audit gets them anyway.")
@click.option("--audit-questions", is_flag=True,
              help="Audit records carry the question's text too (off: never the question).")
@click.option("--shutdown-grace", default=None, type=click.FloatRange(0, 3600),
              help="Seconds in-flight requests get after SIGTERM; streams still running then "
                   "end with an error event. Default: --timeout plus 5.")
@rules_option
@click.option("--print-openapi", is_flag=True, help="Print the OpenAPI document and exit.")
@click.option("--mcp", "mcp_stdio", is_flag=True,
              help="Serve MCP tools over stdio instead (agent hosts; the graph of --graph; "
                   "read-only tools unless --allow-writes).")
@pass_context
def serve_command(ctx: Context, host: str, port: int, token_path: Path | None,
                  allow_writes: bool, timeout_s: float, max_rows: int, max_body: int,
                  max_answer_chars: int, audit_log: str | None, audit_questions: bool,
                  shutdown_grace: float | None, rule_specs: tuple[str, ...],
                  print_openapi: bool, mcp_stdio: bool) -> None:
    """Run the knowledge service: HTTP endpoints for ask, retrieve, logical forms, rules,
    embeddings (OpenAI-shaped), Dify retrieval and the relay of custom.kgdb.ask. Every request
    needs a bearer token (kgdb tokens add) and names its graph (X-Kgdb-Graph).

    A change of the token file is read before the next request (SIGHUP: at once); /metrics
    answers in Prometheus' format; SIGTERM finishes the requests in flight first
    (docs/operations.md)."""
    try:
        from kgdb.serve.app import ServeConfig, create_app
    except ImportError as exc:
        raise ConfigError(f"kgdb serve needs the serve extra ({exc.name} is missing): "
                          "pip install 'kgdb-retrieval[serve]'") from exc
    from kgdb.serve.tokens import TokenFile

    path = token_path or default_token_file(ctx)
    if mcp_stdio:
        try:
            from kgdb.serve.mcp import build_server

            server = build_server(ServeConfig(ctx.settings, TokenFile(path, []),
                                              allow_writes=allow_writes, timeout_s=timeout_s,
                                              max_rows=max_rows, max_body=max_body,
                                              rulesets=read_rulesets(rule_specs)))
        except ImportError as exc:
            raise ConfigError(f"kgdb serve --mcp needs the mcp package ({exc.name} is "
                              "missing): pip install 'kgdb-retrieval[serve]'") from exc
        server.run("stdio")
        return
    if print_openapi:
        app = create_app(ServeConfig(ctx.settings, TokenFile(path, [])))
        click.echo(json.dumps(app.openapi(), indent=2))
        return
    from kgdb.serve.policy import serving_tokens

    try:
        tokens, secret = serving_tokens(path, host, allow_writes=allow_writes)
    except ConfigError as exc:
        raise ConfigError(f"kgdb serve --host {host}: {exc}") from exc
    if secret is not None:
        click.echo(f"kgdb: created {path} with token 'local': {secret}", err=True)
    config = ServeConfig(ctx.settings, tokens, allow_writes=allow_writes, timeout_s=timeout_s,
                         max_rows=max_rows, max_body=max_body,
                         rulesets=read_rulesets(rule_specs), max_answer_chars=max_answer_chars,
                         audit_log=audit_log, audit_questions=audit_questions,
                         shutdown_grace=shutdown_grace)
    from kgdb.serve.server import run

    app = create_app(config)
    click.echo(f"kgdb: serving {ctx.settings.uri or 'the embedded FalkorDB'} on "
               f"http://{host}:{port} ({'writes allowed' if allow_writes else 'read-only'}; "
               f"{len(tokens.tokens)} token(s) from {path})", err=True)
    click.echo(f"kgdb: the web page is http://{host}:{port}/ (sign in with a token)", err=True)
    run(app, host=host, port=port, grace=config.grace)


# ---------------------------------------------------------------------- kgdb tokens
@click.group("tokens")
def tokens_group() -> None:
    """Bearer tokens of kgdb serve: scopes (read, write) and the graphs each may use."""


@tokens_group.command("add")
@click.argument("name")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(["read", "write"]),
              default=("read",), show_default=True, help="Repeatable.")
@click.option("--graph", "graphs", multiple=True, required=True,
              help="A graph (FalkorDB) or database (Neo4j) it may use; '*' for all. Repeatable.")
@tokens_option
@json_option
@pass_context
def tokens_add(ctx: Context, name: str, scopes: tuple[str, ...], graphs: tuple[str, ...],
               token_path: Path | None, as_json: bool) -> None:
    """Add token NAME and print its secret (shown once; the file keeps a digest)."""
    from kgdb.serve.tokens import TokenFile

    tokens = TokenFile.open_or_new(token_path or default_token_file(ctx))
    secret = tokens.add(name, tuple(dict.fromkeys(scopes)), tuple(dict.fromkeys(graphs)))
    if as_json:
        emit_json({"name": name, "token": secret, "scopes": list(scopes),
                   "graphs": list(graphs), "file": str(tokens.path)})
    else:
        click.echo(secret)


@tokens_group.command("list")
@tokens_option
@json_option
@pass_context
def tokens_list(ctx: Context, token_path: Path | None, as_json: bool) -> None:
    """The tokens: name, scopes, graphs (never the secrets)."""
    from kgdb.serve.tokens import TokenFile

    tokens = TokenFile.open_or_new(token_path or default_token_file(ctx))
    rows = [{"name": t.name, "scopes": list(t.scopes), "graphs": list(t.graphs)}
            for t in tokens.tokens]
    if as_json:
        emit_json(rows)
        return
    for row in rows:
        click.echo(f"{row['name']}\t{','.join(row['scopes'])}\t{','.join(row['graphs'])}")


@tokens_group.command("remove")
@click.argument("name")
@tokens_option
@pass_context
def tokens_remove(ctx: Context, name: str, token_path: Path | None) -> None:
    """Remove token NAME (a running server refuses it from its next request on)."""
    from kgdb.serve.tokens import TokenFile

    TokenFile.load(token_path or default_token_file(ctx)).remove(name)


# ---------------------------------------------------------------------- kgdb procedures
@click.group("procedures")
def procedures_group() -> None:
    """kgdb inside the database: custom.kgdb.* procedures on Neo4j (APOC Extended), the kgdb
    UDF library on FalkorDB."""


@procedures_group.command("install")
@rules_option
@click.option("--no-service", is_flag=True,
              help="Neo4j: leave out what calls kgdb serve (embed, relations, chunks, ask, "
                   "askEvidence).")
@json_option
@pass_context
def procedures_install(ctx: Context, rule_specs: tuple[str, ...], no_service: bool,
                       as_json: bool) -> None:
    """Install (or update) kgdb's procedures and wait until they are callable."""
    from kgdb.procedures import install

    report = install(ctx.store, read_rulesets(rule_specs), service=not no_service)
    if as_json:
        emit_json(report)
        return
    for name in report.get("installed") or report.get("functions") or []:
        click.echo(f"installed {name}")
    for name in report.get("dropped", []):
        click.echo(f"dropped {name}")


@procedures_group.command("status")
@rules_option
@click.option("--no-service", is_flag=True, help="Compare without the service procedures.")
@json_option
@pass_context
def procedures_status(ctx: Context, rule_specs: tuple[str, ...], no_service: bool,
                      as_json: bool) -> None:
    """What is installed, and what differs from what this kgdb would install (exit 1 when
    something differs). Without --rules, installed rule sets are listed, not compared."""
    from kgdb.procedures import status

    report = status(ctx.store, read_rulesets(rule_specs), service=not no_service)
    if as_json:
        emit_json(report)
        if report.get("up_to_date") is False:
            ctx_exit(1)
        return
    for key in ("same", "changed", "missing", "extra"):
        for name in report.get(key, []):
            click.echo(f"{key}\t{name}")
    if report.get("rulesets"):
        click.echo("rule sets: " + ", ".join(report["rulesets"]))
    if "up_to_date" in report:
        click.echo("up to date" if report["up_to_date"] else "differs: run kgdb procedures "
                                                             "install")
        if not report["up_to_date"]:
            ctx_exit(1)
    else:
        click.echo(json.dumps(report, default=str))


@procedures_group.command("drop")
@json_option
@pass_context
def procedures_drop(ctx: Context, as_json: bool) -> None:
    """Remove every kgdb procedure (or the UDF library) and its catalog records."""
    from kgdb.procedures import drop

    report = drop(ctx.store)
    if as_json:
        emit_json(report)
        return
    for name in report.get("dropped", []):
        click.echo(f"dropped {name}")
