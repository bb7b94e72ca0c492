"""The CLI details a newcomer meets first: root options after the command, the warning when
Neo4j settings are set but not used, vectors shown by size, the export lines of
`kgdb neo4j start`."""

from __future__ import annotations

import logging

import click
import pytest

from kgdb.cli import cli
from kgdb.cli.errors import hoist_root_options
from kgdb.cli.output import elide_vectors
from kgdb.config import Settings
from kgdb.engine import unused_neo4j_variables


def hoisted(*args: str) -> list[str]:
    with click.Context(cli) as ctx:
        return hoist_root_options(cli, ctx, list(args))


def test_root_options_after_the_command_move_before_it() -> None:
    assert hoisted("stats", "--graph", "demo") == ["--graph", "demo", "stats"]
    assert hoisted("stats", "--graph=demo", "--json") == ["--graph=demo", "stats", "--json"]
    assert hoisted("lf", "run", "x.lf", "-v", "--uri", "bolt://h:1") == [
        "-v", "--uri", "bolt://h:1", "lf", "run", "x.lf"]
    assert hoisted("serve", "--mcp", "--graph", "g") == ["--graph", "g", "serve", "--mcp"]
    # already in front: unchanged
    assert hoisted("--graph", "g", "stats") == ["--graph", "g", "stats"]
    # a command's own --graph stays its own (tokens add --graph is the token's graphs)
    assert hoisted("tokens", "add", "bi", "--graph", "kgdb") == [
        "tokens", "add", "bi", "--graph", "kgdb"]
    # after --, nothing moves; an unknown command is left to click's own error
    assert hoisted("cypher", "--", "--graph") == ["cypher", "--", "--graph"]
    assert hoisted("nope", "--graph", "g") == ["nope", "--graph", "g"]


def test_graph_after_the_command_reaches_the_settings(monkeypatch) -> None:
    seen = {}

    @cli.command("probe-graph", hidden=True)
    @click.pass_context
    def probe(ctx: click.Context) -> None:
        seen["graph"] = ctx.obj.settings.graph
        seen["verbose"] = ctx.obj.verbose

    try:
        from click.testing import CliRunner

        result = CliRunner().invoke(cli, ["probe-graph", "--graph", "movies", "--verbose"])
        assert result.exit_code == 0, result.output
        assert seen == {"graph": "movies", "verbose": True}
    finally:
        cli.commands.pop("probe-graph")


def test_neo4j_variables_without_a_uri_are_named(monkeypatch) -> None:
    for name in ("KGDB_URI", "NEO4J_URI", "NEO4J_DATABASE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NEO4J_PASSWORD", "secret")
    assert unused_neo4j_variables(Settings.from_env()) == ["NEO4J_PASSWORD"]
    assert unused_neo4j_variables(Settings.from_env(uri="embedded")) == []  # chosen by name
    monkeypatch.setenv("KGDB_URI", "bolt://127.0.0.1:7687")
    assert unused_neo4j_variables(Settings.from_env()) == []


def test_connect_warns_when_neo4j_settings_are_unused(monkeypatch, tmp_path, caplog) -> None:
    """The warning comes before anything starts: run with an unusable KGDB_HOME so that the
    embedded server cannot start, and the warning must still be logged first."""
    from kgdb.engine import connect

    for name in ("KGDB_URI", "NEO4J_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NEO4J_PASSWORD", "secret")
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("KGDB_HOME", str(blocker / "home"))
    logger = logging.getLogger("kgdb")
    monkeypatch.setattr(logger, "propagate", True)
    with caplog.at_level(logging.WARNING, logger="kgdb"), pytest.raises(NotADirectoryError):
        connect()
    assert any("NEO4J_PASSWORD is set but KGDB_URI/NEO4J_URI is not: using the embedded "
               "FalkorDB" in r.getMessage() for r in caplog.records), caplog.text


def test_vectors_are_shown_by_size() -> None:
    node = {"id": "Kismet", "embedding": [0.5] * 384, "years": [1944, 1955],
            "nested": [{"v": [0.1] * 16}], "short": [0.1, 0.2]}
    assert elide_vectors(node) == {"id": "Kismet", "embedding": "<vector: 384 floats>",
                                   "years": [1944, 1955],
                                   "nested": [{"v": "<vector: 16 floats>"}],
                                   "short": [0.1, 0.2]}


def test_waiting_spins_on_a_terminal_and_says_so_once_elsewhere(monkeypatch, capsys) -> None:
    import io
    import sys
    import time

    from kgdb.cli.output import waiting

    with waiting("starting Neo4j"):
        pass
    assert capsys.readouterr().err == "starting Neo4j...\n"

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    with waiting("starting Neo4j", interval_s=0.01):
        time.sleep(0.1)
    shown = screen.getvalue()
    assert "\r| starting Neo4j (0 s)" in shown and "\r/ starting Neo4j" in shown
    assert shown.rstrip().endswith("starting Neo4j: 0 s")
