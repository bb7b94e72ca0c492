"""KAG's rule language: parse, check, and evaluate concept rules (reference: dsl/README.md, "Rules").

Stages, each with a typed hand-off::

    text --Lark (kgdb/dsl/rules.lark)--> tree --_ToAst--> Program (frozen dataclasses with spans)
         --analyse()--> RuleSet (names resolved, priorities attached, rules in dependency order)
         --evaluate() (pure Python, the reference) / kgdb.cypher.rules (Cypher, per dialect)

Semantics (decided here, documented in dsl/README.md):

* Three-valued (Kleene) logic. A missing property makes a comparison or a bare property
  *unknown*; ``unknown OR true`` is true, ``unknown AND false`` is false, ``NOT unknown`` is
  unknown. A concept holds only when its body is TRUE. Cypher's null logic is the same
  logic, so the compiled Cypher uses it directly.
* A reference to another concept is true when that concept's body is TRUE for the same
  instance *before* priorities are applied (its "raw" membership); it is false otherwise.
  Priorities only choose among the final conclusions of sibling concepts, after every
  dependent has been evaluated, so 160/95 concludes Grade 2 Hypertension and Hypertension.
* A bare name is a sub-rule when a sub-rule of that name is visible at that point, else a
  property; ``R<digits>`` names are reserved for sub-rules (back-quote a property so named).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from kgdb.errors import DslError, DslSemanticError, DslSyntaxError, did_you_mean
from kgdb.text import limits, text_problem

MAX_NESTING = 200
"""Deepest expression nesting accepted; deeper programs are rejected with a position."""

DEFAULT_PREDICATE = "belongTo"
"""The relationship a conclusion is written as, unless the Define names a predicate."""

_SUBRULE_NAME = re.compile(r"^R\d+$")
_PLAIN_NAME = re.compile(r"^[^\W\d]\w*$")
_KEYWORDS = {"and", "or", "not", "true", "false", "define", "definepriority"}


# ====================================================================== AST
@dataclass(frozen=True)
class Span:
    """Where a construct starts in the source (1-based line and column)."""

    line: int
    column: int


NO_SPAN = Span(0, 0)


@dataclass(frozen=True)
class ConceptKey:
    """A concept of a concept type: ``DiseaseSeverity/'Grade 2 Hypertension'``."""

    type: str
    name: str

    @property
    def id(self) -> str:
        """The concept node's ``id`` property: ``DiseaseSeverity/Grade 2 Hypertension``."""
        return f"{self.type}/{self.name}"

    def text(self) -> str:
        """The concept as it is written in a rule."""
        return f"{self.type}/{_quote_concept_name(self.name)}"


@dataclass(frozen=True)
class Property:
    name: str
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Literal:
    value: int | float | str | bool
    span: Span = field(default=NO_SPAN, compare=False)


Operand = Property | Literal


@dataclass(frozen=True)
class Compare:
    left: Operand
    op: str
    """One of ``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=`` (``==`` and ``!=`` are normalised)."""
    right: Operand
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Truthy:
    """A bare property: true when present and not ``false``, ``0`` or ``''``; unknown when missing."""

    prop: Property
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class And:
    items: tuple[Expr, ...]
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Or:
    items: tuple[Expr, ...]
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Not:
    item: Expr
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class ConceptRef:
    """True when the instance belongs to ``concept`` (its raw membership, before priorities)."""

    concept: ConceptKey
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class NameRef:
    """A bare name as parsed; :func:`analyse` turns it into a :class:`SubRuleRef` or a :class:`Truthy`."""

    name: str
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class SubRuleRef:
    """A use of a named sub-rule; ``expr`` is the sub-rule's (resolved) body."""

    name: str
    expr: Expr
    span: Span = field(default=NO_SPAN, compare=False)


Expr = Compare | Truthy | And | Or | Not | ConceptRef | NameRef | SubRuleRef


@dataclass(frozen=True)
class SubRule:
    name: str
    description: str | None
    expr: Expr
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Define:
    concept: ConceptKey
    expr: Expr
    subject: str | None = None
    predicate: str | None = None
    subrules: tuple[SubRule, ...] = ()
    span: Span = field(default=NO_SPAN, compare=False)
    concept_span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class PriorityEntry:
    key: str
    value: int | float
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Priority:
    type: str
    entries: tuple[PriorityEntry, ...]
    span: Span = field(default=NO_SPAN, compare=False)


Item = Define | Priority | SubRule


