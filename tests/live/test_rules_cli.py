"""``kgdb rules`` and ``kgdb load records`` in-process (click CliRunner), with exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgdb.cli import cli

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
RULES = str(ROOT / "dsl" / "examples" / "hypertension.rules")
G1, G2, HT = ("DiseaseSeverity/Grade 1 Hypertension", "DiseaseSeverity/Grade 2 Hypertension",
              "Disease/Hypertension")


@pytest.fixture
def cli_graph(cli_store):  # type: ignore[no-untyped-def]
    """The CLI points at the test's fresh graph (either engine)."""
    return cli_store


def kgdb(*args: str):  # type: ignore[no-untyped-def]
    """``kgdb ARGS`` in-process."""
    return CliRunner().invoke(cli, list(args))


def run_eval(facts: dict, *extra: str):  # type: ignore[no-untyped-def]
    return kgdb("rules", "eval", RULES, "--facts", json.dumps(facts), *extra)


@pytest.mark.parametrize("local", [False, True])
@pytest.mark.parametrize("facts,expected", [
    ({"SystolicPressure": 160, "DiastolicPressure": 95}, [G2, HT]),
    ({"SystolicPressure": 130, "DiastolicPressure": 85}, []),
    ({"SystolicPressure": 150}, [G1, HT]),  # diastolic missing: unknown OR true is true
])
def test_eval_ask_time_cases(cli_graph, facts: dict, expected: list[str], local: bool) -> None:  # type: ignore[no-untyped-def]
    result = run_eval(facts, "--json", *(["--local"] if local else []))
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert [c["object"] for c in out["conclusions"]] == expected
    for c in out["conclusions"]:
        assert c["subject"] == "input" and c["predicate"] == "belongTo"
        name = c["concept"]["name"]
        assert c["rule"].startswith(f"Define ({c['concept']['type']}/'{name}')")
        assert c["location"].startswith(RULES + ":")
    assert cli_graph.run("MATCH (n) RETURN count(n)").value() == 0


def test_eval_text_output(cli_graph) -> None:  # type: ignore[no-untyped-def]
    result = run_eval({"SystolicPressure": 160, "DiastolicPressure": 95})
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].startswith(f"(input)-[belongTo]->({G2})\trule {RULES}:6: Define (DiseaseSeverity/"
                               "'Grade 2 Hypertension') { SystolicPressure >= 160")
    assert lines[1].startswith(f"(input)-[belongTo]->({HT})")
    assert run_eval({"SystolicPressure": 120}).output == "no conclusion\n"


@pytest.mark.parametrize("facts_arg,message", [
    ('{"SystolicPressure": 160', "--facts is not valid JSON"),
    ('[1, 2]', "facts must be a JSON object"),
    ('{"SystolicPressure": [160]}', "'SystolicPressure' is a list"),
])
def test_eval_bad_facts_exit_1(facts_arg: str, message: str) -> None:
    result = kgdb("rules", "eval", RULES, "--facts", facts_arg, "--local")
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output


def test_syntax_error_exit_1_with_position(tmp_path: Path) -> None:
    bad = tmp_path / "bad.rules"
    bad.write_text("Define (T/'x') {\n  a >= 140 OR\n}\n")
    result = kgdb("rules", "compile", str(bad))
    assert result.exit_code == 1
    assert f"{bad}:3:1: unexpected '}}'; expected" in result.output
    assert result.output.rstrip().endswith("}\n^")


def test_semantic_error_exit_1(tmp_path: Path) -> None:
    bad = tmp_path / "cycle.rules"
    bad.write_text("Define (T/'a') { T/'b' }\nDefine (T/'b') { T/'a' }\n")
    result = kgdb("rules", "eval", str(bad), "--facts", "{}", "--local")
    assert result.exit_code == 1
    assert f"{bad}:1:9: rules form a cycle: T/'a' -> T/'b' -> T/'a'" in result.output


def test_compile_prints_cypher_for_both_dialects() -> None:
    for dialect, marker in [("neo4j", "MERGE (c:`Concept` {id: $concept_id})"),
                            ("falkordb", "WITH $facts AS n")]:
        result = kgdb("rules", "compile", RULES, "--dialect", dialect, "--label", "Patient")
        assert result.exit_code == 0, result.output
        assert marker in result.output and "// params: " in result.output
    unknown = kgdb("rules", "compile", RULES, "--dialect", "neo4", "--label", "P")
    assert unknown.exit_code == 1 and "did you mean 'neo4j'" in unknown.output
    no_label = kgdb("rules", "compile", RULES)
    assert no_label.exit_code == 1 and "give the label of the nodes it judges (--label)" in no_label.output


def test_load_and_apply_through_the_cli(cli_graph, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "bp.csv"
    data.write_text("pid,sys,dia\nA,160,95\nB,130,85\nC,150,-\nD,-,-\n")
    spec = tmp_path / "bp.toml"
    spec.write_text(
        '[file]\npath = "bp.csv"\nmissing = ["-"]\n'
        '[entity]\nlabel = "Patient"\nid_column = "pid"\n'
        '[[columns]]\ncolumn = "sys"\nproperty = "SystolicPressure"\ntype = "float"\n'
        '[[columns]]\ncolumn = "dia"\nproperty = "DiastolicPressure"\ntype = "float"\n')
    loaded = kgdb("load", "records", str(spec))
    assert loaded.exit_code == 0, loaded.output
    assert "loaded 4 :Patient records" in loaded.output
    applied = kgdb("rules", "apply", RULES, "--label", "Patient")
    assert applied.exit_code == 0, applied.output
    assert f"{G1}\t1\n{G2}\t1\n{HT}\t2\n" in applied.output
    rows = cli_graph.run("MATCH (p:Patient)-[:belongTo]->(c:Concept) RETURN p.id, c.id "
                         "ORDER BY p.id, c.id").rows
    assert rows == [["A", HT], ["A", G2], ["C", HT], ["C", G1]]

    data.write_text("pid,sys,dia\nA,160,95\nB,abc,85\n")
    bad = kgdb("load", "records", str(spec))
    assert bad.exit_code == 1
    assert f"{data}:3: column sys (SystolicPressure): 'abc' is not a float" in bad.output
