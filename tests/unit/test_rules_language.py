"""The rule language: grammar, AST, semantic checks, the reference evaluator, error messages."""

from __future__ import annotations

from pathlib import Path

import pytest
from lark import Lark

from kgdb.dsl.rules_ast import (
    And,
    Compare,
    ConceptKey,
    ConceptRef,
    Literal,
    Not,
    Or,
    Property,
    SubRuleRef,
    Truthy,
)
from kgdb.dsl.rules_check import load_rules
from kgdb.dsl.rules_parser import parse
from kgdb.dsl.rules_text import expr_text
from kgdb.errors import DslError, DslSemanticError, DslSyntaxError
from kgdb.solve.rules import compare_values, evaluate, truthy

ROOT = Path(__file__).resolve().parents[2]
PAPER = """\
Define (DiseaseSeverity/'Grade 1 Hypertension') {
  SystolicPressure >= 140 OR DiastolicPressure >= 90
}
Define (DiseaseSeverity/'Grade 2 Hypertension') {
  SystolicPressure >= 160 OR DiastolicPressure >= 100
}
Define (Disease/'Hypertension') {
  DiseaseSeverity/'Grade 1 Hypertension' OR DiseaseSeverity/'Grade 2 Hypertension'
}
"""
PRIORITY = "DefinePriority(DiseaseSeverity) { Grade2=100 Grade1=50 }\n"
G1 = ConceptKey("DiseaseSeverity", "Grade 1 Hypertension")
G2 = ConceptKey("DiseaseSeverity", "Grade 2 Hypertension")
HT = ConceptKey("Disease", "Hypertension")


def concluded(rules_text: str, facts: dict) -> list[str]:
    return [c.concept.id for c in evaluate(load_rules(rules_text), facts)]


def test_grammar_builds_strict() -> None:
    Lark.open_from_package("kgdb", "rules.lark", ("dsl",), parser="lalr",
                           propagate_positions=True, strict=True)


def test_paper_rules_verbatim() -> None:
    rules = load_rules(PAPER)
    assert [r.concept for r in rules.rules] == [G1, G2, HT]
    g1 = rules.rule(G1).expr
    assert g1 == Or((Compare(Property("SystolicPressure"), ">=", Literal(140)),
                     Compare(Property("DiastolicPressure"), ">=", Literal(90))))
    assert rules.rule(HT).expr == Or((ConceptRef(G1), ConceptRef(G2)))
    assert rules.rule(HT).references() == (G1, G2)


@pytest.mark.parametrize("and_op,or_op,not_op", [
    ("AND", "OR", "NOT"), ("and", "or", "not"), ("&&", "||", "!"), ("And", "Or", "Not"),
])
def test_operator_spellings(and_op: str, or_op: str, not_op: str) -> None:
    text = f"Define (T/'x') {{ {not_op} a > 1 {and_op} (b < 2 {or_op} c) }}"
    expr = load_rules(text).rules[0].expr
    assert expr == And((Not(Compare(Property("a"), ">", Literal(1))),
                        Or((Compare(Property("b"), "<", Literal(2)), Truthy(Property("c"))))))


def test_precedence_and_binds_tighter_than_or() -> None:
    expr = load_rules("Define (T/'x') { a OR b AND NOT c }").rules[0].expr
    assert expr == Or((Truthy(Property("a")),
                       And((Truthy(Property("b")), Not(Truthy(Property("c")))))))


def test_backquoted_concepts_and_subject_predicate_form() -> None:
    text = ("Define (DiseaseSeverity/`Grade1Hypertension`) { s >= 140 }\n"
            "Define (Patient)-[hasRisk]->(Risk/`High`) { DiseaseSeverity/`Grade1Hypertension` }")
    rules = load_rules(text)
    high = rules.rule(ConceptKey("Risk", "High"))
    assert high.subject == "Patient" and high.predicate == "hasRisk"
    assert high.expr == ConceptRef(ConceptKey("DiseaseSeverity", "Grade1Hypertension"))
    assert rules.rules[0].predicate == "belongTo"


