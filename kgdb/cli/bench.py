"""``kgdb bench``: benchmarks that print numbers."""

from __future__ import annotations

from pathlib import Path

import click

from kgdb.cli.context import Context, pass_context
from kgdb.cli.output import emit_json, json_option


@click.group()
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
