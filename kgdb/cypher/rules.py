"""Cypher for concept rules: materialise conclusions on stored nodes, or evaluate given facts.

A rule body compiles to one Cypher boolean expression over an instance variable ``n`` (a node
when materialising, the ``$facts`` map at ask time), so the same compiled logic runs in both.

* Three-valued logic is Cypher's own: a missing property is ``null``, ``null >= 140`` is
  ``null``, ``null OR true`` is ``true``, ``null AND false`` is ``false``, ``NOT null`` is
  ``null``. Bodies compile operator for operator; only the outermost value is closed with
  ``coalesce(..., false)`` (a concept holds only when its body is TRUE).
* A bare property ``Smoker`` is ``CASE WHEN n.Smoker IS NULL THEN null ELSE NOT (n.Smoker IN
  [false, 0, 0.0, '']) END``: unknown when missing, false for false/0/'' (verified on both
  engines: ``true IN [false, 0]`` is false).
* A reference to another concept is inlined as ``coalesce(<its body>, false)``: the raw
  membership (before priorities), so dependency order holds by construction and a rule never
  reads half-written conclusions. Concept references need no ``EXISTS {}`` (FalkorDB has none).
* Priorities: a concept with higher-priority siblings holds when its body is TRUE and no such
  sibling's body is TRUE.

Every literal of a rule is a parameter; labels, relationship types and keys go through
``dialect.ident``. Materialising is a short list of single statements, each idempotent, so a
run that stops half-way is finished by running it again (FalkorDB has no transactions).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kgdb.dialects.base import Dialect
from kgdb.dsl.rules_ast import (
    And,
    Compare,
    ConceptKey,
    ConceptRef,
    Expr,
    Not,
    Operand,
    Or,
    Property,
    Rule,
    RuleSet,
    SubRuleRef,
    Truthy,
)
from kgdb.errors import DslError, InvalidIdentifierError
from kgdb.statement import Statement
from kgdb.vocabulary import CONCEPT as CONCEPT_LABEL

CREATED_BY = "kgdb rules"
"""``createdBy`` of concept nodes that rules created; only those are removed when orphaned."""
MAX_CONDITION_CHARS = 200_000
"""A rule whose inlined Cypher condition grows beyond this is rejected (deeply shared references)."""
INSTANCE = "n"


class ParamPool:
    """Names literal values as ``$v1``, ``$v2``... (one name per distinct value)."""

    def __init__(self) -> None:
        self.params: dict[str, Any] = {}
        self._names: dict[tuple[str, Any], str] = {}

    def add(self, value: Any, name: str | None = None) -> str:
        if name is not None:
            self.params[name] = value
            return f"${name}"
        key = (type(value).__name__, value)
        if key not in self._names:
            self._names[key] = f"v{len(self._names) + 1}"
            self.params[self._names[key]] = value
        return f"${self._names[key]}"


class ConditionCompiler:
    """Compiles rule bodies of one :class:`RuleSet` into Cypher conditions on ``var``."""

    def __init__(self, dialect: Dialect, rules: RuleSet, pool: ParamPool, var: str = INSTANCE) -> None:
        self.dialect, self.rules, self.pool, self.var = dialect, rules, pool, var
        self._raw: dict[ConceptKey, str] = {}

    def prop(self, prop: Property) -> str:
        try:
            return f"{self.var}.{self.dialect.ident(prop.name)}"
        except InvalidIdentifierError as exc:
            raise self.rules.error(f"property name {prop.name[:40]!r} cannot be used: {exc}",
                                   prop.span) from exc

    def operand(self, op: Operand) -> str:
        return self.prop(op) if isinstance(op, Property) else self.pool.add(op.value)

    def expr(self, expr: Expr) -> str:
        if isinstance(expr, Compare):
            return f"{self.operand(expr.left)} {expr.op} {self.operand(expr.right)}"
        if isinstance(expr, Truthy):
            p = self.prop(expr.prop)
            falsy = ", ".join(self.pool.add(v) for v in (False, 0, 0.0, ""))
            return f"CASE WHEN {p} IS NULL THEN null ELSE NOT ({p} IN [{falsy}]) END"
        if isinstance(expr, ConceptRef):
            return f"coalesce({self.raw(expr.concept)}, false)"
        if isinstance(expr, SubRuleRef):
            return f"({self.expr(expr.expr)})"
        if isinstance(expr, Not):
            return f"NOT ({self.expr(expr.item)})"
        if isinstance(expr, (And, Or)):
            joiner = " AND " if isinstance(expr, And) else " OR "
            return joiner.join(f"({self.expr(e)})" for e in expr.items)
        raise DslError(f"unresolved name in a rule body: {expr!r}")

    def raw(self, concept: ConceptKey) -> str:
        """The concept's body as a Cypher expression (true, false or null)."""
        if concept not in self._raw:
            rule = self.rules.rule(concept)
            text = self.expr(rule.expr)
            if len(text) > MAX_CONDITION_CHARS:
                raise self.rules.error(
                    f"rule for {concept.text()} expands to {len(text)} characters of Cypher "
                    f"(limit {MAX_CONDITION_CHARS}): too many nested concept references", rule.span)
            self._raw[concept] = text
        return self._raw[concept]

    def holds(self, rule: Rule) -> str:
        """TRUE exactly when the rule concludes (body TRUE, no higher-priority sibling TRUE)."""
        parts = [f"coalesce({self.raw(rule.concept)}, false)"]
        parts += [f"NOT coalesce({self.raw(k)}, false)" for k in rule.outranked_by]
        return " AND ".join(parts) if len(parts) == 1 else " AND ".join(f"({p})" for p in parts)


