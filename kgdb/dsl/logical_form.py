"""Logical forms (KAG): text -> parse tree -> frozen AST with positions -> checked plan.

Modules: :mod:`kgdb.dsl.lf_parser` (grammar, calls, syntax errors), :mod:`kgdb.dsl.lf_ast`
(the AST) and this one (argument values, checks, the plan).

The grammar is ``logical_form.lark``. The plan level finds calls and the boundaries of their
arguments; each argument value is then parsed with the start rule its role calls for
(``node`` for s=/o=, ``predicate`` for p=, ``math`` for Math). A separate pass
(:func:`check_plan`) resolves aliases and raises :class:`~kgdb.errors.DslSemanticError` with
the position of the offending text. Only kgdb's :class:`~kgdb.errors.DslError` leaves this
module for bad input.
"""

from __future__ import annotations

import re
from typing import Any

from lark import Token, Tree

from kgdb.dsl.lf_ast import (
    MATH_FUNCTIONS,
    BinOp,
    Card,
    CompareStep,
    ConstraintSpec,
    CountStep,
    DeduceStep,
    FilterStep,
    Func,
    Literal,
    MathExpr,
    MathStep,
    Neg,
    NodeSpec,
    Num,
    Operand,
    OutputStep,
    Plan,
    PredSpec,
    Ref,
    RetrievalStep,
    SortStep,
    Source,
    Span,
    Step,
    SumOf,
    SumStep,
    Var,
)
from kgdb.dsl.lf_parser import (
    RawArg,
    RawCall,
    alias_text,
    normalise,
    parse_calls,
    parse_fragment,
)
from kgdb.dsl.numbers import NumberError, parse_number
from kgdb.errors import DslSemanticError, did_you_mean
from kgdb.text import text_problem

# ---------------------------------------------------------------------------------- arguments
_MAX_DEPTH = 64

FUNCTIONS: dict[str, str] = {
    "retrieval": "retrieval", "get_spo": "retrieval", "retriever": "retrieval",
    "retrieve": "retrieval", "search": "retrieval",
    "sort": "sort", "count": "count", "sum": "sum", "compare": "compare",
    "filter": "filter", "verify": "verify", "math": "math", "deduce": "deduce",
    "output": "output", "get": "output",
}
"""Accepted function names (case-insensitive) and the canonical function each is."""

_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "retrieval": ("s", "p", "o"),
    "sort": ("set", "orderby", "direction", "limit"),
    "count": ("set",),
    "sum": ("set",),
    "compare": ("set", "op"),
    "filter": ("left_expr", "right_expr", "op"),
    "verify": ("left_expr", "right_expr", "op"),
    "math": ("expr", "content", "target"),
    "deduce": ("left", "right", "op", "content", "target"),
    "output": (),
}
_ARG_SYNONYMS = {"left": "left_expr", "right": "right_expr", "order_by": "orderby",
                 "sort_by": "orderby", "key": "orderby", "top": "limit", "k": "limit",
                 "sets": "set", "a": "set", "expression": "expr"}

_DEDUCE_OPS = ("entailment", "greater", "less", "equal", "judgement", "extract", "choice",
               "multichoice")
_FILTER_OPS = {"equal": "=", "eq": "=", "=": "=", "==": "=", "lt": "<", "<": "<",
               "gt": ">", ">": ">", "le": "<=", "<=": "<=", "ge": ">=", ">=": ">=",
               "ne": "<>", "!=": "<>", "<>": "<>", "not_equal": "<>", "in": "in",
               "contains": "contains"}


# ---------------------------------------------------------------------------------- values

_ALIAS_RE = re.compile(r"^[^\W\d]\w*$")
_CONSTRAINT_KEY = re.compile(r"^(?P<target>[^\W\d]\w*)\.(?P<prop>[^\W\d]\w*)$")


def _number(text: str) -> float | int | None:
    try:
        return parse_number(text)
    except NumberError:
        return None


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "`\"'":
        return text[1:-1].strip()
    return text


