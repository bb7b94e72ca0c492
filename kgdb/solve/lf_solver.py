"""The logical-form solver (KAG section 2.3, Algorithm 1): plan, execute, judge, re-plan.

Each round the LLM writes a logical-form plan for the current question (KAG Tables 13/14
style); kgdb parses it (a parse error goes back to the model through
``ChatClient.complete_parsed``'s bounded retries), runs it on the graph, and stores what it
found in memory. A judge step decides whether memory answers the original question; if not,
the judge's follow-up question starts the next round, up to ``rounds`` (paper: n = 3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kgdb.dsl.lf_ast import Plan
from kgdb.dsl.logical_form import parse_plan
from kgdb.errors import DslError, EngineConnectionError, KgdbError, LlmError
from kgdb.llm.client import OutputParseError
from kgdb.llm.replies import clean_reply, strip_reasoning
from kgdb.solve.lf_compile import store_linker
from kgdb.solve.lf_run import Executor, RunResult

PLANNER_PROMPT = """\
You decompose a question into logical-form steps that run on a knowledge graph.
Write one step per line pair, exactly like this:
Step1: <sub-question>
Action1: <one function call>

Functions:
- Retrieval(s=alias:Type[name], p=alias:relation, o=alias:Type[name], s.prop=value, o.prop>value)
  one edge s -p-> o. Give a Type and a [name] only at an alias's first mention; later refer
  to the alias alone (s=o1). Unknown things get an alias without a name (o=o1:Person).
  Constraints compare a property: o.name>2000, p.year=2011 (operators = != < > <= >=).
- Sort(set=A, orderby=B, direction=min|max, limit=n)   order A by B, keep the top n
- Count(A)->c   Sum(A)->s   Compare(set=[A,B], op=min|max)
- Filter(left_expr=A, right_expr=value, op=equal|lt|gt|le|ge|contains)
- mathN = Math(expr)   arithmetic on bound values: + - * / ^, |A| = count of A, \\sum A
- Deduce(left=A, right=B, op=entailment|greater|less|equal)
- Output(A, B, ...)   the answer aliases (always end with Output)

Relations in this graph: {relations}
Use these relation names in p=..., written exactly. Entity names go in [brackets].

Example:
question: Which sports team for which Cristiano Ronaldo played in 2011 was founded last?
Step1: Which teams did Cristiano Ronaldo play for in 2011?
Action1: Retrieval(s=s1:Player[Cristiano Ronaldo], p=p1:playedFor, o=o1:SportsTeam, p.PlayedForInYear=2011)
Step2: When was each team founded?
Action2: Retrieval(s=o1, p=p2:foundationYear, o=o2:Year)
Step3: Which team was founded last?
Action3: Sort(set=o1, orderby=o2, direction=max, limit=1)->team
Step4: Output the team.
Action4: Output(team)

