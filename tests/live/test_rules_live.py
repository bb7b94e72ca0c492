"""Rules on the embedded FalkorDB: three-valued logic in Cypher, ask-time agreement with the
Python reference, materialisation that updates and cleans up, and the hypertension grades of
the real Cleveland and Pima records checked against counts computed straight from the CSV."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgdb.dsl.rules_ast import (
    And,
    Compare,
    ConceptKey,
    ConceptRef,
    Literal,
    Not,
    Or,
    Property,
    Truthy,
)
from kgdb.dsl.rules_check import load_rules
from kgdb.dsl.rules_text import expr_text
from kgdb.load.records import load_records, read_spec
from kgdb.solve.rules import evaluate
from kgdb.solve.rules_apply import apply_rules, ask
from tests.conftest import shared_data as _shared_data

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
HYPERTENSION = load_rules((ROOT / "dsl/examples/hypertension.rules").read_text(), "hypertension.rules")
G1, G2, HT = ("DiseaseSeverity/Grade 1 Hypertension", "DiseaseSeverity/Grade 2 Hypertension",
              "Disease/Hypertension")
# The plain query a BI tool would run after `kgdb rules apply`.
COUNT_PER_CONCEPT = ("MATCH (p:Patient)-[:belongTo]->(c:Concept) "
                     "RETURN c.id AS concept, count(p) AS patients")


def shared_data(*parts: str) -> Path:
    """The shared data set; KGDB_SHARED_DATA points at it from a worktree outside /work/main."""
    base = os.environ.get("KGDB_SHARED_DATA")
    if base and Path(base, *parts).exists():
        return Path(base, *parts)
    return _shared_data(*parts)


def ask_ids(store, rules, facts) -> list[str]:  # type: ignore[no-untyped-def]
    return [c.concept.id for c in ask(store, rules, facts)]


def counts(store) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {r["concept"]: r["patients"] for r in store.run(COUNT_PER_CONCEPT).records()}


# ------------------------------------------------------------------ three-valued logic in Cypher
def test_cypher_three_valued_logic(store) -> None:  # type: ignore[no-untyped-def]
    rules = load_rules("""
        Define (T/'or') { a > 1 OR b > 1 }
        Define (T/'and') { a > 1 AND b > 1 }
        Define (T/'not') { NOT a > 1 }
        Define (T/'bare') { flag }
        Define (T/'notbare') { NOT flag }
        Define (T/'notref') { NOT T/'or' }
    """)
    assert ask_ids(store, rules, {"b": 2}) == ["T/or"]                  # unknown OR true
    # unknown AND false is false; NOT unknown is unknown; a reference to an unknown body is false.
    assert ask_ids(store, rules, {"b": 0}) == ["T/notref"]
    assert ask_ids(store, rules, {"a": 0, "b": 0}) == ["T/not", "T/notref"]
    for value, expected in [(True, ["T/bare"]), (1, ["T/bare"]), ("x", ["T/bare"]), (2.5, ["T/bare"]),
                            (False, ["T/notbare"]), (0, ["T/notbare"]), ("", ["T/notbare"]),
                            (None, [])]:
        got = [i for i in ask_ids(store, rules, {"flag": value}) if "bare" in i]
        assert got == expected, value
        assert [c.concept.id for c in evaluate(rules, {"flag": value}) if "bare" in c.concept.id] == got


def test_ask_time_hypertension_cases(store) -> None:  # type: ignore[no-untyped-def]
    assert ask_ids(store, HYPERTENSION, {"SystolicPressure": 160, "DiastolicPressure": 95}) == [G2, HT]
    assert ask_ids(store, HYPERTENSION, {"SystolicPressure": 130, "DiastolicPressure": 85}) == []
    assert ask_ids(store, HYPERTENSION, {"SystolicPressure": 150}) == [G1, HT]
    assert ask_ids(store, HYPERTENSION, {"DiastolicPressure": 101}) == [G2, HT]
    assert store.run("MATCH (n) RETURN count(n)").value() == 0  # ask time writes nothing


# ------------------------------------------------------------------ Cypher == Python reference
PROPS = ["a", "b", "c"]
VALUES = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -1.5, 2.0, True, False, "x", ""]))
OPERANDS = st.one_of(st.sampled_from(PROPS).map(Property), VALUES.map(Literal))


def bodies(refs: list[ConceptKey]):  # type: ignore[no-untyped-def]
    base = [st.builds(Compare, st.sampled_from(PROPS).map(Property),
                      st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), OPERANDS),
            st.sampled_from(PROPS).map(lambda p: Truthy(Property(p)))]
    if refs:
        base.append(st.sampled_from(refs).map(ConceptRef))
    return st.recursive(
        st.one_of(*base),
        lambda inner: st.one_of(st.lists(inner, min_size=2, max_size=3).map(lambda x: And(tuple(x))),
                                st.lists(inner, min_size=2, max_size=3).map(lambda x: Or(tuple(x))),
                                inner.map(Not)),
        max_leaves=6)


@st.composite
def rule_texts(draw: st.DrawFn) -> str:
    n = draw(st.integers(1, 4))
    keys = [ConceptKey("T", f"c{i}") for i in range(n)]
    lines = [f"Define (T/'c{i}') {{ {expr_text(draw(bodies(keys[:i])))} }}" for i in range(n)]
    ranked = draw(st.lists(st.sampled_from(range(n)), unique=True, max_size=n))
    if ranked:
        entries = " ".join(f"c{i}={draw(st.integers(0, 3))}" for i in ranked)
        lines.append(f"DefinePriority(T) {{ {entries} }}")
    return "\n".join(lines)


# Derandomized: one random run hung the embedded FalkorDB 4.16.3 on a read query for over 400 s,
# past its 300 s query timeout (not reproduced since; noted on issue 8). CI runs the same
# examples every time.
@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=rule_texts(), facts=st.dictionaries(st.sampled_from(PROPS), st.one_of(st.none(), VALUES)))
def test_cypher_agrees_with_python_reference(store, text: str, facts: dict) -> None:  # type: ignore[no-untyped-def]
    rules = load_rules(text)
    expected = [c.concept.id for c in evaluate(rules, facts)]
    assert ask_ids(store, rules, facts) == expected, (text, facts)


# ------------------------------------------------------------------ materialisation
def make_patients(store, rows: list[tuple[str, float | None, float | None]]) -> None:  # type: ignore[no-untyped-def]
    store.run("UNWIND $rows AS r CREATE (p:Patient {id: r[0]}) "
              "SET p.SystolicPressure = r[1], p.DiastolicPressure = r[2]",
              {"rows": [list(r) for r in rows]}, write=True)


def memberships(store) -> set[tuple[str, str]]:  # type: ignore[no-untyped-def]
    rows = store.run("MATCH (p:Patient)-[r]->(c:Concept) RETURN p.id AS p, c.id AS c").records()
    return {(r["p"], r["c"]) for r in rows}


def test_materialise_updates_and_cleans_up(store) -> None:  # type: ignore[no-untyped-def]
    make_patients(store, [("a", 160, 95), ("b", 130, 85), ("c", 150, None), ("d", None, None)])
    report = apply_rules(store, HYPERTENSION, label="Patient", ruleset="h")
    want = {("a", G2), ("a", HT), ("c", G1), ("c", HT)}
    assert memberships(store) == want
    assert report.counts == {G1: 1, G2: 1, HT: 2}
    edge = store.run("MATCH (:Patient {id:'a'})-[r:belongTo]->(:Concept {id: $id}) "
                     "RETURN r.rule AS rule, r.evaluatedAt AS at, r.ruleset AS rs", {"id": G2}).single()
    assert edge["rule"].startswith("Define (DiseaseSeverity/'Grade 2 Hypertension')")
    assert edge["at"] == report.evaluated_at and edge["rs"] == "h"
    labels = store.run("MATCH (c:Concept {id: $id}) RETURN labels(c) AS l", {"id": G2}).value()
    assert sorted(labels) == ["Concept", "DiseaseSeverity"]

    # Running again changes nothing: no duplicate edges or concept nodes.
    apply_rules(store, HYPERTENSION, label="Patient", ruleset="h")
    assert store.run("MATCH ()-[r:belongTo]->() RETURN count(r)").value() == 4
    assert store.run("MATCH (c:Concept) RETURN count(c)").value() == 3

    # Data changes: a drops to 120/85, b rises to 170; d gets a diastolic of 92.
    store.run("MATCH (p:Patient {id:'a'}) SET p.SystolicPressure = 120, p.DiastolicPressure = 85",
              write=True)
    store.run("MATCH (p:Patient {id:'b'}) SET p.SystolicPressure = 170", write=True)
    store.run("MATCH (p:Patient {id:'d'}) SET p.DiastolicPressure = 92", write=True)
    apply_rules(store, HYPERTENSION, label="Patient", ruleset="h")
    assert memberships(store) == {("b", G2), ("b", HT), ("c", G1), ("c", HT), ("d", G1), ("d", HT)}

    # A rule changes (Grade 2 from 175) and one is deleted (Hypertension): stale edges go,
    # the orphaned concept node goes, a manually asserted edge stays.
    store.run("MATCH (p:Patient {id:'a'}), (c:Concept {id: $id}) CREATE (p)-[:belongTo]->(c)",
              {"id": G1}, write=True)
    changed = load_rules("""
        Define (DiseaseSeverity/'Grade 1 Hypertension') { SystolicPressure >= 140 OR DiastolicPressure >= 90 }
        Define (DiseaseSeverity/'Grade 2 Hypertension') { SystolicPressure >= 175 }
        DefinePriority(DiseaseSeverity) { Grade2=100 Grade1=50 }
    """)
    apply_rules(store, changed, label="Patient", ruleset="h")
    assert memberships(store) == {("a", G1), ("b", G1), ("c", G1), ("d", G1)}
    assert store.run("MATCH (c:Concept) RETURN c.id ORDER BY c.id").rows == [[G1]]
    # a (120/85) is not Grade 1 by rule: its manually asserted edge (no ruleset) is left alone.
    manual = store.run("MATCH (:Patient {id:'a'})-[r:belongTo]->() RETURN r.ruleset").rows
    assert manual == [[None]]


def test_subject_predicate_rules_and_label_switch(store) -> None:  # type: ignore[no-untyped-def]
    rules = load_rules((ROOT / "dsl/examples/cardio_risk.rules").read_text(), "cardio_risk.rules")
    store.run("CREATE (:Patient {id:'p1', SystolicPressure: 150, Cholesterol: 250, Age: 50}), "
              "(:Patient {id:'p2', SystolicPressure: 120, Cholesterol: 200, Age: 40}), "
              "(:Patient {id:'p3', SystolicPressure: 120, Cholesterol: 200, Age: 61}), "
              "(:Patient {id:'p4', Age: 30})", write=True)
    apply_rules(store, rules, label=None, ruleset="cardio")
    rows = store.run("MATCH (p:Patient)-[r:hasRisk]->(c:Concept:Risk) RETURN p.id, c.name "
                     "ORDER BY p.id").rows
    assert rows == [["p1", "High"], ["p2", "Low"], ["p3", "Moderate"]]
    assert [c.concept.name for c in evaluate(rules, {"SystolicPressure": 150, "Cholesterol": 250,
                                                     "Age": 50})] == ["High"]


# ------------------------------------------------------------------ real records
def expected_counts(values: list[float | None], g1: float, g2: float) -> dict[str, int]:
    """Expected counts straight from the CSV: only one pressure is known per dataset, so
    Grade 2 = known value >= the grade-2 bound, Grade 1 = the grade-1 bound or more but below
    grade 2 (priority), Hypertension = either (the other pressure is unknown: unknown OR true)."""
    out = {G1: sum(1 for v in values if v is not None and g1 <= v < g2),
           G2: sum(1 for v in values if v is not None and v >= g2),
           HT: sum(1 for v in values if v is not None and v >= g1)}
    return {k: v for k, v in out.items() if v}


def test_cleveland_grades_match_csv(cli_store) -> None:  # type: ignore[no-untyped-def]
    """Through the CLI: kgdb load records, kgdb rules apply, then a plain Cypher count."""
    from click.testing import CliRunner

    from kgdb.cli import cli

    path = shared_data("medical", "processed.cleveland.data")
    with path.open(newline="") as f:
        systolic = [None if row[3] == "?" else float(row[3]) for row in csv.reader(f) if row]
    assert len(systolic) == 303
    store = cli_store
    loaded = CliRunner().invoke(cli, ["load", "records",
                                      str(ROOT / "loaders/specs/cleveland.toml"), "--file", str(path)])
    assert loaded.exit_code == 0, loaded.output
    assert "loaded 303 :Patient records" in loaded.output
    applied = CliRunner().invoke(cli, ["rules", "apply",
                                       str(ROOT / "dsl/examples/hypertension.rules"), "--label", "Patient"])
    assert applied.exit_code == 0, applied.output
    measured = counts(store)
    print("cleveland", measured)
    assert measured == expected_counts(systolic, 140, 160)
    assert measured[G2] > 0 and measured[G1] > 0


def test_pima_grades_match_csv(store) -> None:  # type: ignore[no-untyped-def]
    path = shared_data("medical", "pima_diabetes.csv")
    with path.open(newline="") as f:
        diastolic = [None if row["BloodPressure"] == "0" else float(row["BloodPressure"])
                     for row in csv.DictReader(f)]
    assert len(diastolic) == 768
    load_records(store, read_spec(ROOT / "loaders/specs/pima.toml"), path)
    apply_rules(store, HYPERTENSION, label="Patient", ruleset="hypertension")
    measured = counts(store)
    print("pima", measured)
    assert measured == expected_counts(diastolic, 90, 100)
    assert store.run("MATCH (p:Patient) WHERE p.DiastolicPressure IS NULL RETURN count(p)").value() \
        == sum(1 for v in diastolic if v is None)


@pytest.mark.parametrize("stop_after", [1, 4, 8])
def test_interrupted_apply_is_finished_by_running_again(store, stop_after: int) -> None:  # type: ignore[no-untyped-def]
    """FalkorDB has no transactions: a run that stops after any statement is completed by the
    next run, which ends in the same graph as an uninterrupted run."""
    from kgdb.cypher.rules import materialise_statements

    make_patients(store, [("a", 160, 95), ("b", 130, 85), ("c", 150, None)])
    statements = materialise_statements(store.dialect, HYPERTENSION, label="Patient",
                                        ruleset="h", evaluated_at="t0")
    for _, statement in statements[:stop_after]:
        store.run(statement)
    apply_rules(store, HYPERTENSION, label="Patient", ruleset="h")
    assert memberships(store) == {("a", G2), ("a", HT), ("c", G1), ("c", HT)}
    assert store.run("MATCH (c:Concept) RETURN count(c)").value() == 3
    assert store.run("MATCH ()-[r:belongTo]->() WHERE r.evaluatedAt = 't0' RETURN count(r)").value() == 0