def _literal_value(text: str) -> float | int | str:
    number = _number(text.strip())
    return number if number is not None else _unquote(text)


class _Builder:
    """Turns raw calls into typed steps; raises semantic errors with positions."""

    def __init__(self, source: Source, normal: str) -> None:
        self.source = source
        self.normal = normal
        self.bound: dict[str, str] = {}
        """alias -> kind: node, predicate, value."""
        self.pred_counter = 0

    def error(self, message: str, span: Span | None) -> DslSemanticError:
        return self.source.semantic_error(message, span)

    # -- values ------------------------------------------------------------------------
    def sub_parse(self, arg: RawArg, start: str) -> Tree:
        offset = arg.span.start
        # skip the leading whitespace the raw slice may carry
        text = self.normal[offset:arg.span.end]
        lead = len(text) - len(text.lstrip())
        return parse_fragment(self.source, text.strip(), start, offset + lead)

    def span_of(self, arg: RawArg, meta_start: int | None, meta_end: int | None) -> Span:
        text = self.normal[arg.span.start:arg.span.end]
        lead = len(text) - len(text.lstrip())
        base = arg.span.start + lead
        return self.source.span(base + (meta_start or 0), base + (meta_end or 0))

    def node(self, arg: RawArg) -> NodeSpec:
        tree = self.sub_parse(arg, "node")
        alias_tok = tree.children[0]
        alias = alias_text(alias_tok)
        types: tuple[str, ...] = ()
        name: str | None = None
        for child in tree.children[1:]:
            if isinstance(child, Tree) and child.data == "types":
                types = tuple(_words(t) for t in child.children if isinstance(t, Tree))
            elif isinstance(child, Tree) and child.data == "node_name":
                name = _unquote(str(child.children[0]))
                if not name.strip():
                    # An empty name would match every node; say so instead of guessing.
                    raise self.error("a node name cannot be empty (leave out the brackets to "
                                     "match any node)", arg.span)
                problem = text_problem(name, key=True)
                if problem:
                    raise self.error(f"the node name {problem}", arg.span)
        if not alias:
            raise self.error("a node needs an alias (e.g. s1)", arg.span)
        return NodeSpec(alias, tuple(t for t in types if t), name, arg.span)

    def predicate(self, arg: RawArg) -> PredSpec:
        tree = self.sub_parse(arg, "predicate")
        alias = alias_text(tree.children[0])
        relations: tuple[str, ...] = ()
        for child in tree.children[1:]:
            if isinstance(child, Tree) and child.data == "relations":
                relations = tuple(_words(r) for r in child.children if isinstance(r, Tree))
        relations = tuple(r for r in relations if r)
        if not relations and self.bound.get(alias) != "predicate" \
                and not re.match(r"^p\d*$", alias):
            # `p=directed_by`: a relation written without an alias
            self.pred_counter += 1
            return PredSpec(f"_p{self.pred_counter}", (alias,), arg.span)
        return PredSpec(alias, relations, arg.span)

    def ref(self, text: str, span: Span, *, what: str) -> Ref:
        text = _unquote(text)
        alias, _, prop = text.partition(".")
        if not _ALIAS_RE.match(alias) or (prop and not _ALIAS_RE.match(prop)):
            raise self.error(f"{what} must be an alias bound by an earlier step, "
                             f"not {text!r}", span)
        if alias not in self.bound:
            hint = did_you_mean(alias, self.bound)
            raise self.error(f"alias {alias!r} is used before it is bound{hint}", span)
        return Ref(alias, prop or None, span)

    def operand(self, text: str, span: Span) -> Operand:
        """An alias if one is bound under that name, otherwise a constant."""
        unq = _unquote(text)
        alias, _, prop = unq.partition(".")
        if alias in self.bound and (not prop or _ALIAS_RE.match(prop)):
            return Ref(alias, prop or None, span)
        return Literal(_literal_value(text), span)

    def items(self, arg: RawArg) -> list[tuple[str, Span]]:
        """The elements of ``[a, b]`` (or a single value), with their spans."""
        text = self.normal[arg.span.start:arg.span.end]
        stripped = text.strip()
        lead = len(text) - len(text.lstrip())
        base = arg.span.start + lead
        if not (stripped.startswith("[") and stripped.endswith("]")):
            return [(arg.text, arg.span)]
        out: list[tuple[str, Span]] = []
        inner_start = base + 1
        depth = 0
        in_bq = False
        piece_start = inner_start
        for i in range(inner_start, base + len(stripped) - 1):
            ch = self.normal[i]
            if ch == "`":
                in_bq = not in_bq
            elif not in_bq and ch in "([{":
                depth += 1
            elif not in_bq and ch in ")]}":
                depth -= 1
            elif not in_bq and ch == "," and depth == 0:
                out.append(self._piece(piece_start, i))
                piece_start = i + 1
        out.append(self._piece(piece_start, base + len(stripped) - 1))
        return [(t, s) for t, s in out if t]

    def _piece(self, start: int, end: int) -> tuple[str, Span]:
        raw = self.normal[start:end]
        lead = len(raw) - len(raw.lstrip())
        return raw.strip(), self.source.span(start + lead, start + lead + len(raw.strip()))

    def math(self, arg: RawArg) -> MathExpr:
        tree = self.sub_parse(arg, "math")
        return self._math_node(tree.children[0], arg)

    def _math_node(self, node: Any, arg: RawArg, depth: int = 0) -> MathExpr:
        if depth > _MAX_DEPTH:
            raise self.error("the Math expression nests too deeply", arg.span)
        if isinstance(node, Token):
            return Var(alias_text(node))
        kind = node.data
        kids = [c for c in node.children if not (isinstance(c, Token) and c.type in (
            "PLUS", "MINUS", "STAR", "SLASH"))]
        sub = [self._math_node(c, arg, depth + 1) if isinstance(c, Tree) else c for c in kids]
        span = self.span_of(arg, getattr(node.meta, "start_pos", 0),
                            getattr(node.meta, "end_pos", 0))
        if kind == "number":
            return Num(float(str(node.children[0])))
        if kind == "var":
            alias = alias_text(node.children[0])
            if alias not in self.bound:
                raise self.error(f"alias {alias!r} is used before it is bound"
                                 f"{did_you_mean(alias, self.bound)}", span)
            return Var(alias, span)
        if kind in ("add", "sub", "mul", "div", "pow"):
            exprs = [s for s in sub if not isinstance(s, Token)]
            op = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "^"}[kind]
            return BinOp(op, exprs[0], exprs[1])
        if kind == "neg":
            return Neg(sub[-1])
        if kind == "card":
            return Card(sub[-1])
        if kind == "sum_of":
            return SumOf(sub[-1])
        if kind == "func":
            name_tok = node.children[0]
            name = str(name_tok).lower()
            if name not in MATH_FUNCTIONS:
                raise self.error(f"unknown Math function {str(name_tok)!r}"
                                 f"{did_you_mean(name, MATH_FUNCTIONS)}", span)
            return Func(name, tuple(s for s in sub[1:] if not isinstance(s, Token)), span)
        if kind == "sum_":  # a parenthesised single product collapsed by ?rules
            return sub[0]
        raise self.error(f"unsupported Math construct {kind!r}", span)  # pragma: no cover

    # -- steps -------------------------------------------------------------------------
    def step(self, call: RawCall) -> Step:
        written = call.function
        function = FUNCTIONS.get(written.lower())
        if function is None:
            raise self.error(f"unknown function {written!r}"
                             f"{did_you_mean(written, FUNCTION_NAMES)}",
                             call.span)
        named: dict[str, RawArg] = {}
        positional: list[RawArg] = []
        constraints: list[RawArg] = []
        for arg in call.args:
            if arg.key is None:
                positional.append(arg)
                continue
            key = arg.key.strip("`").lower()
            if function == "retrieval" and _CONSTRAINT_KEY.match(arg.key.strip("`")):
                constraints.append(arg)
                continue
            if arg.op != "=" and arg.op != "==":
                raise self.error(f"argument {arg.key!r} takes '=' , not {arg.op!r}",
                                 arg.key_span)
            key = _ARG_SYNONYMS.get(key, key)
            if function == "deduce" and key in ("left_expr", "right_expr"):
                key = key.removesuffix("_expr")
            allowed = _ARGUMENTS[function]
            if function != "output" and key not in allowed:
                raise self.error(f"unknown argument {arg.key!r} for {written}"
                                 f"{did_you_mean(key, allowed)}; it takes "
                                 f"{', '.join(allowed)}", arg.key_span)
            if key in named:
                raise self.error(f"argument {key!r} is given twice", arg.key_span)
            named[key] = arg
        result = call.result or call.assign
        base = {"function": written, "result": result, "question": call.question,
                "span": call.span}
        builder = getattr(self, f"_{function}")
        step: Step = builder(call, named, positional, constraints, base)
        if result:
            self.bound[result] = "value"
        return step

    def _need(self, call: RawCall, named: dict[str, RawArg], positional: list[RawArg],
              key: str) -> RawArg:
        if key in named:
            return named[key]
        if positional:
            return positional.pop(0)
        raise self.error(f"{call.function} needs the argument {key!r}", call.span)

    def _retrieval(self, call: RawCall, named: dict[str, RawArg], positional: list[RawArg],
                   constraints: list[RawArg], base: dict[str, Any]) -> RetrievalStep:
        s = self.node(self._need(call, named, positional, "s"))
        p = self.predicate(self._need(call, named, positional, "p"))
        o = self.node(self._need(call, named, positional, "o"))
        if positional:
            raise self.error(f"{call.function} takes s=, p=, o= and constraints such as "
                             "o.year>2000; this argument is extra", positional[0].span)
        if s.alias == o.alias:
            raise self.error(f"s and o are the same alias {s.alias!r}", o.span)
        for spec, kind in ((s, "node"), (o, "node"), (p, "predicate")):
            previous = self.bound.get(spec.alias)
            if previous is not None and previous != kind:
                raise self.error(f"alias {spec.alias!r} is a {previous}, not a {kind}",
                                 spec.span)
        cons: list[ConstraintSpec] = []
        for arg in constraints:
            m = _CONSTRAINT_KEY.match((arg.key or "").strip("`"))
            assert m is not None
            target = m.group("target")
            aliases = {"s": s.alias, "p": p.alias, "o": o.alias}
            if target not in aliases and target not in (s.alias, p.alias, o.alias):
                raise self.error(f"constraint on {target!r}: use s., p., o. or one of this "
                                 f"step's aliases ({s.alias}, {p.alias}, {o.alias})",
                                 arg.key_span)
            cons.append(ConstraintSpec(aliases.get(target, target), m.group("prop"),
                                       "<>" if arg.op == "!=" else ("=" if arg.op == "==" else
                                                                     str(arg.op)),
                                       _literal_value(arg.text), arg.span))
        for spec, kind in ((s, "node"), (o, "node"), (p, "predicate")):
            self.bound[spec.alias] = kind
        return RetrievalStep(**base, s=s, p=p, o=o, constraints=tuple(cons))

    def _sort(self, call: RawCall, named: dict[str, RawArg], positional: list[RawArg],
              constraints: list[RawArg], base: dict[str, Any]) -> SortStep:
        set_arg = self._need(call, named, positional, "set")
        target = self.ref(set_arg.text, set_arg.span, what="Sort's set")
        orderby = None
        if "orderby" in named:
            orderby = self.ref(named["orderby"].text, named["orderby"].span,
                               what="Sort's orderby")
        direction = "max"
        if "direction" in named:
            direction = _unquote(named["direction"].text).lower()
            direction = {"desc": "max", "descending": "max", "asc": "min",
                         "ascending": "min"}.get(direction, direction)
            if direction not in ("min", "max"):
                raise self.error(f"direction must be min or max, not {direction!r}",
                                 named["direction"].span)
        limit = None
        if "limit" in named:
            value = _number(_unquote(named["limit"].text))
            if not isinstance(value, int) or value < 0:
                raise self.error("limit must be a whole number >= 0", named["limit"].span)
            limit = value
        if positional:
            raise self.error("Sort takes set=, orderby=, direction=, limit=",
                             positional[0].span)
        return SortStep(**base, set=target, orderby=orderby, direction=direction, limit=limit)

    def _count(self, call: RawCall, named: dict[str, RawArg], positional: list[RawArg],
               constraints: list[RawArg], base: dict[str, Any]) -> CountStep:
        arg = self._need(call, named, positional, "set")
        return CountStep(**base, set=self.ref(arg.text, arg.span, what="Count's argument"))

    def _sum(self, call: RawCall, named: dict[str, RawArg], positional: list[RawArg],
             constraints: list[RawArg], base: dict[str, Any]) -> SumStep:
        arg = self._need(call, named, positional, "set")
        return SumStep(**base, set=self.ref(arg.text, arg.span, what="Sum's argument"))

    def _compare(self, call: RawCall, named: dict[str, RawArg], positional: list[RawArg],
                 constraints: list[RawArg], base: dict[str, Any]) -> CompareStep:
        arg = self._need(call, named, positional, "set")
        refs = tuple(self.ref(t, s, what="Compare's set") for t, s in self.items(arg))
        op = _unquote(named["op"].text).lower() if "op" in named else "max"
        if op not in ("min", "max"):
            raise self.error(f"Compare's op must be min or max, not {op!r}",
                             named["op"].span if "op" in named else call.span)
        return CompareStep(**base, sets=refs, op=op)

    def _filter(self, call: RawCall, named: dict[str, RawArg], positional: list[RawArg],
                constraints: list[RawArg], base: dict[str, Any],
                verify: bool = False) -> FilterStep:
        left_arg = self._need(call, named, positional, "left_expr")
        right_arg = self._need(call, named, positional, "right_expr")
        op_text = _unquote(named["op"].text).lower() if "op" in named else "equal"
        op = _FILTER_OPS.get(op_text)
        if op is None:
            raise self.error(f"unknown Filter op {op_text!r}"
                             f"{did_you_mean(op_text, _FILTER_OPS)}",
                             named["op"].span if "op" in named else call.span)
        left = self.ref(left_arg.text, left_arg.span, what="Filter's left_expr")
        right = self.operand(right_arg.text, right_arg.span)
        return FilterStep(**base, left=left, right=right, op=op, verify=verify)

    def _verify(self, call: RawCall, named: dict[str, RawArg], positional: list[RawArg],
                constraints: list[RawArg], base: dict[str, Any]) -> FilterStep:
        return self._filter(call, named, positional, constraints, base, verify=True)

    def _deduce(self, call: RawCall, named: dict[str, RawArg], positional: list[RawArg],
                constraints: list[RawArg], base: dict[str, Any]) -> DeduceStep:
        op = _unquote(named["op"].text).lower() if "op" in named else "entailment"
        op = {"judge": "judgement", "judgment": "judgement", "gt": "greater", ">": "greater",
              "lt": "less", "<": "less", "eq": "equal", "=": "equal", "==": "equal",
              "multi_choice": "multichoice"}.get(op, op)
        if op not in _DEDUCE_OPS:
            raise self.error(f"unknown Deduce op {op!r}{did_you_mean(op, _DEDUCE_OPS)}",
                             named["op"].span if "op" in named else call.span)
        left = right = None
        if "left" in named:
            left = self.operand(named["left"].text, named["left"].span)
        elif positional:
            first = positional.pop(0)
            left = self.operand(first.text, first.span)
        if "right" in named:
            right = self.operand(named["right"].text, named["right"].span)
        elif positional:
            first = positional.pop(0)
            right = self.operand(first.text, first.span)
        content: tuple[Operand, ...] = ()
        if "content" in named:
            content = tuple(self.operand(t, s) for t, s in self.items(named["content"]))
        target = _unquote(named["target"].text) if "target" in named else None
        if op in ("greater", "less", "equal") and (left is None or right is None):
            raise self.error(f"Deduce op={op} needs left= and right=", call.span)
        if left is None and not content:
            raise self.error("Deduce needs left= (and right=) or content=", call.span)
        return DeduceStep(**base, op=op, left=left, right=right, content=content,
                          target=target)

    def _output(self, call: RawCall, named: dict[str, RawArg], positional: list[RawArg],
                constraints: list[RawArg], base: dict[str, Any]) -> OutputStep:
        values: list[Operand] = []
        for arg in list(named.values()) + positional:
            for text, span in self.items(arg):
                values.append(self.ref(text, span, what="Output's argument"))
        if not values:
            raise self.error(f"{call.function} needs at least one alias", call.span)
        return OutputStep(**base, values=tuple(values))


