"""The solver contract: every way kgdb answers a question is one :class:`Solver` with its own
options model, found in :mod:`kgdb.retrieve.registry`.

A solver's options are a pydantic model whose fields each declare, once, their default, range
and help; the command line (``kgdb ask``, ``kgdb retrieve``), the service's OpenAPI schema and
the MCP tools' schemas are generated from these models. An option that several solvers share
(``passages``) is declared once in a mixin both inherit.

``retrieve`` returns :class:`~kgdb.retrieve.evidence.Evidence`; ``ask`` adds the LLM's answer
(:class:`Answer`). Which steps need an LLM is the solver's to say (:meth:`Solver.llm_needed`).
"""

from __future__ import annotations

import abc
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.errors import KgdbError
from kgdb.llm import ChatClient
from kgdb.measure import elapsed_ms
from kgdb.retrieve.evidence import Evidence, Json, ScoreKind


class AskError(KgdbError):
    """A question cannot be answered with the options given (a solver without what it needs)."""


class LlmRequiredError(AskError):
    """The step asked for needs an LLM and none is configured."""


class SolverOptions(BaseModel):
    """Options every solver's model extends: ``solver`` names the solver (and tells the
    service's request models apart)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    solver: str


class PassageOptions(BaseModel):
    """Solvers that hand passages (chunks) to the answer step."""

    passages: int = Field(10, ge=0, le=1000, description=(
        "passages (chunks) given with the evidence; documents are ranked from them"))


PASSAGES_PER_DOCUMENT = 10
"""Chunks read per document asked for when ranking documents for recall (enough for MuSiQue's
documents of one to a few chunks)."""

OptionsT = TypeVar("OptionsT", bound=SolverOptions)


@dataclass
class Answer:
    """A solver's answer and the evidence it came from; ``verdict`` for fact verification."""

    evidence: Evidence
    text: str | None = None
    verdict: bool | None = None

    def to_json(self, *, statements: bool = True) -> dict[str, Json]:
        out = self.evidence.to_json(statements=statements)
        head: dict[str, Json] = {"question": out.pop("question"), "solver": out.pop("solver")}
        if self.text is not None:
            head["answer"] = self.text
        if self.verdict is not None:
            head["verdict"] = self.verdict
        return {**head, **out}


class Solver(abc.ABC, Generic[OptionsT]):
    """One way of answering. Subclasses set the class attributes and implement
    :meth:`retrieve`; the default :meth:`ask` retrieves, then has the LLM answer from the
    evidence's knowledge lines."""

    name: ClassVar[str]
    """What users type: ``kgdb ask --solver NAME``, ``kgdb eval retrieval --mode NAME``."""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Earlier names, accepted and mapped to :attr:`name`."""
    summary: ClassVar[str]
    """One line for ``--help`` and the schemas."""
    options: ClassVar[type[SolverOptions]]
    indexes: ClassVar[tuple[str, ...]] = ()
    """What it needs in the graph, prerequisites first: names of :data:`kgdb.indexes.INDEXES`
    (``kgdb index`` builds them, ``kgdb stats`` says whether they are ready, and a retrieval
    that fails for want of one says which command builds it)."""
    ranks_by_passages: ClassVar[bool] = False
    """True when the solver ranks documents from the passages it reads (``passages`` option):
    :meth:`for_recall` then reads enough of them for the cut-off."""

    def llm_needed(self, options: OptionsT, *, answer: bool) -> str | None:
        """Why this solver needs an LLM for retrieval (``answer=False``) or for an answer
        (``answer=True``), or None when it does not."""
        return "the answer is written by an LLM" if answer else None

    @abc.abstractmethod
    def retrieve(self, store: GraphStore, embedder: Embedder, question: str,
                 options: OptionsT, llm: ChatClient | None = None) -> Evidence:
        """The evidence for ``question``; ``llm`` only where :meth:`llm_needed` says so (or
        where the solver uses one when given, as KG-CQR's filter does)."""

    def answer(self, llm: ChatClient, evidence: Evidence, options: OptionsT) -> Answer:
        """The LLM's answer from ``evidence``."""
        return Answer(evidence, answer_from(llm, evidence.question, evidence.knowledge()))

    def answer_messages(self, evidence: Evidence, options: OptionsT
                        ) -> list[dict[str, str]] | None:
        """The chat messages whose reply, as it is, is the answer (streamed by ``kgdb ask``
        and ``POST /ask`` with ``stream``); None when the answer is more than one plain reply
        (a verdict to parse, a logical form's rounds): it then arrives whole."""
        return answer_messages(evidence.question, evidence.knowledge())

    def ask(self, store: GraphStore, embedder: Embedder, llm: ChatClient, question: str,
            options: OptionsT) -> Answer:
        evidence = self.retrieve(store, embedder, question, options, llm)
        start = time.perf_counter()
        answer = self.answer(llm, evidence, options)
        evidence.timings_ms["answer"] = elapsed_ms(start)
        return answer

    def for_recall(self, options: OptionsT, k: int) -> OptionsT:
        """``options`` that rank at least ``k`` documents where the solver can (``kgdb eval
        retrieval`` asks for its largest cut-off)."""
        if not self.ranks_by_passages:
            return options
        read = max(getattr(options, "passages", 0), k * PASSAGES_PER_DOCUMENT)
        return options.model_copy(update={"passages": read})

    def start(self, store: GraphStore, embedder: Embedder, question: str,
              score_kind: ScoreKind = "cosine") -> tuple[Evidence, GraphStore, list[float]]:
        """What every retrieval begins with: the evidence to fill, the store seen through it
        (each statement recorded in the evidence) and the question's embedding, timed as the
        ``embed`` phase."""
        evidence = Evidence(question, self.name, score_kind=score_kind, statements=[])
        view = store.view(observer=evidence.statements.append)
        with evidence.timings_ms.phase("embed"):
            vector = [float(x) for x in embedder.embed([question])[0]]
        return evidence, view, vector


ANSWER_PROMPT = """\
Answer the question from the knowledge below: facts from a knowledge graph and passages from \
documents. Use only this knowledge; if it does not contain the answer, say that it does not. \
Answer in one short sentence or a list of names, without explanation.

Knowledge:
{knowledge}

Question: {question}
Answer:"""


def answer_messages(question: str, knowledge: Sequence[str]) -> list[dict[str, str]]:
    """The chat messages asking for the answer to ``question`` from the ``knowledge`` lines."""
    prompt = ANSWER_PROMPT.format(knowledge="\n".join(knowledge) or "(nothing was retrieved)",
                                  question=question.strip())
    return [{"role": "user", "content": prompt}]


def answer_from(client: ChatClient, question: str, knowledge: Sequence[str]) -> str:
    """The model's answer to ``question`` from the ``knowledge`` lines (KG-Retriever's and
    KG-CQR's generation step: the retrieved knowledge combined with the original question)."""
    return client.complete(answer_messages(question, knowledge)).strip()
