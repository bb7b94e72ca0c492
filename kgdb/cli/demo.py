"""``kgdb demo``: the bundled movie sample, answered with SimGRAG retrieval."""

from __future__ import annotations

import click

from kgdb.cli.context import Context, pass_context


@click.command()
@pass_context
def demo(ctx: Context) -> None:
    """Load the bundled movie sample into graph 'demo' and answer a question from it."""
    from kgdb.demo import run_demo

    run_demo(ctx.settings, echo=click.echo)
