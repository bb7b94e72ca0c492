"""The ``kgdb`` command line. Expected failures print one line and exit 1, never a traceback."""

from __future__ import annotations

import sys

import click

from kgdb.errors import KgdbError


@click.group()
def cli() -> None:
    """Knowledge-augmented retrieval inside a graph database."""


from kgdb.retrieve.commands import (  # noqa: E402 - registration after the group exists
    ask_command,
    bench_group,
    eval_group,
    pattern_command,
)

cli.add_command(pattern_command)
cli.add_command(ask_command)
cli.add_command(eval_group)
cli.add_command(bench_group)


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KgdbError as exc:
        click.echo(f"Error: {' '.join(str(exc).split())}", err=True)
        sys.exit(1)