@dataclass(frozen=True)
class Program:
    """A parsed rule file, before names are resolved."""

    items: tuple[Item, ...]
    source: str = field(default="", compare=False, repr=False)
    source_name: str = field(default="<rules>", compare=False)


# ====================================================================== parsing
@functools.lru_cache(maxsize=1)
def rules_parser() -> Lark:
    """The LALR parser of kgdb/dsl/rules.lark (built once)."""
    return Lark.open_from_package("kgdb", "rules.lark", ("dsl",), parser="lalr",
                                  propagate_positions=True, maybe_placeholders=False)


def _span(meta: Any) -> Span:
    return Span(getattr(meta, "line", 0) or 0, getattr(meta, "column", 0) or 0)


def _tok_span(tok: Token) -> Span:
    return Span(tok.line or 0, tok.column or 0)


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}


def _unquote(tok: Token) -> str:
    text = str(tok)
    if tok.type == "NAME":
        return text
    body = text[1:-1]
    if tok.type == "BQ_NAME":
        return body
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def _number(tok: Token) -> int | float:
    text = str(tok)
    if len(text) > 60:
        raise DslSyntaxError(f"number {text[:20]}... is too long", line=tok.line or 0,
                             column=tok.column or 0)
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    value = float(text)
    if not math.isfinite(value):
        raise DslSyntaxError(f"number {text} is out of range", line=tok.line or 0,
                             column=tok.column or 0)
    return value


_COMPARATORS = {"==": "=", "!=": "<>"}


@v_args(meta=True)
class _ToAst(Transformer):
    """Builds the AST; the tree's shape comes from the grammar."""

    def start(self, meta: Any, items: list[Item]) -> tuple[Item, ...]:
        return tuple(items)

    def type_name(self, meta: Any, parts: list[Token]) -> Token:
        tok = parts[0]
        return Token("TYPE", ".".join(str(p) for p in parts), line=tok.line, column=tok.column)

    def concept(self, meta: Any, children: list[Token]) -> tuple[ConceptKey, Span]:
        type_tok, name_tok = children
        name = _unquote(name_tok)
        if not name.strip():
            raise DslSyntaxError("a concept name cannot be empty", line=name_tok.line or 0,
                                 column=name_tok.column or 0)
        return ConceptKey(str(type_tok), name), _tok_span(type_tok)

    def subject(self, meta: Any, children: list[Token]) -> tuple[str, str]:
        return ("subject", str(children[0]))

    def predicate(self, meta: Any, children: list[Token]) -> tuple[str, str]:
        return ("predicate", _unquote(children[0]))

    def define(self, meta: Any, children: list[Any]) -> Define:
        subject = predicate = None
        subrules: list[SubRule] = []
        concept: tuple[ConceptKey, Span] | None = None
        expr: Expr | None = None
        for child in children:
            if isinstance(child, tuple) and child and child[0] == "subject":
                subject = child[1]
            elif isinstance(child, tuple) and child and child[0] == "predicate":
                predicate = child[1]
            elif isinstance(child, tuple) and isinstance(child[0], ConceptKey):
                concept = child
            elif isinstance(child, SubRule):
                subrules.append(child)
            else:
                expr = child
        assert concept is not None and expr is not None
        return Define(concept[0], expr, subject, predicate, tuple(subrules), _span(meta), concept[1])

    def subrule(self, meta: Any, children: list[Any]) -> SubRule:
        name = children[0]
        description = _unquote(children[1]) if len(children) == 3 else None
        return SubRule(str(name), description, children[-1], _span(meta))

    def priority(self, meta: Any, children: list[Any]) -> Priority:
        return Priority(str(children[0]), tuple(children[1:]), _span(meta))

    def priority_entry(self, meta: Any, children: list[Token]) -> PriorityEntry:
        key, value = children
        return PriorityEntry(_unquote(key), _number(value), _tok_span(key))

    # ---------------------------------------------------------------- expressions
    def or_expr(self, meta: Any, items: list[Expr]) -> Or:
        return Or(tuple(items), _span(meta))

    def and_expr(self, meta: Any, items: list[Expr]) -> And:
        return And(tuple(items), _span(meta))

    def negation(self, meta: Any, items: list[Expr]) -> Not:
        return Not(items[0], _span(meta))

    def comparison(self, meta: Any, children: list[Any]) -> Compare:
        left, op, right = children
        return Compare(left, _COMPARATORS.get(op, op), right, _span(meta))

    def comp_op(self, meta: Any, children: list[Token]) -> str:
        return str(children[0])

    def concept_ref(self, meta: Any, children: list[Any]) -> ConceptRef:
        key, span = children[0]
        return ConceptRef(key, span)

    def name_ref(self, meta: Any, children: list[Token]) -> NameRef:
        return NameRef(str(children[0]), _tok_span(children[0]))

    def quoted_property(self, meta: Any, children: list[Token]) -> Truthy:
        prop = Property(_unquote(children[0]), _tok_span(children[0]))
        return Truthy(prop, prop.span)

    def property(self, meta: Any, children: list[Token]) -> Property:
        return Property(_unquote(children[0]), _tok_span(children[0]))

    def number(self, meta: Any, children: list[Token]) -> Literal:
        return Literal(_number(children[0]), _tok_span(children[0]))

    def string(self, meta: Any, children: list[Token]) -> Literal:
        return Literal(_unquote(children[0]), _tok_span(children[0]))

    def true(self, meta: Any, children: list[Token]) -> Literal:
        return Literal(True, _tok_span(children[0]))

    def false(self, meta: Any, children: list[Token]) -> Literal:
        return Literal(False, _tok_span(children[0]))


