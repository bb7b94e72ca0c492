"""Compiled rule Cypher: every example compiles for both dialects, the Neo4j text passes the
official Neo4j linter, and the exported hypertension scripts equal what the compiler makes now.

Regenerate the goldens with ``KGDB_UPDATE_GOLDENS=1 pytest tests/unit/test_rules_cypher.py``
and review the diff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kgdb.cli.rules import compiled_cypher
from kgdb.cypher.rules import count_conclusions, evaluate_facts, materialise_statements
from kgdb.dialects import get_dialect
from kgdb.errors import DslSemanticError
from kgdb.load.records import merge_records, read_spec
from kgdb.solve.rules import load_rules
from tests.support.neo4j_lint import format_diagnostics, lint_available, lint_queries

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "dsl" / "examples").glob("*.rules"))


def all_statements(dialect_name: str) -> list[str]:
    dialect = get_dialect(dialect_name)
    texts = []
    for path in EXAMPLES:
        rules = load_rules(path.read_text(), str(path))
        texts += [s.text for _, s in materialise_statements(
            dialect, rules, label="Patient", ruleset=path.stem, evaluated_at="t")]
        texts.append(evaluate_facts(dialect, rules).text)
    return texts


@pytest.mark.parametrize("dialect", ["neo4j", "falkordb"])
def test_every_example_compiles(dialect: str) -> None:
    assert EXAMPLES
    texts = all_statements(dialect)
    assert len(texts) >= 2 * len(EXAMPLES)
    assert all("$" in t or "MERGE" in t for t in texts)


def test_neo4j_output_lints_clean() -> None:
    reason = lint_available()
    if reason:
        pytest.skip(reason)
    neo4j = get_dialect("neo4j")
    texts = all_statements("neo4j")
    texts.append(count_conclusions(neo4j, "Patient", "hasRisk").text)
    texts += [merge_records(neo4j, read_spec(p)).text
              for p in sorted((ROOT / "loaders" / "specs").glob("*.toml"))]
    for text, diagnostics in zip(texts, lint_queries(texts), strict=True):
        assert diagnostics == [], format_diagnostics(text, diagnostics)


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
    with pytest.raises(DslSemanticError, match="pass --label"):
        materialise_statements(get_dialect("neo4j"), rules, label=None, ruleset="h", evaluated_at="t")


@pytest.mark.parametrize("dialect", ["neo4j", "falkordb"])
def test_exported_hypertension_cypher_is_current(dialect: str) -> None:
    source = ROOT / "dsl" / "examples" / "hypertension.rules"
    rules = load_rules(source.read_text(), str(source))
    expected = compiled_cypher(
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
