"""``kgdb demo``: the bundled movie sample, answered with SimGRAG retrieval."""

from __future__ import annotations

from pathlib import Path

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
    from kgdb.package import shadowing_note

    run_demo(ctx.settings, echo=click.echo, show_cypher=show_cypher)
    note = shadowing_note()
    if note:
        click.echo(note, err=True)


@click.group("examples", invoke_without_command=True)
@click.pass_context
def examples_group(ctx: click.Context) -> None:
    """The example logical forms and rule sets bundled with kgdb (they run on the demo sample):
    listed with their paths, or copied into a folder."""
    if ctx.invoked_subcommand is None:
        from kgdb.package import example, example_names

        for name in example_names():
            click.echo(f"{name}\t{example(name)}")


@examples_group.command("copy")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
def examples_copy(directory: Path) -> None:
    """Copy every bundled example into DIRECTORY (files already there are kept)."""
    from kgdb.package import copy_examples, example_names

    written = copy_examples(directory)
    click.echo(f"{len(written)} of {len(example_names())} examples written to {directory}")
