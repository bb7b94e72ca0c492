"""Run a logical-form plan against the graph and keep a trace of every step.

Graph retrieval first (the compiled Cypher); when a Retrieval pattern finds nothing and the
graph has chunks, hybrid retrieval (KAG Algorithm 2): the chunks that support the pattern's
named entities (``supporting_chunks``) plus the nearest chunks to the step's question (chunk
vector index); an LLM, when one is given, reads them to answer the step. Math runs in the
safe evaluator; Deduce greater/less/equal are decided in Python, the other Deduce ops by the
LLM; Output returns the bound values.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from kgdb.cypher import logical_form as cy
from kgdb.dsl.lf_ast import (
    CompareStep,
    CountStep,
    DeduceStep,
    FilterStep,
    Literal,
    MathStep,
    Operand,
    OutputStep,
    Plan,
    Ref,
    RetrievalStep,
    SortStep,
    Step,
    SumStep,
)
from kgdb.dsl.logical_form import parse_plan
from kgdb.errors import KgdbError
from kgdb.link import PatternLinker
from kgdb.solve.lf_compile import CompiledPlan, CypherOp, PythonOp, compile_plan
from kgdb.solve.lf_math import MathError, evaluate, to_number
from kgdb.statement import shown_params


class ExecutionError(KgdbError):
    """A step that cannot be carried out (names the step and the cause)."""


@dataclass(frozen=True)
class Value:
    """One bound value: a graph entity (``id`` set) or a constant."""

    text: str
    id: str | None = None
    score: Any = None

    @property
    def key(self) -> str:
        return self.id if self.id is not None else self.text

    def to_json(self) -> Any:
        if self.id is not None and self.id != self.text:
            return {"id": self.id, "name": self.text}
        return self.text


def number_value(x: float) -> Value:
    return Value(str(int(x)) if float(x).is_integer() else repr(float(x)))


@dataclass
class TraceStep:
    steps: list[int]
    functions: list[str]
    kind: str
    where: str
    """``cypher`` or ``python`` (or ``chunks`` for hybrid retrieval)."""
    cypher: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    rows: int | None = None
    result: dict[str, list[Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"steps": self.steps, "functions": self.functions, "kind": self.kind,
                "where": self.where, "cypher": self.cypher, "params": self.params,
                "rows": self.rows, "result": self.result, "notes": self.notes,
                "questions": self.questions}


@dataclass
class RunResult:
    plan: Plan
    compiled: CompiledPlan
    outputs: dict[str, list[Value]]
    bindings: dict[str, list[Value]]
    trace: list[TraceStep]

    def output_texts(self) -> dict[str, list[str]]:
        return {k: [v.text for v in vs] for k, vs in self.outputs.items()}

    def to_json(self) -> dict[str, Any]:
        return {"dialect": self.compiled.dialect, "notes": list(self.compiled.notes),
                "outputs": {k: [v.to_json() for v in vs] for k, vs in self.outputs.items()},
                "trace": [t.to_json() for t in self.trace]}

    def render(self) -> str:
        lines = [f"note: {n}" for n in self.compiled.notes]
        for t in self.trace:
            head = ", ".join(f"{i + 1}:{f}" for i, f in zip(t.steps, t.functions, strict=True))
            lines.append(f"-- step {head} [{t.where}]")
            for q in t.questions:
                lines.append(f"   question: {q}")
            if t.cypher:
                lines += ["   " + line for line in t.cypher.splitlines()]
                lines.append(f"   params: {_short_json(t.params)}")
            if t.rows is not None:
                lines.append(f"   rows: {t.rows}")
            for alias, values in t.result.items():
                lines.append(f"   {alias} = {_short_json(values)}")
            lines += [f"   note: {n}" for n in t.notes]
        lines.append("== output")
        for alias, values in self.outputs.items():
            lines.append(f"{alias}: " + ", ".join(v.text for v in values))
        return "\n".join(lines)


def _short_json(value: Any, limit: int = 400) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


class Executor:
    """Runs plans on one store. ``linker`` links names (phase 1); ``llm`` is optional."""

    def __init__(self, store: Any, *, linker: PatternLinker | None = None, embedder: Any = None,
                 llm: Any = None, chunk_k: int = 5) -> None:
        self.store = store
        self.linker = linker
        self.embedder = embedder
        self.llm = llm
        self.chunk_k = chunk_k
        self._has_chunks: bool | None = None

    def run_text(self, text: str, file: str = "<input>") -> RunResult:
        return self.run(parse_plan(text, file))

    def run(self, plan: Plan) -> RunResult:
        compiled = compile_plan(plan, self.store.dialect, self.linker)
        state = _State(plan, compiled)
        for op in compiled.ops:
            if isinstance(op, CypherOp):
                self._cypher(state, op)
            else:
                self._python(state, op)
        outputs = self._outputs(state)
        return RunResult(plan, compiled, outputs, state.bindings, state.trace)

    # ------------------------------------------------------------------ graph
    def _cypher(self, state: _State, op: CypherOp) -> None:
        statement = op.query.bind({alias: [v.key for v in state.bindings.get(alias, [])]
                                   for alias in op.bound.values()})
        params = statement.params
        steps = [state.plan.steps[i] for i in op.steps]
        trace = TraceStep(list(op.steps), [s.function for s in steps], op.kind, "cypher",
                          statement.text, shown_params(params),
                          questions=[s.question for s in steps if s.question])
        state.trace.append(trace)
        result = self.store.run(statement)
        records = result.records()
        trace.rows = len(records)
        if op.kind == "match" and len(records) >= cy.MAX_ROWS:
            trace.notes.append(f"the pattern has more than {cy.MAX_ROWS} matches; only the "
                               f"first {cy.MAX_ROWS} are used")
        if op.kind == "match":
            if not records and op.fallback:
                trace.notes.append("the joint pattern found nothing: its steps run one by one")
                for sub in op.fallback:
                    self._cypher(state, sub)
                return
            if not records:
                self._hybrid(state, op, trace)
                return
            for alias, (id_col, name_col) in op.query.node_columns.items():
                values = _distinct(Value(str(r[name_col]), str(r[id_col])) for r in records)
                state.bindings[alias] = values
                if not alias.startswith("_") and not _is_named(op, alias):
                    trace.result[alias] = [v.to_json() for v in values[:50]]
            for alias, col in op.query.edge_columns.items():
                state.bindings[alias.split("#")[0]] = _distinct(Value(str(r[col]))
                                                                for r in records)
            return
        step = steps[0]
        target = op.target or ""
        if op.kind in ("count", "sum"):
            value = records[0][op.query.value_column or "value"] if records else 0
            values = [number_value(float(value or 0))]
            state.bind(step.result or f"_{op.kind}{op.steps[0]}", values)
            trace.result[step.result or op.kind] = [v.text for v in values]
            return
        if op.kind == "sort":
            id_col, name_col = op.query.node_columns[target]
            values = [Value(str(r[name_col]), str(r[id_col]), r.get("sort_key"))
                      for r in records]
            state.bind(step.result or target, values)
            trace.result[step.result or target] = [
                {"value": v.to_json(), "key": v.score} for v in values[:50]]
            return
        if op.kind in ("filter", "verify"):
            id_col, name_col = op.query.node_columns[target]
            values = _distinct(Value(str(r[name_col]), str(r[id_col])) for r in records)
            assert isinstance(step, FilterStep)
            if step.verify:
                state.bind(step.result or f"_verify{op.steps[0]}",
                           [Value("true" if values else "false")])
                trace.result[step.result or "verify"] = ["true" if values else "false"]
            elif step.result:
                state.bind(step.result, values)
            else:
                state.bindings[target] = values
                trace.result[step.result or target] = [v.to_json() for v in values[:50]]

    def has_chunks(self) -> bool:
        if self._has_chunks is None:
            try:
                value = self.store.run(cy.count_chunks(self.store.dialect)).value(0)
            except KgdbError:
                value = 0
            self._has_chunks = bool(value)
        return self._has_chunks

    def _hybrid(self, state: _State, op: CypherOp, trace: TraceStep) -> None:
        """KAG Algorithm 2: the graph found nothing, so read the chunks."""
        unknown = [n.var for n in op.linked.pattern.nodes if n.name is None
                   and n.var not in state.bindings]
        for alias in [n.var for n in op.linked.pattern.nodes]:
            state.bindings.setdefault(alias, [])
        if not self.has_chunks():
            trace.notes.append("the graph found nothing and the graph has no chunks")
            return
        ids = op.linked.linked_ids()
        for alias in op.bound.values():
            ids += [v.key for v in state.bindings.get(alias, [])]
        chunks: dict[str, str] = {}
        dialect = self.store.dialect
        if ids:
            stmt = cy.chunks_of_entities(dialect, ids, self.chunk_k)
            for r in self.store.run(stmt).records():
                chunks[str(r["id"])] = str(r["text"])
        steps = [state.plan.steps[i] for i in op.steps]
        query = " ".join(s.question or _describe(s) for s in steps)
        if self.embedder is not None:
            stmt = cy.nearest_chunks(dialect, self.embedder.embed([query])[0], self.chunk_k)
            for r in self.store.run(stmt).records():
                chunks.setdefault(str(r["id"]), str(r["text"]))
        trace.where = "cypher+chunks"
        trace.result["chunks"] = [{"id": k, "text": v[:300]} for k, v in chunks.items()]
        trace.notes.append("the graph found nothing: hybrid retrieval through "
                           "supporting_chunks and chunk vector search")
        state.evidence += list(chunks.values())
        if self.llm is None or not chunks or not unknown:
            return
        answer = self.llm.complete([
            {"role": "system", "content": "Answer from the passages only. Reply with the "
             "answer values, one per line, or exactly 'I don't know'."},
            {"role": "user", "content": f"Question: {query}\n\nPassages:\n" + "\n".join(
                f"[{k}] {v}" for k, v in chunks.items())},
        ])
        values = [Value(line.strip(" -*\t")) for line in answer.splitlines()
                  if line.strip(" -*\t") and "don't know" not in line.lower()]
        state.bindings[unknown[-1]] = _distinct(values)
        trace.result[unknown[-1]] = [v.text for v in values]

    # ------------------------------------------------------------------ python
    def _python(self, state: _State, op: PythonOp) -> None:
        index = op.steps[0]
        step = state.plan.steps[index]
        trace = TraceStep([index], [step.function], op.kind, "python",
                          questions=[step.question] if step.question else [])
        trace.notes.append(op.reason)
        state.trace.append(trace)
        try:
            values = self._python_step(state, step, trace)
        except MathError as exc:
            raise self._error(state, step, str(exc)) from exc
        if values is not None:
            name = step.result or (step.set.alias if isinstance(step, SortStep) else
                                   f"_{step.kind}{index}")
            state.bind(name, values)
            trace.result[step.result or name] = [v.to_json() for v in values[:50]]

    def _error(self, state: _State, step: Step, message: str) -> ExecutionError:
        where = f"{state.plan.file}:{step.span.line}:{step.span.column}: " if step.span else ""
        return ExecutionError(f"{where}{step.function}: {message}")

    def _python_step(self, state: _State, step: Step, trace: TraceStep) -> list[Value] | None:
        if isinstance(step, MathStep):
            return [self._math(state, step, trace)]
        if isinstance(step, CountStep):
            return [number_value(len(state.values(step.set)))]
        if isinstance(step, SumStep):
            return [number_value(sum(to_number(v.text) for v in state.values(step.set)))]
        if isinstance(step, SortStep):
            return self._sort(state, step)
        if isinstance(step, CompareStep):
            return self._compare(state, step)
        if isinstance(step, FilterStep):
            return self._filter(state, step)
        if isinstance(step, DeduceStep):
            return [self._deduce(state, step, trace)]
        if isinstance(step, OutputStep):
            return None
        if isinstance(step, RetrievalStep):  # pragma: no cover - always compiled
            raise self._error(state, step, "Retrieval must compile to Cypher")
        return None

    def _math(self, state: _State, step: MathStep, trace: TraceStep) -> Value:
        if step.expr is not None:
            return number_value(evaluate(step.expr, lambda a: state.bindings.get(a, [])))
        values = [v for o in step.content for v in state.operand(o)]
        target = (step.target or "").lower()
        numbers = lambda: [to_number(v.text) for v in values]  # noqa: E731
        if re.search(r"\b(count|how many|number of)\b", target):
            return number_value(len(_distinct(values)))
        if re.search(r"\b(sum|total|add)\b", target):
            return number_value(sum(numbers()))
        if re.search(r"\b(average|mean)\b", target):
            nums = numbers()
            if not nums:
                raise MathError("the average of no values")
            return number_value(sum(nums) / len(nums))
        if re.search(r"\b(max|maximum|largest|highest|latest|most)\b", target):
            return number_value(max(numbers(), default=0.0))
        if re.search(r"\b(min|minimum|smallest|lowest|earliest|least)\b", target):
            return number_value(min(numbers(), default=0.0))
        if self.llm is None:
            raise MathError(f"the target {step.target!r} is free text and no LLM is "
                            "configured; write an expression such as Math(|o1|)")
        trace.notes.append("free-text target answered by the LLM")
        answer = self.llm.complete([
            {"role": "system", "content": "Compute the target from the values. Reply with "
             "the result only."},
            {"role": "user", "content": f"Target: {step.target}\nValues: "
             + json.dumps([v.text for v in values], ensure_ascii=False)},
        ])
        return Value(answer.strip())

    def _sort(self, state: _State, step: SortStep) -> list[Value]:
        values = state.values(step.set)
        keys = state.values(step.orderby) if step.orderby else values
        if step.orderby and len(keys) != len(values):
            raise MathError(f"Sort: {step.set.alias} has {len(values)} values but "
                            f"{step.orderby.alias} has {len(keys)}; they cannot be paired")

        def key(pair: tuple[Value, Value]) -> tuple[int, float, str]:
            try:
                return (0, to_number(pair[1].text), pair[1].text)
            except MathError:
                return (1, 0.0, pair[1].text)

        pairs = sorted(zip(values, keys, strict=True), key=key,
                       reverse=step.direction == "max")
        if step.direction == "max":  # keep numbers before text in both directions
            pairs = [p for p in pairs if key(p)[0] == 0] + [p for p in pairs if key(p)[0]]
        out = [Value(v.text, v.id, k.text) for v, k in pairs]
        return out[: step.limit] if step.limit is not None else out

    def _compare(self, state: _State, step: CompareStep) -> list[Value]:
        best: tuple[float, list[Value]] | None = None
        for ref in step.sets:
            values = state.values(ref)
            numbers = [to_number(v.text) for v in values]
            if not numbers:
                continue
            score = max(numbers) if step.op == "max" else min(numbers)
            better = best is None or (score > best[0] if step.op == "max" else score < best[0])
            if better:
                best = (score, [Value(ref.alias), *values])
        return best[1][:1] if best else []

    def _filter(self, state: _State, step: FilterStep) -> list[Value]:
        assert isinstance(step.left, Ref)
        left = state.values(step.left)
        right = state.operand(step.right)
        kept = [v for v in left if any(_holds(v.text, step.op, r.text) for r in right)]
        if step.verify:
            return [Value("true" if kept else "false")]
        if not step.result:
            state.bindings[step.left.alias] = kept
        return kept

    def _deduce(self, state: _State, step: DeduceStep, trace: TraceStep) -> Value:
        left = state.operand(step.left) if step.left is not None else []
        right = state.operand(step.right) if step.right is not None else []
        if step.op in ("greater", "less", "equal"):
            if step.op == "equal":
                same = {v.text.strip().lower() for v in left} == \
                    {v.text.strip().lower() for v in right}
                if not same and len(left) == 1 and len(right) == 1:
                    try:
                        same = to_number(left[0].text) == to_number(right[0].text)
                    except MathError:
                        pass
                return Value("true" if same else "false")
            if len(left) != 1 or len(right) != 1:
                raise MathError(f"Deduce op={step.op} compares one value with one value; "
                                f"got {len(left)} and {len(right)}")
            a, b = to_number(left[0].text), to_number(right[0].text)
            return Value("true" if (a > b if step.op == "greater" else a < b) else "false")
        if self.llm is None:
            raise MathError(f"Deduce op={step.op} needs an LLM (set OPENAI_BASE_URL / "
                            "OPENAI_API_KEY)")
        trace.notes.append(f"op={step.op} decided by the LLM")
        content = [v.text for o in step.content for v in state.operand(o)]
        prompt = {
            "op": step.op, "left": [v.text for v in left], "right": [v.text for v in right],
            "content": content, "target": step.target, "question": step.question,
            "evidence": state.evidence[-5:],
        }
        answer = self.llm.complete([
            {"role": "system", "content": "You decide one logical-form Deduce step. "
             "entailment/judgement: reply 'true' or 'false'. extract/choice/multiChoice: "
             "reply with the answer only."},
            {"role": "user", "content": json.dumps(prompt, ensure_ascii=False)},
        ])
        text = answer.strip()
        low = text.lower().strip(".! ")
        if step.op in ("entailment", "judgement") and low in ("true", "yes", "false", "no"):
            text = "true" if low in ("true", "yes") else "false"
        return Value(text)

    # ------------------------------------------------------------------ outputs
    def _outputs(self, state: _State) -> dict[str, list[Value]]:
        values = state.plan.outputs()
        if values:
            out: dict[str, list[Value]] = {}
            for v in values:
                label = v.alias if isinstance(v, Ref) else str(v.value)
                out[label] = state.operand(v)
            return out
        last = state.plan.steps[-1]
        alias = last.result
        if alias is None and isinstance(last, RetrievalStep):
            alias = last.o.alias
        if alias is None and isinstance(last, SortStep):
            alias = last.set.alias
        if alias is None:
            alias = state.last_bound
        return {alias: state.bindings.get(alias, [])} if alias else {}


class _State:
    def __init__(self, plan: Plan, compiled: CompiledPlan) -> None:
        self.plan = plan
        self.compiled = compiled
        self.bindings: dict[str, list[Value]] = {}
        self.trace: list[TraceStep] = []
        self.evidence: list[str] = []
        self.last_bound: str | None = None

    def bind(self, alias: str, values: list[Value]) -> None:
        self.bindings[alias] = values
        self.last_bound = alias

    def values(self, ref: Ref) -> list[Value]:
        # A property reference (o1.year) is read by the Cypher an aggregate compiles to;
        # steps that run in Python see the alias's bound values.
        return self.bindings.get(ref.alias, [])

    def operand(self, operand: Operand | None) -> list[Value]:
        if operand is None:
            return []
        if isinstance(operand, Literal):
            return [Value(str(operand.value))]
        return self.values(operand)


def _distinct(values: Any) -> list[Value]:
    seen: dict[str, Value] = {}
    for v in values:
        seen.setdefault(v.key, v)
    return list(seen.values())


def _is_named(op: CypherOp, alias: str) -> bool:
    try:
        return op.linked.pattern.node(alias).name is not None
    except KgdbError:
        return False


def _holds(left: str, op: str, right: str) -> bool:
    if op in ("=", "<>"):
        same = left.strip().lower() == right.strip().lower()
        try:
            same = same or to_number(left) == to_number(right)
        except MathError:
            pass
        return same if op == "=" else not same
    if op == "contains":
        return right.strip().lower() in left.lower()
    if op == "in":
        return left.strip().lower() in [x.strip().lower() for x in right.split(",")]
    try:
        a, b = to_number(left), to_number(right)
    except MathError:
        return False
    return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}.get(op, False)


def _describe(step: Step) -> str:
    if isinstance(step, RetrievalStep):
        rel = " or ".join(r.replace("_", " ") for r in step.p.relations) or "related to"
        return f"{step.s.name or step.s.alias} {rel} {step.o.name or step.o.alias}"
    return step.function