_TERMINAL_LABELS = {
    "NAME": "a name", "BQ_NAME": "a `back-quoted` name", "SQ_STRING": "a 'quoted' name",
    "DQ_STRING": 'a "string"', "SIGNED_NUMBER": "a number", "TRUE": "true", "FALSE": "false",
    "_OR": "OR", "_OR_SYM": "'||'", "_AND": "AND", "_AND_SYM": "'&&'", "_NOT": "NOT", "_NOT_SYM": "'!'",
    "DEFINE": "Define", "DEFINEPRIORITY": "DefinePriority", "$END": "end of input",
}


def _expected_labels(names: Iterable[str]) -> tuple[str, ...]:
    parser = rules_parser()
    labels = set()
    for name in names:
        if name in _TERMINAL_LABELS:
            labels.add(_TERMINAL_LABELS[name])
            continue
        try:
            pattern = parser.get_terminal(name).pattern
        except KeyError:
            labels.add(name)
            continue
        labels.add(repr(pattern.value) if pattern.type == "str" else name)
    return tuple(sorted(labels))


def source_line(source: str, line: int) -> str:
    """Line ``line`` (1-based) of ``source``, or '' outside it."""
    lines = source.splitlines()
    return lines[line - 1] if 1 <= line <= len(lines) else ""


def _syntax_error(exc: UnexpectedInput, source: str, source_name: str) -> DslSyntaxError:
    line, column = exc.line, exc.column
    if isinstance(exc, UnexpectedEOF) or line is None or line < 1:
        lines = source.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
    expected: tuple[str, ...] = ()
    if isinstance(exc, UnexpectedToken):
        expected = _expected_labels(exc.accepts or exc.expected)
        found = "end of input" if exc.token.type == "$END" else repr(str(exc.token))
        message = f"unexpected {found}"
    elif isinstance(exc, UnexpectedCharacters):
        expected = _expected_labels(exc.allowed or ())
        pos = exc.pos_in_stream if exc.pos_in_stream is not None else -1
        message = f"unexpected character {source[pos]!r}" if 0 <= pos < len(source) \
            else "unexpected character"
    else:
        expected = _expected_labels(getattr(exc, "expected", ()) or ())
        message = "unexpected end of input"
    if expected:
        message += f"; expected {', '.join(expected)}"
    return DslSyntaxError(message, line=line, column=column, source_line=source_line(source, line),
                          expected=expected, file=source_name)


def _check_depth(tree: Tree, source: str, source_name: str) -> None:
    """Reject programs nested deeper than MAX_NESTING before anything recurses over them."""
    stack: list[tuple[Any, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            line, column = getattr(node.meta, "line", 1), getattr(node.meta, "column", 1)
            raise DslSyntaxError(f"expression nested more than {MAX_NESTING} levels deep",
                                 line=line, column=column, source_line=source_line(source, line),
                                 file=source_name)
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))


def parse(source: str, source_name: str = "<rules>") -> Program:
    """Parse rule text into a :class:`Program`; bad text raises :class:`DslSyntaxError`."""
    try:
        tree = rules_parser().parse(source)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, source, source_name) from None
    _check_depth(tree, source, source_name)
    try:
        items = _ToAst().transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, DslSyntaxError):
            err = exc.orig_exc
            raise DslSyntaxError(err.reason, line=err.line, column=err.column,
                                 source_line=source_line(source, err.line),
                                 file=source_name) from None
        raise
    return Program(items, source, source_name)