def _math_step(self: _Builder, call: RawCall, named: dict[str, RawArg],
               positional: list[RawArg], constraints: list[RawArg],
               base: dict[str, Any]) -> MathStep:
    content: tuple[Operand, ...] = ()
    if "content" in named:
        content = tuple(self.operand(t, s) for t, s in self.items(named["content"]))
    target = _unquote(named["target"].text) if "target" in named else None
    expr_arg = named.get("expr") or (positional.pop(0) if positional else None)
    if expr_arg is None and not content:
        raise self.error("Math needs an expression, e.g. Math(|o1|) or "
                         "Math(content=[o1], target=...)", call.span)
    expr = self.math(expr_arg) if expr_arg is not None else None
    return MathStep(**base, expr=expr, content=content, target=target,
                    text=expr_arg.text if expr_arg is not None else "")


FUNCTION_NAMES = ("Retrieval", "Sort", "Count", "Sum", "Compare", "Filter", "Verify", "Math",
                  "Deduce", "Output", "get_spo", "retriever", "get")
"""Function names as the reference writes them (for did-you-mean)."""


def _words(tree: Tree) -> str:
    parts = [str(t) for t in tree.children]
    if len(parts) == 1 and parts[0].startswith("`"):
        return parts[0][1:-1].strip()
    return " ".join(parts).strip()


