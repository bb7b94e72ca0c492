"""Run compiled rules against a graph: materialise conclusions, or judge facts at ask time."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kgdb.cypher import rules as cypher_rules
from kgdb.dsl.rules_ast import RuleSet
from kgdb.engine.base import GraphStore
from kgdb.errors import EngineError
from kgdb.solve.rules import Conclusion, check_facts


@dataclass
class RulesReport:
    """What one materialisation did, statement by statement, and the resulting counts."""

    ruleset: str
    evaluated_at: str
    steps: list[tuple[str, int]] = field(default_factory=list)
    """(description, rows reported by the statement: conclusions made or edges removed)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Concept id -> instances concluded, for this ruleset's concepts."""


def apply_rules(store: GraphStore, rules: RuleSet, *, label: str | None, ruleset: str,
                evaluated_at: str | None = None,
                progress: Callable[[str], None] | None = None) -> RulesReport:
    """Materialise ``rules`` on the stored nodes: every statement is idempotent, so a run that
    stopped half-way is completed by running it again."""
    at = evaluated_at or _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    report = RulesReport(ruleset, at)
    statements = cypher_rules.materialise_statements(store.dialect, rules, label=label,
                                                     ruleset=ruleset, evaluated_at=at)
    for description, statement in statements:
        if progress:
            progress(description)
        result = store.run(statement)
        report.steps.append((description, int(result.value(0) or 0)))
    ids = set(rules.concept_ids)
    for predicate in dict.fromkeys(r.predicate for r in rules.rules):
        labels = dict.fromkeys(cypher_rules.instance_label(rules, r, label) for r in rules.rules
                               if r.predicate == predicate)
        for node_label in labels:
            rows = store.run(cypher_rules.count_conclusions(store.dialect, node_label, predicate))
            for row in rows.records():
                if row["concept"] in ids:
                    report.counts[row["concept"]] = report.counts.get(row["concept"], 0) \
                        + int(row["instances"])
    return report


def ask(store: GraphStore, rules: RuleSet, facts: Mapping[str, Any]) -> list[Conclusion]:
    """Judge ``facts`` with the compiled rules inside the database (read-only, nothing written)."""
    check_facts(facts)
    statement = cypher_rules.judge_facts(cypher_rules.evaluate_facts(store.dialect, rules), facts)
    result = store.run(statement)
    by_id = {r.concept.id: r for r in rules.rules}
    conclusions = []
    for row in result.records():
        rule = by_id.get(row["concept"])
        if rule is None:
            raise EngineError(f"the engine returned an unknown concept {row['concept']!r}")
        conclusions.append(Conclusion(rule.concept, rule.predicate, rule))
    return conclusions