# ====================================================================== analysis
@dataclass(frozen=True)
class Rule:
    """One checked Define: what it concludes, its resolved body, and its priority standing."""

    concept: ConceptKey
    expr: Expr
    """The body with names resolved (sub-rules as :class:`SubRuleRef`, properties as :class:`Truthy`)."""
    subject: str | None
    predicate: str
    priority: int | float | None
    outranked_by: tuple[ConceptKey, ...]
    """Siblings (same concept type) with a higher priority: when one of them holds, this does not."""
    text: str
    """The Define in canonical form; stored on conclusions as ``rule``."""
    location: str
    """``FILE:LINE`` of the Define."""
    span: Span = field(default=NO_SPAN, compare=False)

    def references(self) -> tuple[ConceptKey, ...]:
        return tuple(dict.fromkeys(concept_refs(self.expr)))


@dataclass(frozen=True)
class RuleSet:
    """Checked rules in dependency order (a rule comes after every concept it references)."""

    rules: tuple[Rule, ...]
    source_name: str = "<rules>"
    source: str = field(default="", compare=False, repr=False)

    def error(self, message: str, span: Span) -> DslSemanticError:
        """A semantic error at ``span`` of this rule set's source."""
        return DslSemanticError(message, line=span.line, column=span.column,
                                source_line=source_line(self.source, span.line), file=self.source_name)

    def rule(self, concept: ConceptKey) -> Rule:
        return self._by_concept[concept]

    @functools.cached_property
    def _by_concept(self) -> dict[ConceptKey, Rule]:
        # One look-up per rule while compiling: a scan here made compiling quadratic.
        found: dict[ConceptKey, Rule] = {}
        for rule in self.rules:
            found.setdefault(rule.concept, rule)
        return found

    @property
    def concept_ids(self) -> list[str]:
        return [r.concept.id for r in self.rules]


def concept_refs(expr: Expr) -> list[ConceptKey]:
    """Every concept ``expr`` references (through sub-rules too), in order of appearance."""
    found: list[ConceptKey] = []
    stack: list[Expr] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ConceptRef):
            found.append(node.concept)
        elif isinstance(node, (And, Or)):
            stack.extend(reversed(node.items))
        elif isinstance(node, Not):
            stack.append(node.item)
        elif isinstance(node, SubRuleRef):
            stack.append(node.expr)
    return found


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
            if _SUBRULE_NAME.match(expr.name):
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


# ====================================================================== canonical text
def _quote_concept_name(name: str) -> str:
    if "'" not in name and "\\" not in name and "\n" not in name:
        return f"'{name}'"
    if "`" not in name and "\n" not in name:
        return f"`{name}`"
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _property_text(name: str) -> str:
    if _PLAIN_NAME.match(name) and name.casefold() not in _KEYWORDS:
        return name
    return f"`{name}`"


def _literal_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"
    return repr(value)


def _operand_text(op: Operand) -> str:
    return _property_text(op.name) if isinstance(op, Property) else _literal_text(op.value)


def expr_text(expr: Expr) -> str:
    """``expr`` in canonical rule syntax (parses back to the same expression)."""
    if isinstance(expr, Compare):
        return f"{_operand_text(expr.left)} {expr.op} {_operand_text(expr.right)}"
    if isinstance(expr, Truthy):
        return _property_text(expr.prop.name) if not _SUBRULE_NAME.match(expr.prop.name) \
            else f"`{expr.prop.name}`"
    if isinstance(expr, ConceptRef):
        return expr.concept.text()
    if isinstance(expr, (NameRef, SubRuleRef)):
        return expr.name
    if isinstance(expr, Not):
        inner = expr_text(expr.item)
        return f"NOT ({inner})" if isinstance(expr.item, (And, Or)) else f"NOT {inner}"
    if isinstance(expr, And):
        return " AND ".join(f"({expr_text(e)})" if isinstance(e, Or) else expr_text(e)
                            for e in expr.items)
    return " OR ".join(expr_text(e) for e in expr.items)


def define_text(define: Define) -> str:
    """The Define in canonical one-line form."""
    head = define.concept.text()
    if define.subject:
        head = f"{define.subject})-[{define.predicate or DEFAULT_PREDICATE}]->({head}"
    subs = "".join(_subrule_text(s) + " " for s in define.subrules)
    return f"Define ({head}) {{ {subs}{expr_text(define.expr)} }}"