def test_comparison_forms() -> None:
    text = "Define (T/'x') { a == 1 AND b != 'x' AND c <> \"y\" AND d = true AND 2.5 <= e AND f < g }"
    items = load_rules(text).rules[0].expr.items  # type: ignore[union-attr]
    assert [i.op for i in items] == ["=", "<>", "<>", "=", "<=", "<"]
    assert items[1].right == Literal("x") and items[3].right == Literal(True)
    assert items[4].left == Literal(2.5) and items[5].right == Property("g")


def test_subrules_local_and_top_level() -> None:
    text = """
    R1("systolic high"): SystolicPressure >= 140
    Define (T/'a') { R2("diastolic high"): DiastolicPressure >= 90  R1 OR R2 }
    Define (T/'b') { NOT R1 }
    """
    rules = load_rules(text)
    a = rules.rule(ConceptKey("T", "a")).expr
    assert isinstance(a, Or) and [type(i) for i in a.items] == [SubRuleRef, SubRuleRef]
    assert concluded(text, {"SystolicPressure": 150}) == ["T/a"]
    assert concluded(text, {"SystolicPressure": 120, "DiastolicPressure": 95}) == ["T/a", "T/b"]
    assert "R2(\"diastolic high\"): DiastolicPressure >= 90" in rules.rules[0].text


def test_priority_suppresses_siblings_after_dependents() -> None:
    text = PAPER + PRIORITY
    assert concluded(text, {"SystolicPressure": 160, "DiastolicPressure": 95}) == [G2.id, HT.id]
    assert concluded(text, {"SystolicPressure": 130, "DiastolicPressure": 85}) == []
    assert concluded(text, {"SystolicPressure": 150}) == [G1.id, HT.id]
    # Without priorities both grades hold.
    assert concluded(PAPER, {"SystolicPressure": 160}) == [G1.id, G2.id, HT.id]


@pytest.mark.parametrize("entries", [
    "Grade2=100 Grade1=50", "'Grade 2 Hypertension'=100, 'Grade 1 Hypertension'=50",
    "`Grade 2 Hypertension`=100; grade1hypertension=50", '"grade 2"=100 Grade_1=50',
])
def test_priority_key_spellings(entries: str) -> None:
    rules = load_rules(PAPER + f"DefinePriority(DiseaseSeverity) {{ {entries} }}")
    assert rules.rule(G1).outranked_by == (G2,)
    assert rules.rule(G1).priority == 50 and rules.rule(G2).priority == 100


def test_three_valued_logic() -> None:
    assert compare_values(None, ">=", 140) is None
    assert compare_values("a", "<", 1) is None
    assert compare_values("a", "=", 1) is False and compare_values(1, "=", 1.0) is True
    assert compare_values(True, "=", 1) is False
    assert [truthy(v) for v in (None, 0, 0.0, "", False, 1, "x", True, 2.5)] == \
        [None, False, False, False, False, True, True, True, True]
    # unknown OR true = true; unknown AND false = false; NOT unknown = unknown (not concluded)
    assert concluded("Define (T/'x') { a > 1 OR b > 1 }", {"b": 2}) == ["T/x"]
    assert concluded("Define (T/'x') { NOT (a > 1 AND b > 1) }", {"b": 0}) == ["T/x"]
    assert concluded("Define (T/'x') { NOT a > 1 }", {}) == []
    assert concluded("Define (T/'x') { a > 1 OR b > 1 }", {"b": 0}) == []
    # A reference to a concept whose body is unknown is false, so NOT of it is true.
    assert concluded("Define (T/'x') { a > 1 } Define (T/'y') { NOT T/'x' }", {}) == ["T/y"]


def test_dependency_order() -> None:
    text = "Define (T/'c') { T/'b' } Define (T/'b') { T/'a' } Define (T/'a') { x > 0 }"
    assert [r.concept.name for r in load_rules(text).rules] == ["a", "b", "c"]
    assert concluded(text, {"x": 1}) == ["T/a", "T/b", "T/c"]


def test_canonical_text_parses_back() -> None:
    text = ("R1(\"d\"): a >= 1\nDefine (T/'x y') { R2: `R3` OR 'q' = b  NOT (R1 AND R2) "
            "AND (c OR T/'z') }\nDefine (T/'z') { e < -2.5 }")
    rules = load_rules(text)
    again = load_rules("R1(\"d\"): a >= 1\n" + "\n".join(r.text for r in rules.rules))
    assert [r.expr for r in again.rules] == [r.expr for r in rules.rules]
    assert expr_text(rules.rule(ConceptKey("T", "z")).expr) == "e < -2.5"


