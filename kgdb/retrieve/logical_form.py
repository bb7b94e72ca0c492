"""KAG's logical-form solver as a retrieval solver (``logical-form``): the planning loop is
:func:`kgdb.solve.lf_solver.solve_lf`; here its rounds become evidence."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.llm import ChatClient
from kgdb.retrieve.evidence import Evidence, Fact, Group
from kgdb.retrieve.solver import Answer, LlmRequiredError, Solver, SolverOptions
from kgdb.solve.lf_solver import solve_lf


class LogicalFormOptions(SolverOptions):
    solver: Literal["logical-form"] = "logical-form"
    rounds: int = Field(3, ge=1, le=10, description=(
        "logical-form: plan-execute-judge rounds at most (KAG's n)"))


class LogicalFormSolver(Solver[LogicalFormOptions]):
    """KAG's logical-form solver (Liang et al., "KAG: Boosting LLMs in Professional Domains
    via Knowledge Augmented Generation", section 2.3): the LLM plans logical forms, kgdb runs
    them against the graph, the LLM judges and re-plans."""

    name = "logical-form"
    aliases = ("lf", "kag")
    summary = "KAG: logical-form plans written by an LLM, run against the graph, judged"
    options = LogicalFormOptions
    indexes = ("entities",)

    def llm_needed(self, options: LogicalFormOptions, *, answer: bool) -> str | None:
        return ("the logical-form solver plans with an LLM (run a logical form of your own "
                "with kgdb lf run)")

    def retrieve(self, store: GraphStore, embedder: Embedder, question: str,
                 options: LogicalFormOptions, llm: ChatClient | None = None) -> Evidence:
        return self._solve(store, embedder, question, options, llm).evidence

    def ask(self, store: GraphStore, embedder: Embedder, llm: ChatClient, question: str,
            options: LogicalFormOptions) -> Answer:
        return self._solve(store, embedder, question, options, llm)

    def _solve(self, store: GraphStore, embedder: Embedder, question: str,
               options: LogicalFormOptions, llm: ChatClient | None) -> Answer:
        if llm is None:
            raise LlmRequiredError(self.llm_needed(options, answer=False) or "")
        evidence = Evidence(question, self.name, score_kind="rank", statements=[])
        with evidence.timings_ms.phase("solve"):
            solved = solve_lf(question, store.view(observer=evidence.statements.append),
                              embedder, llm, options.rounds)
        for number, round_ in enumerate(solved.rounds, 1):
            evidence.groups.append(Group(number, "round"))
            if round_.run is not None:
                evidence.facts += [Fact(alias, "=", value, group=number)
                                   for alias, values in round_.run.output_texts().items()
                                   for value in values]
        evidence.detail.update({"answered": solved.answered,
                                "rounds": [r.to_json() for r in solved.rounds]})
        return Answer(evidence, solved.answer)