def parse_plan(text: str, file: str = "<input>") -> Plan:
    """Parse and check a logical-form program; raise DslSyntaxError/DslSemanticError."""
    source, calls = parse_calls(text, file)
    builder = _Builder(source, normalise(text))
    steps: list[Step] = []
    for call in calls:
        steps.append(_dispatch(builder, call))
    if not steps:
        raise source.syntax_error("the program has no steps (expected calls such as "
                                  "Retrieval(s=..., p=..., o=...))", len(text))
    return Plan(tuple(steps), text, file)


def _dispatch(builder: _Builder, call: RawCall) -> Step:
    function = FUNCTIONS.get(call.function.lower())
    if function == "math":
        named: dict[str, RawArg] = {}
        positional: list[RawArg] = []
        for arg in call.args:
            if arg.key is None or arg.key.strip("`").lower() not in ("expr", "expression",
                                                                      "content", "target"):
                if arg.key is not None:
                    raise builder.error(f"unknown argument {arg.key!r} for {call.function}"
                                        f"{did_you_mean(arg.key, _ARGUMENTS['math'])}; it "
                                        "takes an expression, content= and target=",
                                        arg.key_span)
                positional.append(arg)
            else:
                key = _ARG_SYNONYMS.get(arg.key.strip("`").lower(), arg.key.strip("`").lower())
                named[key] = arg
        result = call.result or call.assign
        base = {"function": call.function, "result": result, "question": call.question,
                "span": call.span}
        step = _math_step(builder, call, named, positional, [], base)
        if result:
            builder.bound[result] = "value"
        return step
    return builder.step(call)