def instance_label(rules: RuleSet, rule: Rule, default_label: str | None) -> str:
    """Which stored nodes a rule judges: its Define subject type, else ``default_label``."""
    label = rule.subject or default_label
    if not label:
        raise rules.error(f"Define ({rule.concept.text()}) names no subject type: give the "
                          "label of the nodes it judges (the label option)", rule.span)
    return label


def _ident(dialect: Dialect, name: str, rules: RuleSet, rule: Rule) -> str:
    try:
        return dialect.ident(name)
    except InvalidIdentifierError as exc:
        raise rules.error(str(exc), rule.span) from exc


# ====================================================================== materialise
def merge_concept(dialect: Dialect, rules: RuleSet, rule: Rule) -> Statement:
    """Create the concept node if missing (``:Concept`` plus its type's label).

    An existing concept is touched only when it lacks the label: concepts may carry an
    indexed embedding, and on FalkorDB every write to such a node leaves a stale vector-index
    entry (see kgdb/cypher/catalog.py).
    """
    label = _ident(dialect, rule.concept.type, rules, rule)
    text = (
        f"MERGE (c:{dialect.ident(CONCEPT_LABEL)} {{id: $concept_id}})\n"
        f"ON CREATE SET c.name = $concept_name, c.createdBy = $created_by, c:{label}\n"
        "WITH c\n"
        f"WHERE NOT c:{label}\n"
        f"SET c:{label}"
    )
    return Statement(text, {"concept_id": rule.concept.id, "concept_name": rule.concept.name,
                            "created_by": CREATED_BY}, write=True, idempotent=True)


def delete_stale_conclusions(dialect: Dialect, rules: RuleSet, rule: Rule, label: str) -> Statement:
    """Remove rule-made edges into the concept that no longer hold (data or rule changed), or
    that a previous version wrote with another predicate or from nodes of another label."""
    pool = ParamPool()
    holds = ConditionCompiler(dialect, rules, pool).holds(rule)
    text = (
        f"MATCH ({INSTANCE})-[r]->(c:{dialect.ident(CONCEPT_LABEL)} {{id: $concept_id}})\n"
        f"WHERE r.ruleset IS NOT NULL AND (type(r) <> $predicate OR NOT {INSTANCE}:"
        f"{_ident(dialect, label, rules, rule)}\n"
        f"  OR NOT ({holds}))\n"
        "DELETE r\n"
        "RETURN count(*) AS removed"
    )
    params = {**pool.params, "concept_id": rule.concept.id, "predicate": rule.predicate}
    return Statement(text, params, write=True)


def merge_conclusions(dialect: Dialect, rules: RuleSet, rule: Rule, label: str, ruleset: str,
                      evaluated_at: str) -> Statement:
    """``(n)-[:belongTo {rule, ruleset, evaluatedAt}]->(concept)`` for every node where it holds."""
    pool = ParamPool()
    holds = ConditionCompiler(dialect, rules, pool).holds(rule)
    text = (
        f"MATCH (c:{dialect.ident(CONCEPT_LABEL)} {{id: $concept_id}})\n"
        f"MATCH ({INSTANCE}:{_ident(dialect, label, rules, rule)})\n"
        f"WHERE {holds}\n"
        f"MERGE ({INSTANCE})-[r:{_ident(dialect, rule.predicate, rules, rule)}]->(c)\n"
        "SET r.rule = $rule, r.ruleset = $ruleset, r.evaluatedAt = $evaluated_at\n"
        "RETURN count(r) AS conclusions"
    )
    params = {**pool.params, "concept_id": rule.concept.id, "rule": rule.text,
              "ruleset": ruleset, "evaluated_at": evaluated_at}
    return Statement(text, params, write=True)


def delete_retired_conclusions(dialect: Dialect, rules: RuleSet, ruleset: str) -> Statement:
    """Remove edges this ruleset wrote into concepts it no longer defines (a rule was deleted)."""
    text = (
        f"MATCH ()-[r]->(c:{dialect.ident(CONCEPT_LABEL)})\n"
        "WHERE r.ruleset = $ruleset AND NOT c.id IN $concept_ids\n"
        "DELETE r\n"
        "RETURN count(*) AS removed"
    )
    return Statement(text, {"ruleset": ruleset, "concept_ids": rules.concept_ids}, write=True)


