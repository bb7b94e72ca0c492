"""``kgdb rules``: compile rule files to Cypher, materialise them, judge facts at ask time."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from kgdb.cli.context import current_context
from kgdb.cli.output import emit_json, json_option
from kgdb.cypher import rules as cypher_rules
from kgdb.dialects import get_dialect
from kgdb.dsl.rules_ast import RuleSet
from kgdb.dsl.rules_check import load_rules
from kgdb.errors import DslError
from kgdb.solve.rules import Conclusion, evaluate


@contextlib.contextmanager
def _label_flag() -> Iterator[None]:
    """The library names its ``label`` parameter; on the command line that is ``--label``."""
    try:
        yield
    except DslError as exc:
        if "the label option" not in str(exc):
            raise
        raise DslError(str(exc).replace("the label option", "--label")) from exc


def read_rules(path: Path) -> RuleSet:
    from kgdb.text import read_text_file

    return load_rules(read_text_file(path, what="rule file"), str(path))


def conclusion_json(subject: str, c: Conclusion) -> dict[str, Any]:
    return {
        "subject": subject, "predicate": c.predicate, "object": c.concept.id,
        "concept": {"type": c.concept.type, "name": c.concept.name},
        "rule": c.rule.text, "location": c.rule.location,
    }


@click.group("rules")
def rules_group() -> None:
    """Concept rules (KAG's rule DSL): compile to Cypher, materialise, evaluate facts."""


@rules_group.command("compile")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--dialect", "dialect_name", default="neo4j", show_default=True,
              help="neo4j or falkordb")
@click.option("--label", default=None, help="Label of the nodes judged by rules without a subject type.")
@click.option("--ruleset", default=None, help="Name stored on conclusions (default: the file name).")
def compile_command(file: Path, dialect_name: str, label: str | None, ruleset: str | None) -> None:
    """Print the Cypher (and parameters) of FILE's rules; needs no database."""
    rules = read_rules(file)
    dialect = get_dialect(dialect_name)
    with _label_flag():
        script = cypher_rules.script(
            dialect, rules, label=label, ruleset=ruleset or file.stem,
            header=f"kgdb rules compile {file.name} --dialect {dialect.NAME}"
                   + (f" --label {label}" if label else ""))
    click.echo(script, nl=False)


@rules_group.command("apply")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--label", default=None, help="Label of the nodes judged by rules without a subject type.")
@click.option("--ruleset", default=None, help="Name stored on conclusions (default: the file name).")
def apply_command(file: Path, label: str | None, ruleset: str | None) -> None:
    """Materialise FILE's conclusions as (node)-[:belongTo]->(:Concept) in the graph."""
    from kgdb.solve.rules_apply import apply_rules

    rules = read_rules(file)
    with _label_flag():
        report = apply_rules(current_context().store, rules, label=label,
                             ruleset=ruleset or file.stem)
    for description, rows in report.steps:
        click.echo(f"{description}: {rows}")
    click.echo(f"ruleset {report.ruleset!r} evaluated at {report.evaluated_at}")
    for rule in rules.rules:
        click.echo(f"{rule.concept.id}\t{report.counts.get(rule.concept.id, 0)}")


@rules_group.command("eval")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--facts", "facts_json", required=True,
              help='The instance\'s properties as a JSON object, e.g. \'{"SystolicPressure": 160}\'.')
@json_option
@click.option("--local", is_flag=True,
              help="Evaluate in Python (the reference evaluator) instead of in the database.")
@click.option("--subject", default="input", show_default=True, help="How to name the instance.")
def eval_command(file: Path, facts_json: str, as_json: bool, local: bool, subject: str) -> None:
    """Judge facts given with a question; writes nothing."""
    rules = read_rules(file)
    from kgdb.text import check_statement, limits

    if len(facts_json) > limits().program_bytes:
        raise DslError(f"--facts is longer than {limits().program_bytes} characters "
                       "(KGDB_MAX_PROGRAM_BYTES)")
    try:
        facts = json.loads(facts_json)
    except ValueError as exc:
        raise DslError(f"--facts is not valid JSON: {exc}") from exc
    except RecursionError:
        # from None: the cause is a recursion a thousand frames deep that says no
        # more than the message
        raise DslError("--facts is nested too deeply") from None
    check_statement("", {"facts": facts})  # the text contract, also for --local
    if local:
        conclusions = evaluate(rules, facts)
    else:
        from kgdb.solve.rules_apply import ask

        conclusions = ask(current_context().store, rules, facts)
    if as_json:
        emit_json({"facts": facts,
                   "conclusions": [conclusion_json(subject, c) for c in conclusions]})
        return
    if not conclusions:
        click.echo("no conclusion")
    for c in conclusions:
        click.echo(f"({subject})-[{c.predicate}]->({c.concept.id})\trule {c.rule.location}: "
                   f"{c.rule.text}")
