"""``--results DIR`` of the bench and eval commands: the report they print, written as a
results file (kgdb.results) as well."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kgdb.errors import KgdbError
from kgdb.results import load_average, result_document, write_result

_META = "kgdb.results"


def results_option(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Adds ``--results DIR`` to a command whose report is ``what`` (the file's name part);
    the command hands its report to :func:`record`."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, results_dir: Path | None, **kwargs: Any) -> Any:
            if results_dir is not None:
                click.get_current_context().meta[_META] = (results_dir, what, load_average())
            return function(*args, **kwargs)

        return click.option(
            "--results", "results_dir", default=None,
            type=click.Path(file_okay=False, path_type=Path),
            help=f"Also write the report to DIR/<date>-{what}.json with the commit, engine, "
                 "versions, machine and load (benchmarks/results in a clone; "
                 "python -m kgdb.results render rewrites benchmarks/RESULTS.md).")(wrapper)

    return decorate


def record(report: Any, engine: str | None = None) -> None:
    """Writes ``report`` as a results file when the command was given ``--results``."""
    context = click.get_current_context()
    wanted = context.meta.get(_META)
    if wanted is None:
        return
    directory, what, started = wanted
    if engine is None:
        engine = _engine_of(report) or _engine_of_context()
    document = result_document(what, report, engine=engine, command=["kgdb", *sys.argv[1:]],
                               load_at_start=started)
    path = write_result(directory, document)
    click.echo(f"kgdb: results written to {path}", err=True)


def _engine_of(report: Any) -> str | None:
    if isinstance(report, dict):
        engine = report.get("engine")
        if isinstance(engine, str):
            return engine
        if isinstance(engine, dict) and isinstance(engine.get("engine"), str):
            version = engine.get("version")
            return f"{engine['engine']} {version}" if version else engine["engine"]
    return None


def _engine_of_context() -> str | None:
    from kgdb.cli.context import current_context

    try:
        settings = current_context().settings
    except KgdbError:  # settings that do not validate: the engine is unknown
        return None
    return "falkordb (embedded)" if settings.embedded else "neo4j"
