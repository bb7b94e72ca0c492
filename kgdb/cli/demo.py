"""``kgdb demo``: the bundled movie sample, answered with SimGRAG retrieval."""

from __future__ import annotations

import click

from kgdb.cli.context import Context, pass_context


@click.command()
@click.option("--cypher", "show_cypher", is_flag=True,
              help="Also print the Cypher statements that ran, with their parameters.")
@pass_context
def demo(ctx: Context, show_cypher: bool) -> None:
    """Load the bundled movie sample into graph 'demo' (on the embedded engine) and answer a
    question from it, without an LLM."""
    from kgdb.demo import run_demo

    run_demo(ctx.settings, echo=click.echo, show_cypher=show_cypher)