def _subrule_text(sub: SubRule) -> str:
    desc = ""
    if sub.description is not None:
        escaped = sub.description.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        desc = f'("{escaped}")'
    return f"{sub.name}{desc}: {expr_text(sub.expr)}"


# ====================================================================== evaluation (reference)
Truth = bool | None
"""Three-valued truth: True, False, or None (unknown)."""

_FALSY = (False, 0, 0.0, "")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def compare_values(left: Any, op: str, right: Any) -> Truth:
    """Cypher's comparison on scalars: null is unknown; equality across types is false;
    ordering is defined between two numbers, two strings or two booleans, unknown otherwise."""
    if left is None or right is None:
        return None
    same_kind = (_is_number(left) and _is_number(right)) or \
        (type(left) is type(right) and isinstance(left, (str, bool)))
    if op in ("=", "<>"):
        equal = same_kind and left == right
        return equal if op == "=" else not equal
    if not same_kind:
        return None
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


def truthy(value: Any) -> Truth:
    """A bare property: unknown when missing, false for false/0/''/0.0, true otherwise."""
    if value is None:
        return None
    return not any(value == f and (type(value) is bool) == (type(f) is bool) for f in _FALSY)


def _and(values: Iterable[Truth]) -> Truth:
    result: Truth = True
    for v in values:
        if v is False:
            return False
        if v is None:
            result = None
    return result


def _or(values: Iterable[Truth]) -> Truth:
    result: Truth = False
    for v in values:
        if v is True:
            return True
        if v is None:
            result = None
    return result


def evaluate_expr(expr: Expr, facts: Mapping[str, Any],
                  membership: Callable[[ConceptKey], Truth]) -> Truth:
    """Evaluate a resolved body on ``facts`` in three-valued logic."""
    if isinstance(expr, Compare):
        left = facts.get(expr.left.name) if isinstance(expr.left, Property) else expr.left.value
        right = facts.get(expr.right.name) if isinstance(expr.right, Property) else expr.right.value
        return compare_values(left, expr.op, right)
    if isinstance(expr, Truthy):
        return truthy(facts.get(expr.prop.name))
    if isinstance(expr, ConceptRef):
        return membership(expr.concept)
    if isinstance(expr, SubRuleRef):
        return evaluate_expr(expr.expr, facts, membership)
    if isinstance(expr, Not):
        v = evaluate_expr(expr.item, facts, membership)
        return None if v is None else not v
    if isinstance(expr, And):
        return _and(evaluate_expr(e, facts, membership) for e in expr.items)
    if isinstance(expr, Or):
        return _or(evaluate_expr(e, facts, membership) for e in expr.items)
    raise DslError(f"unresolved name {getattr(expr, 'name', expr)!r}; call analyse() first")


@dataclass(frozen=True)
class Conclusion:
    """``(instance)-[predicate]->(concept)`` with the rule that concluded it."""

    concept: ConceptKey
    predicate: str
    rule: Rule


def raw_memberships(rules: RuleSet, facts: Mapping[str, Any]) -> dict[ConceptKey, Truth]:
    """Every concept's body value on ``facts`` (before priorities), in dependency order."""
    raw: dict[ConceptKey, Truth] = {}
    for rule in rules.rules:
        # A referenced concept is true only when its body is TRUE (unknown counts as not).
        raw[rule.concept] = evaluate_expr(rule.expr, facts, lambda k: raw[k] is True)
    return raw


def evaluate(rules: RuleSet, facts: Mapping[str, Any]) -> list[Conclusion]:
    """The pure-Python reference evaluator: conclusions for one instance's ``facts``."""
    check_facts(facts)
    raw = raw_memberships(rules, facts)
    return [
        Conclusion(rule.concept, rule.predicate, rule)
        for rule in rules.rules
        if raw[rule.concept] is True and not any(raw[k] is True for k in rule.outranked_by)
    ]


def check_facts(facts: Any) -> None:
    """Facts are a JSON object of scalar values (numbers, strings, booleans, null)."""
    if not isinstance(facts, Mapping):
        raise DslError(f"facts must be a JSON object of property values, not {type(facts).__name__}")
    for key, value in facts.items():
        if not isinstance(key, str) or not key or "`" in key:
            raise DslError(f"facts: invalid property name {key!r}")
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise DslError(f"facts: {key!r} is a {type(value).__name__}; values must be numbers, "
                           "strings, booleans or null")
        if isinstance(value, float) and not math.isfinite(value):
            raise DslError(f"facts: {key!r} is not a finite number")
