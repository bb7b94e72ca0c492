"""Logical-form text to calls: the grammar (``logical_form.lark``), text normalisation,
the plan-level parse that finds calls and the boundaries of their arguments, and syntax
errors with positions. :mod:`kgdb.dsl.logical_form` turns the calls into a checked plan."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from kgdb.dsl.lf_ast import (
    Source,
    Span,
)
from kgdb.errors import DslSyntaxError

# ---------------------------------------------------------------------------------- grammar

_FULL_WIDTH = str.maketrans({"：": ":", "（": "(", "）": ")", "，": ",", "【": "[", "】": "]",
                             "；": ";", "＝": "=", "＞": ">", "＜": "<", "｜": "|",
                             "“": '"', "”": '"', "　": " "})
"""Full-width punctuation models emit (Chinese-language planners); one character each way."""

_MAX_SOURCE = 200_000


@functools.lru_cache(maxsize=1)
def grammar(strict: bool = False) -> Lark:
    """The logical-form parser (LALR, positions kept, four start rules)."""
    return Lark.open_from_package("kgdb", "logical_form.lark", ("dsl",), parser="lalr",
                                  propagate_positions=True, strict=strict,
                                  start=["plan", "node", "predicate", "math"])


def normalise(text: str) -> str:
    """Map full-width punctuation to ASCII and line breaks inside brackets to spaces.

    Every character maps to exactly one character, so offsets (and thus line and column
    computed from the original text) stay valid.
    """
    text = text.translate(_FULL_WIDTH)
    out = []
    depth = 0
    in_bq = False
    for ch in text:
        if ch == "`":
            in_bq = not in_bq
        elif ch == "\n":
            in_bq = False
            if depth > 0:
                out.append(" ")
                continue
        elif not in_bq:
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth = max(depth - 1, 0)
        out.append(ch)
    return "".join(out)


# ---------------------------------------------------------------------------------- calls

@dataclass(frozen=True)
class RawArg:
    """An argument as written: ``key``/``op`` for ``key=value`` and ``o.year>2000``."""

    key: str | None
    op: str | None
    text: str
    span: Span
    key_span: Span | None


@dataclass(frozen=True)
class RawCall:
    function: str
    args: tuple[RawArg, ...]
    result: str | None
    assign: str | None
    question: str | None
    span: Span


def parse_calls(text: str, file: str = "<input>") -> tuple[Source, list[RawCall]]:
    """Parse a program into calls with raw arguments (syntax only)."""
    if not isinstance(text, str):
        raise DslSyntaxError("a logical form must be text", line=1, column=1, file=file)
    source = Source(text, file)
    if len(text) > _MAX_SOURCE:
        raise source.syntax_error(f"the program is longer than {_MAX_SOURCE} characters", 0)
    normal = normalise(text)
    tree = parse_fragment(source, normal, "plan", 0)
    calls: list[RawCall] = []
    question: str | None = None
    for item in tree.children:
        if isinstance(item, Tree) and item.data == "step":
            tok = item.children[0]
            question = str(tok).split(":", 1)[1].strip() or None
        elif isinstance(item, Tree) and item.data == "statement":
            calls.append(_raw_call(source, normal, item, question))
            question = None
    return source, calls


def parse_fragment(source: Source, normal: str, start: str, base: int) -> Tree:
    """Parse ``normal`` (a slice beginning at offset ``base`` of the source) from ``start``."""
    try:
        return grammar().parse(normal, start=start)
    except UnexpectedInput as exc:
        raise _syntax_error(source, normal, exc, start, base) from exc
    except RecursionError:
        # from None: the cause is a recursion a thousand frames deep that says no
        # more than the message
        raise source.syntax_error("the program nests too deeply", base) from None


_TERMINAL_NAMES = {
    "NAME": "a name", "ATOM": "a value", "BQ": "a `back-quoted` name", "STRING": "a string",
    "NUMBER": "a number", "NAME_TEXT": "a name", "LPAR": "'('", "RPAR": "')'",
    "LSQB": "'['", "RSQB": "']'", "LBRACE": "'{'", "RBRACE": "'}'", "COMMA": "','",
    "EQ": "'='", "CMP": "a comparison", "COLON": "':'", "_NL": "a new line",
    "STEP_TEXT": "'StepN: ...'", "_ACTION_HEAD": "'ActionN:'", "$END": "the end",
    "_ARROW": "'->'", "VBAR": "'|'", "PLUS": "'+'", "MINUS": "'-'", "STAR": "'*'",
    "SLASH": "'/'", "CIRCUMFLEX": "'^'", "_BULLET": "a list bullet",
}

_WHAT = {"plan": "", "node": " in a node (alias[:Type][name])",
         "predicate": " in a predicate (alias[:relation])", "math": " in a Math expression"}


def _syntax_error(source: Source, normal: str, exc: UnexpectedInput, start: str,
                  base: int) -> DslSyntaxError:
    pos = getattr(exc, "pos_in_stream", None)
    if isinstance(exc, UnexpectedToken):
        token_pos = exc.token.start_pos
        at_end = exc.token.type == "$END" or token_pos is None
        pos = len(normal.rstrip()) if at_end or token_pos is None else int(token_pos)
        found = "the end" if at_end else repr(str(exc.token))
        expected = tuple(exc.expected)
    elif isinstance(exc, UnexpectedCharacters):
        char_pos = int(exc.pos_in_stream or 0)
        pos = char_pos
        found = repr(normal[char_pos]) if char_pos < len(normal) else "the end"
        expected = tuple(exc.allowed or ())
    elif isinstance(exc, UnexpectedEOF):
        pos = len(normal.rstrip())
        found = "the end"
        expected = tuple(exc.expected)
    else:  # pragma: no cover - lark has no other UnexpectedInput subclasses
        found, expected = "input", ()
    pos = int(pos or 0)
    labels = sorted({_TERMINAL_NAMES.get(e, repr(e) if not e.isupper() else e.lower())
                     for e in expected if not e.startswith("__")})
    hint = f"; expected {', '.join(labels[:6])}" if labels else ""
    message = f"unexpected {found}{_WHAT.get(start, '')}{hint}"
    return source.syntax_error(message, base + pos, tuple(expected))


def _raw_call(source: Source, normal: str, stmt: Tree, question: str | None) -> RawCall:
    assign = result = None
    call: Tree | None = None
    for child in stmt.children:
        if isinstance(child, Tree) and child.data == "assign":
            assign = str(child.children[0])
        elif isinstance(child, Tree) and child.data == "result":
            result = alias_text(child.children[0])
        elif isinstance(child, Tree) and child.data == "call":
            call = child
    assert call is not None
    name_tok = call.children[0]
    assert isinstance(name_tok, Token)
    args: list[RawArg] = []
    for args_tree in call.children[1:]:
        if not isinstance(args_tree, Tree):
            continue
        for arg in args_tree.children:
            if isinstance(arg, Tree) and arg.data == "arg":
                args.append(_raw_arg(source, normal, arg))
    span = source.span(int(name_tok.start_pos or 0), int(stmt.meta.end_pos))
    return RawCall(str(name_tok), tuple(args), result, assign, question, span)


def alias_text(tok: Any) -> str:
    text = str(tok)
    return text[1:-1].strip() if text.startswith("`") else text


def _raw_arg(source: Source, normal: str, arg: Tree) -> RawArg:
    raws = [c for c in arg.children if isinstance(c, Tree) and c.data == "raw"]
    ops = [c for c in arg.children if isinstance(c, Token)]
    if len(raws) == 2:
        key_tree, value_tree = raws
        key_text = normal[key_tree.meta.start_pos:key_tree.meta.end_pos].strip()
        key_span = source.span(key_tree.meta.start_pos, key_tree.meta.end_pos)
        op = str(ops[0]) if ops else "="
    else:
        value_tree = raws[0]
        key_text, key_span, op = None, None, None
    start, end = value_tree.meta.start_pos, value_tree.meta.end_pos
    return RawArg(key_text, op, normal[start:end].strip(), source.span(start, end), key_span)
