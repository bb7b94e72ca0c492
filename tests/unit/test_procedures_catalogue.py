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


class _LossyApoc:
    """A store whose registry (SHOW PROCEDURES) misses the first write of ``lost``, as APOC's
    refresh job does when an install commits between its noting the time and its read."""

    def __init__(self, lost: str) -> None:
        self.lost, self.writes, self.registered = lost, [], {}

    def run(self, statement: Any) -> Any:
        if "apoc.custom.install" in statement.text:
            name = "custom." + statement.params["signature"].split("(")[0]
            self.writes.append(name)
            if name != self.lost or self.writes.count(name) > 1:
                self.registered[name] = statement.params["description"]
            return self
        rows = [{"name": n, "description": d} for n, d in self.registered.items()
                if ("PROCEDURES" in statement.text) == (n != "custom.kgdb.embed")]
        return _Rows(rows)


class _Rows:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def records(self) -> list[dict[str, Any]]:
        return self.rows


def test_install_writes_again_what_apoc_missed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A procedure whose write APOC's refresh missed is written again until it is callable
    (CI once waited 90 s for one); the others are written once."""
    monkeypatch.setattr(procedures, "REINSTALL_S", 0.3)
    found = cy.catalogue(Neo4jDialect(), {"hypertension": HYPERTENSION}, chunks=True)
    store = _LossyApoc(lost="custom.kgdb.rules.hypertension")
    stamp = "2026-11-26T00:00:00"
    for p in found:
        store.run(cy.install(p, "neo4j", stamp))

    def reinstall(names: list[str]) -> None:
        for p in found:
            if p.called_as in names:
                store.run(cy.install(p, "neo4j", stamp))

    wanted = {p.called_as: cy.installed_description(p, stamp) for p in found}
    procedures._wait_registered(store, wanted, wait_s=10, reinstall=reinstall)
    assert store.registered == wanted
    assert store.writes.count("custom.kgdb.rules.hypertension") == 2
    assert all(store.writes.count(p.called_as) == 1 for p in found
               if p.called_as != "custom.kgdb.rules.hypertension")


def test_install_gives_up_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procedures, "REINSTALL_S", 0.1)
    store = _LossyApoc(lost="custom.kgdb.embed")
    with pytest.raises(procedures.ProcedureError, match=r"1 procedure\(s\) are not callable "
                       r"after 1 s \(e.g. custom.kgdb.embed\)"):
        procedures._wait_registered(store, {"custom.kgdb.embed": "d"}, wait_s=0.6,
                                    reinstall=lambda names: None)
