"""Semantic checks of the rule language: resolve names, check references, priorities and
cycles, order rules by dependency (Program -> RuleSet). Semantics: dsl/README.md, "Rules"."""

from __future__ import annotations

import re
from collections.abc import Mapping

from kgdb.dsl.rules_ast import (
    DEFAULT_PREDICATE,
    SUBRULE_NAME,
    And,
    ConceptKey,
    ConceptRef,
    Define,
    Expr,
    NameRef,
    Not,
    Or,
    Priority,
    Program,
    Property,
    Rule,
    RuleSet,
    Span,
    SubRule,
    SubRuleRef,
    Truthy,
    concept_refs,
    source_line,
)
from kgdb.dsl.rules_parser import parse
from kgdb.dsl.rules_text import define_text
from kgdb.errors import DslSemanticError, DslSyntaxError, did_you_mean
from kgdb.text import limits, text_problem


class _Analyser:
    def __init__(self, program: Program) -> None:
        self.program = program
        self.source = program.source
        self.name = program.source_name

    def error(self, message: str, span: Span) -> DslSemanticError:
        return DslSemanticError(message, line=span.line, column=span.column,
                                source_line=source_line(self.source, span.line), file=self.name)

    def run(self) -> RuleSet:
        defines = [i for i in self.program.items if isinstance(i, Define)]
        known: dict[ConceptKey, Define] = {}
        for d in defines:
            if d.concept in known:
                first = known[d.concept].span
                raise self.error(f"concept {d.concept.text()} is defined twice (first at line "
                                 f"{first.line}); combine the bodies with OR", d.concept_span)
            known[d.concept] = d
        self.known = known

        # Where every sub-rule is defined, to explain a use that cannot see it.
        self.all_subrules: dict[str, Span] = {}
        for item in self.program.items:
            subs = [item] if isinstance(item, SubRule) else \
                list(item.subrules) if isinstance(item, Define) else []
            for s in subs:
                self.all_subrules.setdefault(s.name, s.span)

        visible: dict[str, SubRule] = {}
        resolved: dict[ConceptKey, tuple[Define, Expr]] = {}
        priorities: list[Priority] = []
        for item in self.program.items:
            if isinstance(item, SubRule):
                visible[item.name] = self.subrule(item, visible)
            elif isinstance(item, Priority):
                priorities.append(item)
            else:
                local = dict(visible)
                for s in item.subrules:
                    local[s.name] = self.subrule(s, local)
                resolved[item.concept] = (item, self.resolve(item.expr, local))

        ranks = self.priorities(priorities)
        order = self.order({k: concept_refs(e) for k, (_, e) in resolved.items()})
        rules = []
        for key in order:
            define, expr = resolved[key]
            rank = ranks.get(key)
            outranked = tuple(
                other for other, p in ranks.items()
                if other.type == key.type and other != key and rank is not None and p > rank
            )
            rules.append(Rule(
                concept=key, expr=expr, subject=define.subject,
                predicate=define.predicate or DEFAULT_PREDICATE, priority=rank,
                outranked_by=outranked, text=define_text(define),
                location=f"{self.name}:{define.span.line}", span=define.span,
            ))
        return RuleSet(tuple(rules), self.name, self.source)

    def subrule(self, sub: SubRule, visible: dict[str, SubRule]) -> SubRule:
        if sub.name in visible:
            raise self.error(f"sub-rule {sub.name} is already defined at line "
                             f"{visible[sub.name].span.line}", sub.span)
        return SubRule(sub.name, sub.description, self.resolve(sub.expr, visible), sub.span)

    def resolve(self, expr: Expr, visible: Mapping[str, SubRule]) -> Expr:
        if isinstance(expr, NameRef):
            if expr.name in visible:
                return SubRuleRef(expr.name, visible[expr.name].expr, expr.span)
            if expr.name in self.all_subrules:
                where = self.all_subrules[expr.name]
                raise self.error(
                    f"sub-rule {expr.name} is not visible here (it is defined at line "
                    f"{where.line}; a sub-rule is usable after its definition, inside its own "
                    "Define or, at top level, in every later rule)", expr.span)
            if SUBRULE_NAME.match(expr.name):
                raise self.error(
                    f"unknown sub-rule {expr.name}{did_you_mean(expr.name, visible)}; "
                    f"write `{expr.name}` in back-quotes for a property of that name", expr.span)
            return Truthy(Property(expr.name, expr.span), expr.span)
        if isinstance(expr, ConceptRef):
            if expr.concept not in self.known:
                hint = _suggest(expr.concept.id, [k.id for k in self.known])
                raise self.error(f"unknown concept {expr.concept.text()}{hint}; "
                                 "every referenced concept needs a Define", expr.span)
            return expr
        if isinstance(expr, And):
            return And(tuple(self.resolve(e, visible) for e in expr.items), expr.span)
        if isinstance(expr, Or):
            return Or(tuple(self.resolve(e, visible) for e in expr.items), expr.span)
        if isinstance(expr, Not):
            return Not(self.resolve(expr.item, visible), expr.span)
        return expr

    def priorities(self, blocks: list[Priority]) -> dict[ConceptKey, int | float]:
        ranks: dict[ConceptKey, int | float] = {}
        seen_types: dict[str, Span] = {}
        for block in blocks:
            if block.type in seen_types:
                raise self.error(f"DefinePriority({block.type}) is given twice (first at line "
                                 f"{seen_types[block.type].line})", block.span)
            seen_types[block.type] = block.span
            siblings = [k for k in self.known if k.type == block.type]
            if not siblings:
                types = sorted({k.type for k in self.known})
                raise self.error(f"DefinePriority names concept type {block.type!r}, but no rule "
                                 f"defines a concept of that type{_suggest(block.type, types)}",
                                 block.span)
            for entry in block.entries:
                key = resolve_priority_key(entry.key, siblings)
                if key is None:
                    names = [k.name for k in siblings]
                    raise self.error(
                        f"priority key {entry.key!r} names no {block.type} concept "
                        f"(known: {', '.join(repr(n) for n in names)})"
                        f"{_suggest(entry.key, names)}", entry.span)
                if isinstance(key, list):
                    raise self.error(
                        f"priority key {entry.key!r} is ambiguous: it matches "
                        f"{', '.join(repr(k.name) for k in key)}; write the full concept name",
                        entry.span)
                if key in ranks:
                    raise self.error(f"concept {key.text()} is given two priorities", entry.span)
                ranks[key] = entry.value
        return ranks

    def order(self, deps: dict[ConceptKey, list[ConceptKey]]) -> list[ConceptKey]:
        """Depth-first topological order (definition order among independent rules)."""
        state: dict[ConceptKey, int] = {}
        order: list[ConceptKey] = []
        for root in deps:
            if state.get(root):
                continue
            stack: list[tuple[ConceptKey, int]] = [(root, 0)]
            path: list[ConceptKey] = []
            while stack:
                key, i = stack.pop()
                if i == 0:
                    state[key] = 1
                    path.append(key)
                children = deps[key]
                if i < len(children):
                    stack.append((key, i + 1))
                    child = children[i]
                    if state.get(child) == 1:
                        cycle = [*path[path.index(child):], child]
                        names = " -> ".join(k.text() for k in cycle)
                        raise self.error(f"rules form a cycle: {names}",
                                         self.known[child].concept_span)
                    if not state.get(child):
                        stack.append((child, 0))
                else:
                    state[key] = 2
                    path.pop()
                    order.append(key)
        return order


