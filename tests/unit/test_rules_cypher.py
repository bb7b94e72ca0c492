"""Compiled rule Cypher: every example compiles for both dialects, the Neo4j text passes the
official Neo4j linter, and the exported hypertension scripts equal what the compiler makes now.

Regenerate the goldens with ``KGDB_UPDATE_GOLDENS=1 pytest tests/unit/test_rules_cypher.py``
and review the diff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kgdb.cypher.rules import count_conclusions, evaluate_facts, materialise_statements, script
from kgdb.dialects import get_dialect
from kgdb.dsl.rules_check import load_rules
from kgdb.errors import DslSemanticError
from tests.support.goldens import Case, assert_neo4j_lints_clean, validate_all

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "dsl" / "examples").glob("*.rules"))


def example_case(path: Path, kind: str) -> Case:
    rules = load_rules(path.read_text(), str(path))
    if kind == "materialise":
        return Case(f"materialise[{path.name}]",
                    {"rules": path.name, "label": "Patient", "ruleset": path.stem, "evaluated_at": "t"},
                    lambda d: [s for _, s in materialise_statements(
                        d, rules, label="Patient", ruleset=path.stem, evaluated_at="t")])
    return Case(f"evaluate_facts[{path.name}]", {"rules": path.name},
                lambda d: evaluate_facts(d, rules))


def text_case(name: str, source: str, kind: str = "evaluate_facts") -> Case:
    rules = load_rules(source)
    if kind == "materialise":
        return Case(name, {"rules": source, "label": None},
                    lambda d: [s for _, s in materialise_statements(
                        d, rules, label=None, ruleset="r", evaluated_at="t")])
    return Case(name, {"rules": source}, lambda d: evaluate_facts(d, rules))


CASES = [
    *[example_case(p, kind) for p in EXAMPLES for kind in ("materialise", "evaluate_facts")],
    Case("count_conclusions", {"label": "Patient", "predicate": "hasRisk"},
         lambda d: count_conclusions(d, "Patient", "hasRisk")),
    text_case("values_are_parameters", "Define (T/'x') { a >= 140 AND b = 'O\\'Brien' OR c }"),
    text_case("hostile_property", "Define (T/'x') { `a} RETURN 1 //` >= 1 }"),
    text_case("subject_and_predicate",
              "Define (Patient)-[hasRisk]->(Risk/'High') { age > 60 AND NOT smoker }", "materialise"),
    text_case("property_name_too_long", f"Define (T/'x') {{ {'p' * 300} }}"),
    text_case("materialise_without_label", "Define (T/'x') { a }", "materialise"),
]


def test_rules_goldens() -> None:
    """Every example (and the edge cases above) for both dialects, as tests/unit/goldens/rules.json."""
    assert EXAMPLES
    table = validate_all("rules", CASES)
    errors = {c["case"]: c["neo4j"].get("error") for c in table["cases"] if isinstance(c["neo4j"], dict)}
    assert errors["property_name_too_long"] == errors["materialise_without_label"] == "DslSemanticError"
    assert_neo4j_lints_clean(table)


def test_values_are_parameters() -> None:
    rules = load_rules("Define (T/'x') { a >= 140 AND b = 'O''Brien' OR c }".replace("''", "\\'"))
    statement = evaluate_facts(get_dialect("neo4j"), rules)
    assert "140" not in statement.text and "Brien" not in statement.text
    assert 140 in statement.params.values() and "O'Brien" in statement.params.values()


def test_hostile_names_are_quoted_or_rejected() -> None:
    rules = load_rules("Define (T/'x') { `a} RETURN 1 //` >= 1 }")
    text = evaluate_facts(get_dialect("neo4j"), rules).text
    assert "n.`a} RETURN 1 //` >= $v1" in text
    long_name = "p" * 300
    with pytest.raises(DslSemanticError, match="longer than"):
        evaluate_facts(get_dialect("falkordb"), load_rules(f"Define (T/'x') {{ {long_name} }}"))


def test_materialise_needs_a_label_when_no_subject() -> None:
    rules = load_rules((ROOT / "dsl/examples/hypertension.rules").read_text(), "h.rules")
    with pytest.raises(DslSemanticError, match="the label option"):
        materialise_statements(get_dialect("neo4j"), rules, label=None, ruleset="h", evaluated_at="t")


@pytest.mark.parametrize("dialect", ["neo4j", "falkordb"])
def test_exported_hypertension_cypher_is_current(dialect: str) -> None:
    source = ROOT / "dsl" / "examples" / "hypertension.rules"
    rules = load_rules(source.read_text(), str(source))
    expected = script(
        get_dialect(dialect), rules, label="Patient", ruleset="hypertension",
        header=f"kgdb rules compile hypertension.rules --dialect {dialect} --label Patient")
    golden = ROOT / "cypher" / dialect / "hypertension.cypher"
    if os.environ.get("KGDB_UPDATE_GOLDENS") == "1":
        golden.write_text(expected)
    assert golden.read_text() == expected, f"{golden} is stale: KGDB_UPDATE_GOLDENS=1 to regenerate"


def test_reference_examples_parse_and_cli_verbs_exist() -> None:
    from kgdb.cli import cli

    readme = (ROOT / "dsl" / "README.md").read_text()
    section = readme[readme.index("## Rules"):]
    block = section.split("```")[1]
    assert "Define (DiseaseSeverity/'Grade 1 Hypertension')" in block
    assert len(load_rules(block).rules) == 3
    rules_cmd = cli.commands["rules"]
    assert set(rules_cmd.commands) >= {"compile", "apply", "eval"}  # type: ignore[attr-defined]
    assert "records" in cli.commands["load"].commands  # type: ignore[attr-defined]
