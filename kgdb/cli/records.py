"""``kgdb load records``: load a CSV file as typed entity nodes, following a loader spec."""

from __future__ import annotations

from pathlib import Path

import click

from kgdb.cli.context import current_context


@click.command("records")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--file", "data_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The data file (default: [file] path in the spec, relative to the spec).")
@click.option("--batch-size", default=500, show_default=True, type=click.IntRange(1, 100_000))
def records_command(spec: Path, data_file: Path | None, batch_size: int) -> None:
    """Load the rows of a CSV file as nodes (MERGE on id; loading twice changes nothing)."""
    from kgdb.load.records import load_records, read_spec

    parsed = read_spec(spec)
    count = load_records(current_context().store, parsed, data_file, batch_size=batch_size)
    click.echo(f"loaded {count} :{parsed.label} records from {data_file or parsed.path}")