def _suggest(word: str, choices: list[str]) -> str:
    """A did-you-mean that first tries a match ignoring case and spacing."""
    same = [c for c in choices if _normalise_key(c) == _normalise_key(word)]
    return f" (did you mean {same[0]!r}?)" if same else did_you_mean(word, choices)


def _normalise_key(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text).casefold()


def resolve_priority_key(key: str, siblings: list[ConceptKey]) -> ConceptKey | list[ConceptKey] | None:
    """Which sibling a DefinePriority key names.

    The key matches the concept whose name equals it ignoring case, spaces, ``_`` and ``-``
    (``'Grade 2 Hypertension'``, ``Grade2Hypertension``); failing that, the one concept whose
    name so normalised *starts* with it (``Grade2``). Several prefix matches return the list
    (ambiguous); none returns None.
    """
    norm = _normalise_key(key)
    if not norm:
        return None
    exact = [k for k in siblings if _normalise_key(k.name) == norm]
    if len(exact) == 1:
        return exact[0]
    prefix = [k for k in siblings if _normalise_key(k.name).startswith(norm)]
    if len(prefix) == 1:
        return prefix[0]
    return prefix or None


def analyse(program: Program) -> RuleSet:
    """Resolve names, check references, priorities and cycles; order rules by dependency."""
    return _Analyser(program).run()


def load_rules(source: str, source_name: str = "<rules>") -> RuleSet:
    """Parse and analyse rule text (at most ``KGDB_MAX_PROGRAM_BYTES``; concept names obey the
    text contract for keys, :mod:`kgdb.text`)."""
    most = limits().program_bytes
    if len(source) > most and len(source.encode("utf-8", "surrogatepass")) > most:
        raise DslSyntaxError(f"the rule program is longer than {most} bytes "
                             "(KGDB_MAX_PROGRAM_BYTES)", line=1, column=1, file=source_name)
    rules = analyse(parse(source, source_name))
    for rule in rules.rules:
        for key in (rule.concept, *rule.references()):
            problem = text_problem(key.id, key=True)
            if problem:
                raise rules.error(f"the concept id {key.id[:60]!r} {problem}", rule.span)
    return rules