# ------------------------------------------------------------------ errors
def error_of(text: str) -> DslError:
    with pytest.raises(DslError) as info:
        load_rules(text, "x.rules")
    return info.value


def test_syntax_error_has_position_caret_and_expected() -> None:
    err = error_of("Define (T/'x') {\n  a >= 140 OR\n}\n")
    assert isinstance(err, DslSyntaxError)
    assert (err.line, err.column) == (3, 1)
    assert str(err).splitlines()[0].startswith("x.rules:3:1: unexpected '}'; expected ")
    assert "a number" in err.expected and "a name" in err.expected
    assert str(err).splitlines()[1:] == ["}", "^"]


def test_syntax_error_bad_character_and_eof() -> None:
    err = error_of("Define (T/'x') { a >= @ }")
    assert isinstance(err, DslSyntaxError) and (err.line, err.column) == (1, 23)
    assert "unexpected character '@'" in str(err)
    assert str(err).splitlines()[2] == " " * 22 + "^"
    eof = error_of("Define (T/'x') { a >= 1")
    assert isinstance(eof, DslSyntaxError) and eof.line == 1
    assert "end of input" in str(eof)


def test_too_deep_nesting_is_a_syntax_error() -> None:
    # Redundant parentheses add no depth; operators do.
    assert load_rules("Define (T/'x') { " + "(" * 300 + "a" + ")" * 300 + " }").rules
    err = error_of("Define (T/'x') { " + "a AND (b OR (" * 150 + "c" + "))" * 150 + " }")
    assert isinstance(err, DslSyntaxError) and "nested more than" in str(err)
    assert isinstance(error_of("Define (T/'x') { " + "NOT " * 400 + "a }"), DslSyntaxError)


@pytest.mark.parametrize("text,line,column,fragment", [
    ("Define (T/'x') { T/'y' }", 1, 18, "unknown concept T/'y'"),
    ("Define (T/'a') { x }\nDefine (T/'b') { T/'A' }", 2, 18, "did you mean 'T/a'"),
    ("Define (T/'x') { R7 }", 1, 18, "unknown sub-rule R7"),
    ("Define (T/'x') { R1 }\nR1: a > 1", 1, 18, "sub-rule R1 is not visible here"),
    ("Define (T/'a') { R1: x > 1  R1 }\nDefine (T/'b') { R1 }", 2, 18, "defined at line 1"),
    ("Define (T/'a') { T/'b' }\nDefine (T/'b') { T/'c' }\nDefine (T/'c') { T/'a' OR z }", 1, 9,
     "cycle: T/'a' -> T/'b' -> T/'c' -> T/'a'"),
    ("Define (T/'a') { T/'a' }", 1, 9, "cycle: T/'a' -> T/'a'"),
    (PAPER + "DefinePriority(DiseaseSeverity) { Grade3=1 }", 10, 35, "names no DiseaseSeverity concept"),
    (PAPER + "DefinePriority(DiseaseSeverty) { Grade2=1 }", 10, 1, "did you mean 'DiseaseSeverity'"),
    (PAPER + "DefinePriority(DiseaseSeverity) { Grade=1 }", 10, 35, "ambiguous"),
    ("Define (T/'a') { x }\nDefine (T/'a') { y }", 2, 9, "defined twice"),
])
def test_semantic_errors_carry_positions(text: str, line: int, column: int, fragment: str) -> None:
    err = error_of(text)
    assert isinstance(err, DslSemanticError), err
    assert (err.line, err.column) == (line, column), str(err)
    assert fragment in str(err)
    assert str(err).startswith(f"x.rules:{line}:{column}: ")


def test_every_example_parses() -> None:
    files = sorted((ROOT / "dsl" / "examples").glob("*.rules"))
    assert files
    for path in files:
        assert load_rules(path.read_text(), str(path)).rules, path


def test_parse_keeps_positions() -> None:
    program = parse("\n  Define (T/'x') {\n    a >= 1 }")
    define = program.items[0]
    assert (define.span.line, define.span.column) == (2, 3)  # type: ignore[union-attr]
    assert define.expr.left.span.line == 3  # type: ignore[union-attr]
