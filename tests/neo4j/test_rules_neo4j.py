"""Rules on a live Neo4j 5.26 (skipped without KGDB_NEO4J_URI or Docker): the same compiled
rules conclude the same things as on FalkorDB and as the Python reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgdb.solve.rules import evaluate, load_rules
from kgdb.solve.rules_apply import apply_rules, ask

pytestmark = pytest.mark.neo4j

ROOT = Path(__file__).resolve().parents[2]
HYPERTENSION = load_rules((ROOT / "dsl/examples/hypertension.rules").read_text(), "hypertension.rules")
G1, G2, HT = ("DiseaseSeverity/Grade 1 Hypertension", "DiseaseSeverity/Grade 2 Hypertension",
              "Disease/Hypertension")


@pytest.mark.parametrize("facts,expected", [
    ({"SystolicPressure": 160, "DiastolicPressure": 95}, [G2, HT]),
    ({"SystolicPressure": 130, "DiastolicPressure": 85}, []),
    ({"SystolicPressure": 150}, [G1, HT]),
    ({"flag": 0, "SystolicPressure": "high"}, []),
])
def test_ask_time_on_neo4j(neo4j_store, facts: dict, expected: list[str]) -> None:  # type: ignore[no-untyped-def]
    assert [c.concept.id for c in ask(neo4j_store, HYPERTENSION, facts)] == expected
    assert [c.concept.id for c in evaluate(HYPERTENSION, facts)] == expected


def test_materialise_on_neo4j(neo4j_store) -> None:  # type: ignore[no-untyped-def]
    neo4j_store.run("UNWIND $rows AS r CREATE (p:Patient {id: r[0]}) "
                    "SET p.SystolicPressure = r[1], p.DiastolicPressure = r[2]",
                    {"rows": [["a", 160, 95], ["b", 130, 85], ["c", 150, None]]}, write=True)
    for _ in range(2):
        report = apply_rules(neo4j_store, HYPERTENSION, label="Patient", ruleset="h")
    assert report.counts == {G1: 1, G2: 1, HT: 2}
    assert neo4j_store.run("MATCH ()-[r:belongTo]->() RETURN count(r)").value() == 4
