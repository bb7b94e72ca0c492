"""Rule text to :class:`~kgdb.dsl.rules_ast.Program`: the LALR parser of kgdb/dsl/rules.lark,
a Transformer that only builds the AST, and syntax errors with positions."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from kgdb.dsl.numbers import NumberError, parse_number
from kgdb.dsl.rules_ast import (
    And,
    Compare,
    ConceptKey,
    ConceptRef,
    Define,
    Expr,
    Item,
    Literal,
    NameRef,
    Not,
    Or,
    Priority,
    PriorityEntry,
    Program,
    Property,
    Span,
    SubRule,
    Truthy,
    source_line,
)
from kgdb.errors import DslSyntaxError

MAX_NESTING = 200
"""Deepest expression nesting accepted; deeper programs are rejected with a position."""


@functools.lru_cache(maxsize=1)
def rules_parser() -> Lark:
    """The LALR parser of kgdb/dsl/rules.lark (built once)."""
    return Lark.open_from_package("kgdb", "rules.lark", ("dsl",), parser="lalr",
                                  propagate_positions=True, maybe_placeholders=False)


def _span(meta: Any) -> Span:
    return Span(getattr(meta, "line", 0) or 0, getattr(meta, "column", 0) or 0,
                getattr(meta, "start_pos", 0) or 0, getattr(meta, "end_pos", 0) or 0)


def _tok_span(tok: Token) -> Span:
    return Span(tok.line or 0, tok.column or 0, tok.start_pos or 0, tok.end_pos or 0)


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
    try:
        return parse_number(text)
    except NumberError as exc:
        raise DslSyntaxError(f"number {text} is out of range", line=tok.line or 0,
                             column=tok.column or 0) from exc


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
        raise _syntax_error(exc, source, source_name) from exc
    _check_depth(tree, source, source_name)
    try:
        items = _ToAst().transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, DslSyntaxError):
            err = exc.orig_exc
            raise DslSyntaxError(err.reason, line=err.line, column=err.column,
                                 source_line=source_line(source, err.line),
                                 file=source_name) from exc
        raise
    return Program(items, source, source_name)