Reply with the steps only."""

JUDGE_PROMPT = """\
You decide whether the facts gathered so far answer the question.
Reply with exactly one line:
ANSWER: <the answer, values separated by |>
or, if the facts are not enough:
MISSING: <one new question whose answer would complete them>"""

FINAL_PROMPT = """\
Answer the question from the facts gathered. If they do not contain the answer, say what is
known and that the rest is unknown. Reply with the answer only."""


@dataclass
class Round:
    question: str
    plan_text: str
    run: RunResult | None
    error: str | None
    verdict: str

    def to_json(self) -> dict[str, Any]:
        return {"question": self.question, "plan": self.plan_text,
                "run": self.run.to_json() if self.run else None, "error": self.error,
                "verdict": self.verdict}


@dataclass
class SolveResult:
    question: str
    answer: str
    rounds: list[Round] = field(default_factory=list)
    answered: bool = False
    """True when the judge found the answer; False when rounds ran out."""

    def to_json(self) -> dict[str, Any]:
        return {"question": self.question, "answer": self.answer, "answered": self.answered,
                "solver": "logical-form", "rounds": [r.to_json() for r in self.rounds]}

    def render(self) -> str:
        lines = [f"answer: {self.answer}"]
        for i, r in enumerate(self.rounds, 1):
            lines.append(f"== round {i}: {r.question}")
            lines += ["  " + line for line in r.plan_text.strip().splitlines()]
            if r.error:
                lines.append(f"  error: {r.error}")
            if r.run:
                lines += ["  " + line for line in r.run.render().splitlines()]
            lines.append(f"  judge: {r.verdict}")
        return "\n".join(lines)


def parse_planner_reply(text: str) -> tuple[str, Plan]:
    """A planner reply as a checked plan; a DslError becomes the OutputParseError the model sees."""
    body = clean_reply(text)
    try:
        return body, parse_plan(body, "plan")
    except DslError as exc:
        raise OutputParseError(f"the plan is not valid: {exc}") from exc


def parse_judge_reply(text: str) -> tuple[str, str]:
    for line in strip_reasoning(text).splitlines():
        m = re.match(r"^\s*\**\s*(ANSWER|MISSING)\s*\**\s*[:：]\s*(.*)$", line, re.IGNORECASE)
        if m and m.group(2).strip():
            return m.group(1).upper(), m.group(2).strip()
    raise OutputParseError("reply with one line 'ANSWER: ...' or 'MISSING: ...'")


def _relations(store: Any) -> list[str]:
    try:
        return store_linker(store).relationship_types()
    except EngineConnectionError:
        raise
    except KgdbError:
        return []


def _memory_text(rounds: list[Round]) -> str:
    parts = []
    for r in rounds:
        parts.append(f"Sub-question: {r.question}")
        if r.error:
            parts.append(f"  (the plan failed: {r.error.splitlines()[0]})")
        if r.run:
            for alias, values in r.run.outputs.items():
                shown = ", ".join(v.text for v in values[:30]) or "nothing found"
                more = f" (+{len(values) - 30} more)" if len(values) > 30 else ""
                parts.append(f"  {alias}: {shown}{more}")
            for t in r.run.trace:
                for chunk in t.result.get("chunks", [])[:3]:
                    parts.append(f"  passage: {chunk['text']}")
    return "\n".join(parts) or "(nothing yet)"


def solve_lf(question: str, store: Any, embedder: Any, llm: Any, rounds: int = 3) -> SolveResult:
    """Answer ``question`` with logical forms over ``store``; see the module docstring."""
    if not question or not question.strip():
        raise KgdbError("the question is empty")
    relations = ", ".join(_relations(store)) or "(none found)"
    executor = Executor(store, linker=store_linker(store, embedder), embedder=embedder, llm=llm)
    result = SolveResult(question, "")
    current = question
    for _ in range(max(1, rounds)):
        messages = [{"role": "system", "content": PLANNER_PROMPT.format(relations=relations)}]
        user = f"question: {current}"
        if result.rounds:
            user = (f"Original question: {question}\nKnown so far:\n"
                    f"{_memory_text(result.rounds)}\n\nquestion: {current}")
        messages.append({"role": "user", "content": user})
        plan_text, plan = llm.complete_parsed(messages, parse_planner_reply, attempts=3,
                                              what="logical-form plan")
        run: RunResult | None = None
        error: str | None = None
        try:
            run = executor.run(plan)
        except EngineConnectionError:
            raise
        except KgdbError as exc:
            error = str(exc)
        record = Round(current, plan_text, run, error, "")
        result.rounds.append(record)
        kind, text = llm.complete_parsed([
            {"role": "system", "content": JUDGE_PROMPT},
            {"role": "user", "content": f"Question: {question}\nFacts:\n"
                                        f"{_memory_text(result.rounds)}"},
        ], parse_judge_reply, attempts=3, what="verdict")
        record.verdict = f"{kind}: {text}"
        if kind == "ANSWER":
            result.answer, result.answered = text, True
            return result
        current = text
    try:
        result.answer = llm.complete([
            {"role": "system", "content": FINAL_PROMPT},
            {"role": "user", "content": f"Question: {question}\nFacts:\n"
                                        f"{_memory_text(result.rounds)}"},
        ]).strip()
    except LlmError:
        raise
    return result

