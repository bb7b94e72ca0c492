"""The one error translation of the command line, used by ``kgdb.cli.main`` and by every
in-process invocation of the ``kgdb`` group (click's ``CliRunner`` included): a
:class:`~kgdb.errors.KgdbError` is one line ``kgdb: error: ...`` and exit status 1, a usage
error one line and exit status 2; click's own ``Error:``/``Usage:`` output never appears.

With ``KGDB_DEBUG=1`` a kgdb error's traceback, with the chain of errors that caused it
(``raise KgdbError(...) from exc``), is printed before its line; an unexpected exception is
raised as it is."""

from __future__ import annotations

import io
import sys
import traceback
from collections.abc import Callable, Sequence
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import click

from kgdb.errors import KgdbError


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def translate(run: Callable[[], Any]) -> int:
    """Call ``run`` (a click ``main`` in non-standalone mode) and return the exit status,
    printing the one-line message of an expected failure on stderr."""
    try:
        result = run()
    except click.exceptions.Abort:
        click.echo("kgdb: aborted", err=True)
        return 1
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "kgdb"
        click.echo(f"kgdb: error: {_one_line(exc.format_message())} (see '{where} --help')",
                   err=True)
        return exc.exit_code
    except click.ClickException as exc:
        click.echo(f"kgdb: error: {_one_line(exc.format_message())}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except KgdbError as exc:
        from kgdb.config import debug_enabled

        if debug_enabled():
            traceback.print_exception(exc, file=sys.stderr)
        click.echo(f"kgdb: error: {exc}", err=True)
        return 1
    except KeyboardInterrupt:
        click.echo("kgdb: interrupted", err=True)
        return 130
    except Exception as exc:  # a bug: still no traceback unless asked for
        from kgdb.config import debug_enabled

        if debug_enabled():
            raise
        click.echo(f"kgdb: internal error: {type(exc).__name__}: {exc} "
                   "(set KGDB_DEBUG=1 for the traceback)", err=True)
        return 1
    return result if isinstance(result, int) and not isinstance(result, bool) else 0


HOISTED_OPTIONS = {"--uri": True, "--graph": True, "--verbose": False, "-v": False}
"""The root group's options (and whether each takes a value), also accepted after the command
(``kgdb stats --graph demo``) unless that command has an option of the same name."""


def hoist_root_options(group: click.Group, ctx: click.Context, args: list[str]) -> list[str]:
    """``args`` with the root options written after the command moved before it."""
    i = 0
    while i < len(args) and args[i].split("=", 1)[0] in HOISTED_OPTIONS:
        i += 1 + (HOISTED_OPTIONS[args[i]] if "=" not in args[i] else 0)
    command: click.Command = group
    own: set[str] = set()
    while i < len(args) and isinstance(command, click.Group):
        found = command.get_command(ctx, args[i])
        if found is None:
            return args
        command = found
        own |= {name for param in command.params for name in param.opts}
        i += 1
    head, tail, moved = args[:i], [], []
    rest = args[i:]
    j = 0
    while j < len(rest):
        token = rest[j]
        if token == "--":
            tail += rest[j:]
            break
        name = token.split("=", 1)[0]
        if name in HOISTED_OPTIONS and name not in own:
            takes = HOISTED_OPTIONS[name] and "=" not in token
            moved += rest[j:j + 1 + takes]
            j += 1 + takes
            continue
        tail.append(token)
        j += 1
    return moved + head + tail


class KgdbGroup(click.Group):
    """The root group: in standalone mode (the console script, ``CliRunner``) it exits through
    :func:`translate`; ``standalone_mode=False`` keeps click's raw behaviour for embedding.
    Its options may also follow the command (:func:`hoist_root_options`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_root_options(self, ctx, list(args)))

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        code = translate(lambda: click.Group.main(self, args, prog_name or "kgdb",
                                                  complete_var, False, **extra))
        if code:  # success returns, as kgdb.cli.main always has
            sys.exit(code)
        return None


def run_cli(args: Sequence[str]) -> tuple[int, str, str]:
    """``kgdb ARGS`` in-process through :func:`kgdb.cli.main`: (exit status, stdout, stderr)."""
    from kgdb.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue(), err.getvalue()