def delete_orphan_concepts(dialect: Dialect) -> Statement:
    """Remove concept nodes that rules created and that nothing links to any more."""
    text = (
        f"MATCH (c:{dialect.ident(CONCEPT_LABEL)})\n"
        "WHERE c.createdBy = $created_by AND NOT (c)--()\n"
        "DELETE c\n"
        "RETURN count(*) AS removed"
    )
    return Statement(text, {"created_by": CREATED_BY}, write=True)


def materialise_statements(dialect: Dialect, rules: RuleSet, *, label: str | None, ruleset: str,
                           evaluated_at: str) -> list[tuple[str, Statement]]:
    """The statements of one materialisation, in order, each with a short description.

    Rules come in dependency order. Each statement is idempotent; re-running the list after a
    stop, a data change or a rule change converges to the same graph.
    """
    out: list[tuple[str, Statement]] = []
    for rule in rules.rules:
        node_label = instance_label(rules, rule, label)
        name = rule.concept.text()
        out.append((f"concept node {name}", merge_concept(dialect, rules, rule)))
        out.append((f"remove stale conclusions of {name}",
                    delete_stale_conclusions(dialect, rules, rule, node_label)))
        out.append((f"conclude {name} on :{node_label}",
                    merge_conclusions(dialect, rules, rule, node_label, ruleset, evaluated_at)))
    out.append(("remove conclusions of deleted rules", delete_retired_conclusions(dialect, rules, ruleset)))
    out.append(("remove orphaned concept nodes", delete_orphan_concepts(dialect)))
    return out


def count_conclusions(dialect: Dialect, label: str, predicate: str = "belongTo") -> Statement:
    """How many ``label`` nodes belong to each concept: the query a BI tool would run."""
    text = (
        f"MATCH (n:{dialect.ident(label)})-[:{dialect.ident(predicate)}]->"
        f"(c:{dialect.ident(CONCEPT_LABEL)})\n"
        "RETURN c.id AS concept, count(n) AS instances\n"
        "ORDER BY concept"
    )
    return Statement(text)


# ====================================================================== ask time
def evaluate_facts(dialect: Dialect, rules: RuleSet, *, detail: bool = False) -> Statement:
    """A read-only statement judging ``$facts`` (a map of property values): one row per
    conclusion, in dependency order, with the concept's id. Nothing is written. With
    ``detail`` the rows also carry the concept's ``type`` and ``name``, the ``predicate``
    and the ``rule`` text (what ``custom.kgdb.rules.<name>`` returns)."""
    pool = ParamPool()
    compiler = ConditionCompiler(dialect, rules, pool)
    entries = []
    for i, rule in enumerate(rules.rules):
        concept = pool.add(rule.concept.id, name=f"concept_{i}")
        extra = ""
        if detail:
            extra = "".join(
                f"{key}: {pool.add(value, name=f'{key}_{i}')}, " for key, value in (
                    ("type", rule.concept.type), ("name", rule.concept.name),
                    ("predicate", rule.predicate), ("rule", rule.text)))
        entries.append(f"  {{concept: {concept}, {extra}holds: {compiler.holds(rule)}}}")
    body = ",\n".join(entries)
    columns = "conclusion.concept AS concept"
    if detail:
        columns += (", conclusion.type AS type, conclusion.name AS name, "
                    "conclusion.predicate AS predicate, conclusion.rule AS rule")
    text = (
        f"WITH $facts AS {INSTANCE}\n"
        f"UNWIND [\n{body}\n] AS conclusion\n"
        "WITH conclusion WHERE conclusion.holds\n"
        f"RETURN {columns}"
    )
    return Statement(text, {**pool.params, "facts": {}})


APPLY_TIME = "<set by kgdb rules apply>"
"""The ``evaluated_at`` a script shows; ``kgdb rules apply`` passes the current time."""


def judge_facts(statement: Statement, facts: Mapping[str, Any]) -> Statement:
    """The :func:`evaluate_facts` statement with ``facts`` (property name -> value) bound."""
    return statement.with_params(facts=dict(facts))


def script(dialect: Dialect, rules: RuleSet, *, label: str | None, ruleset: str,
                    header: str = "") -> str:
    """Every statement of ``rules`` for ``dialect``, with its parameters, as a readable script
    (``kgdb rules compile``)."""
    out = [f"// {header}"] if header else []
    out.append(f"// Dialect: {dialect.NAME}. Values are parameters (shown above each statement).")
    out.append("")
    out.append("// ==== Materialise (kgdb rules apply): run in this order; each statement is "
               "idempotent.")
    statements = materialise_statements(dialect, rules, label=label, ruleset=ruleset,
                                                     evaluated_at=APPLY_TIME)
    for i, (description, statement) in enumerate(statements, 1):
        out.append(f"// -- {i}. {description}")
        out.append(f"// params: {json.dumps(statement.params, ensure_ascii=False, sort_keys=True)}")
        out.append(statement.text + ";")
        out.append("")
    ask = evaluate_facts(dialect, rules)
    out.append("// ==== Ask time (kgdb rules eval): read-only, judges the map $facts.")
    out.append(f"// params: {json.dumps(ask.params, ensure_ascii=False, sort_keys=True)}")
    out.append(ask.text + ";")
    return "\n".join(out) + "\n"
