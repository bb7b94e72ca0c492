"""The ``kgdb`` command line: the root group, every command module registered on it, and
:func:`main`. Expected failures print one line and exit 1 (2 for usage), through the one
translation in :mod:`kgdb.cli.errors`."""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from kgdb.cli.bench import bench
from kgdb.cli.context import Context
from kgdb.cli.db import db
from kgdb.cli.demo import demo, examples_group
from kgdb.cli.documents import delete
from kgdb.cli.errors import KgdbGroup
from kgdb.cli.index import index_group
from kgdb.cli.lf import lf
from kgdb.cli.load import load
from kgdb.cli.neo4j import neo4j_group
from kgdb.cli.query import cypher, stats
from kgdb.cli.retrieve import (
    ask_command,
    bench_retrieve_command,
    eval_group,
    pattern_command,
    retrieve_command,
)
from kgdb.cli.rules import rules_group
from kgdb.cli.schema import schema
from kgdb.cli.serve import procedures_group, serve_command, tokens_group
from kgdb.cli.spark import spark_group
from kgdb.package import DISTRIBUTION

__all__ = ["cli", "main"]


@click.group("kgdb", cls=KgdbGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--uri", envvar="KGDB_URI", default=None,
              help="neo4j://... or bolt://... for Neo4j; unset for the embedded FalkorDB.")
@click.option("--graph", default=None, help="Graph name on FalkorDB (KGDB_GRAPH, default kgdb).")
@click.option("--verbose", "-v", is_flag=True,
              help="Say on stderr which database the command uses.")
@click.version_option(package_name=DISTRIBUTION)
@click.pass_context
def cli(ctx: click.Context, uri: str | None, graph: str | None, verbose: bool) -> None:
    """kgdb: knowledge-augmented retrieval inside a graph database.

    The options above may also follow the command (kgdb stats --graph demo)."""
    ctx.obj = Context(uri, graph, verbose=verbose)
    ctx.call_on_close(ctx.obj.close)


for _command in (neo4j_group, db, schema, load, rules_group, stats, cypher, bench, demo, lf,
                 pattern_command, ask_command, retrieve_command, eval_group, delete, index_group,
                 serve_command, tokens_group, procedures_group, examples_group, spark_group):
    cli.add_command(_command)
bench.add_command(bench_retrieve_command)


class _StderrHandler(logging.StreamHandler):
    """Writes each record to ``sys.stderr`` as it is when the record is written: click's test
    runner and embedding programs replace ``sys.stderr``, and a handler holding the stream of
    an earlier run would write to a closed file."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def _configure_logging() -> None:
    """Warnings (everything with ``KGDB_DEBUG``) on standard error, once per process. The
    handler's own level matters: records of child loggers such as ``kgdb.audit`` (INFO) pass
    the ``kgdb`` logger's level and are only held back here; the audit log goes to standard
    error with ``--audit-log -``, not by this handler."""
    from kgdb.config import debug_enabled

    debug = debug_enabled()
    level = logging.DEBUG if debug else logging.WARNING
    logger = logging.getLogger("kgdb")
    driver_log = logging.getLogger("neo4j")
    for ours in [h for h in logger.handlers if isinstance(h, _StderrHandler)]:
        logger.removeHandler(ours)
    for theirs in [h for h in driver_log.handlers
                   if isinstance(h, (_StderrHandler, logging.NullHandler))]:
        driver_log.removeHandler(theirs)
    handler = _StderrHandler()
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter("kgdb: %(levelname)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    # The Neo4j driver logs each retry of a managed transaction as a multi-line warning;
    # kgdb reports the outcome itself, so those show only with KGDB_DEBUG.
    driver_log.addHandler(handler if debug else logging.NullHandler())
    driver_log.propagate = False


def main(argv: list[str] | None = None) -> None:
    """Run the CLI (the console script); exits with the status of :mod:`kgdb.cli.errors`."""
    _configure_logging()
    cli.main(args=argv, prog_name="kgdb")
