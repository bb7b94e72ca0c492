"""The catalogue of Neo4j procedures without a database: names and signatures APOC accepts,
no service URL or token in any body, rule set names checked, a hostile rule set's body
linted clean (its constants are literals), and the one-line refusals."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kgdb.cypher import procedures as cy
from kgdb.dialects import Neo4jDialect
from kgdb.dsl.rules_check import load_rules
from kgdb.procedures import neo4j as procedures
from tests.support.neo4j_lint import format_diagnostics, lint_available, lint_queries

ROOT = Path(__file__).resolve().parents[2]
HYPERTENSION = load_rules((ROOT / "dsl/examples/hypertension.rules").read_text(), "h")
HOSTILE = load_rules(
    "Define (DiseaseSeverity/'x\\' }) MATCH (n) DETACH DELETE n //') {\n"
    "  `a b` >= 1 OR `$facts` = 'y\\\\' \n}\n", "hostile")


def test_catalogue_names_and_signatures() -> None:
    found = cy.catalogue(Neo4jDialect(), {"hypertension": HYPERTENSION}, chunks=True)
    names = [p.called_as for p in found]
    assert names == ["custom.kgdb.entities", "custom.kgdb.nearestEntities",
                     "custom.kgdb.nearestRelations", "custom.kgdb.relations",
                     "custom.kgdb.nearestChunks", "custom.kgdb.chunks", "custom.kgdb.embed",
                     "custom.kgdb.ask", "custom.kgdb.askEvidence",
                     "custom.kgdb.rules.hypertension"]
    for p in found:
        # APOC: every name part, input and output at least two characters
        assert all(len(part) >= 2 for part in p.name.split("."))
        for name in re.findall(r"(\w+) ::", p.signature):
            assert len(name) >= 2, (p.name, name)
        assert "http" not in p.body  # the URL and token are read from apoc.conf
        if "apoc.load.jsonParams" in p.body or "apoc.ml.openai" in p.body:
            assert "apoc.static.get('kgdb.url')" in p.body
            assert "apoc.static.get('kgdb.token')" in p.body
        assert len(p.digest) == 64
    without_chunks = {p.name for p in cy.catalogue(Neo4jDialect(), {}, chunks=False)}
    assert "kgdb.chunks" not in without_chunks and "kgdb.nearestChunks" not in without_chunks


@pytest.mark.parametrize("name", ["a b", "x", "1st", "a-b", "r" * 64, "x`y", ""])
def test_ruleset_names_that_cannot_name_a_procedure(name: str) -> None:
    with pytest.raises(cy.ProcedureDefinitionError, match="cannot name a procedure"):
        cy.ruleset_procedure(Neo4jDialect(), name, HYPERTENSION)


def test_hostile_ruleset_body_is_literals_and_lints_clean() -> None:
    body = cy.ruleset_procedure(Neo4jDialect(), "hostile", HOSTILE).body
    assert "DETACH DELETE n //" in body  # inside a string literal, escaped
    from kgdb.cypher.literals import parameters

    assert set(parameters(body)) == {"facts"}  # every constant is a literal
    reason = lint_available()
    if reason:
        pytest.skip(reason)
    diagnostics = lint_queries([body])[0]
    assert not diagnostics, format_diagnostics(body, diagnostics)


class _Store:
    """What the checks read before touching the database."""

    address = "Neo4j at bolt://example:7687"
    username = "reader"

    def __init__(self, plugins: list[dict[str, Any]]) -> None:
        self._plugins = plugins

    def plugins(self) -> list[dict[str, Any]]:
        return self._plugins


def test_refusals_are_one_line() -> None:
    with pytest.raises(procedures.ProcedureError) as missing:
        procedures.install(_Store([{"name": "apoc"}]), {})
    assert "APOC Extended is not installed" in str(missing.value)
    assert len(str(missing.value).splitlines()) == 1
    from kgdb.errors import EngineError

    with pytest.raises(procedures.ProcedureError) as denied, \
            procedures._administration(_Store([])):
        raise EngineError("Neo4j error (Neo.ClientError.Security.Forbidden): Permission denied")
    assert "user 'reader' may not install procedures" in str(denied.value)
