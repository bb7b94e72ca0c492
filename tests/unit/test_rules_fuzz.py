"""Fuzzing the rule front-end: whatever the text, only kgdb's DslError escapes parsing,
analysis and compilation (for both dialects), and nothing hangs (hypothesis deadline)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgdb.cypher.rules import evaluate_facts, materialise_statements
from kgdb.dialects import get_dialect
from kgdb.dsl.rules_check import load_rules
from kgdb.errors import DslError
from kgdb.solve.rules import evaluate

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [p.read_text() for p in sorted((ROOT / "dsl" / "examples").glob("*.rules"))]
TOKENS = ["Define", "DefinePriority", "(", ")", "{", "}", "[", "]", "-", "->", "/", "'", "`", '"',
          ":", "=", "==", "!=", "<>", ">=", "<=", ">", "<", "AND", "or", "&&", "||", "!", "NOT",
          "R1", "R2", "a", "b", "T", "'x'", "'y'", "`z`", "140", "-2.5", "1e999", "9" * 80, "true",
          ",", ";", "\n", "//c\n", "#", "\\", "é", "\x00", "DiseaseSeverity/'Grade 1 Hypertension'"]
DIALECTS = [get_dialect("neo4j"), get_dialect("falkordb")]


def front_end(text: str) -> None:
    try:
        rules = load_rules(text, "fuzz.rules")
        for dialect in DIALECTS:
            materialise_statements(dialect, rules, label="Patient", ruleset="fuzz", evaluated_at="t")
            evaluate_facts(dialect, rules)
        evaluate(rules, {"a": 1, "b": None, "SystolicPressure": 150})
    except DslError:
        pass


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 12)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        piece = draw(st.sampled_from(TOKENS) | st.text(max_size=3))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + piece + text[i:]
        elif op == "replace":
            text = text[:i] + piece + text[j:]
        else:
            text = text[:j] + text[i:j] + text[j:]
    return text


FUZZ = settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.text(max_size=200))
def test_random_text_only_raises_dsl_errors(text: str) -> None:
    front_end(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join))
def test_token_soup_only_raises_dsl_errors(text: str) -> None:
    front_end(text)


@FUZZ
@given(mutated())
def test_mutated_examples_only_raise_dsl_errors(text: str) -> None:
    front_end(text)


def test_seeds_are_valid() -> None:
    assert SEEDS
    for seed in SEEDS:
        load_rules(seed)
