"""One way to answer a question with any solver, for every front end: ``kgdb ask``, ``kgdb
retrieve``, the knowledge service (``kgdb serve``), MCP and the procedures it relays for.

:func:`retrieve` gathers evidence without an LLM answer; :func:`ask` adds the answer. The
solver is the one ``options.solver`` names in :mod:`kgdb.retrieve.registry`; whether it needs
an LLM is the solver's to say, and a missing LLM is a :class:`LlmRequiredError` that says why.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.errors import EngineConnectionError, KgdbError
from kgdb.llm import ChatClient
from kgdb.measure import elapsed_ms
from kgdb.retrieve.evidence import Evidence
from kgdb.retrieve.readiness import NotReadyError, explain_failure
from kgdb.retrieve.registry import solver_named
from kgdb.retrieve.solver import Answer, AskError, LlmRequiredError, Solver, SolverOptions

__all__ = ["Answer", "AskError", "LlmRequiredError", "NotReadyError", "ask", "ask_stream", "llm_needed",
           "require_llm", "retrieve"]


def llm_needed(options: SolverOptions, *, answer: bool) -> str | None:
    """Why the solver of ``options`` needs an LLM for this step (None: it does not)."""
    return solver_named(options.solver).llm_needed(options, answer=answer)


def require_llm(options: SolverOptions, llm: ChatClient | None, *, answer: bool) -> None:
    """A :class:`LlmRequiredError` that says why, when the step needs an LLM and ``llm`` is
    None (checked before anything else runs)."""
    if llm is not None:
        return
    reason = solver_named(options.solver).llm_needed(options, answer=answer)
    if reason:
        hint = "; kgdb retrieve gives the evidence without one" if answer else ""
        raise LlmRequiredError(f"no LLM is configured (OPENAI_BASE_URL, OPENAI_API_KEY) and "
                               f"{reason}{hint}")


def retrieve(store: GraphStore, embedder: Embedder, question: str, options: SolverOptions,
             llm: ChatClient | None = None) -> Evidence:
    """The evidence ``options.solver`` finds for ``question``, without an answer. ``llm`` is
    used where the solver needs one (SimGRAG without a pattern, logical forms) and, when
    given, where it helps (KG-CQR's filter and context)."""
    _check_question(question)
    require_llm(options, llm, answer=False)
    metered = llm.metered() if llm is not None else None
    solver = solver_named(options.solver)
    with _readiness_explained(store, solver):
        evidence = solver.retrieve(store, embedder, question, options, metered)
    if metered is not None and metered.usage is not None:
        evidence.usage = metered.usage
    return evidence


def ask(store: GraphStore, embedder: Embedder, llm: ChatClient | None, question: str,
        options: SolverOptions) -> Answer:
    """``question`` answered by ``options.solver`` from the graph, with its evidence."""
    _check_question(question)
    require_llm(options, llm, answer=True)
    assert llm is not None
    metered = llm.metered()
    solver = solver_named(options.solver)
    with _readiness_explained(store, solver):
        answer = solver.ask(store, embedder, metered, question, options)
    if metered.usage is not None:
        answer.evidence.usage = metered.usage
    return answer


AskEvent = tuple[str, "Evidence | str | Answer"]
"""``("evidence", Evidence)`` first, then ``("token", text)`` per piece of the answer, then
``("answer", Answer)`` (its evidence carries the LLM usage and the ``answer`` timing)."""


def ask_stream(store: GraphStore, embedder: Embedder, llm: ChatClient | None, question: str,
               options: SolverOptions, *, max_chars: int | None = None) -> Iterator[AskEvent]:
    """:func:`ask` as events: the evidence as soon as it is found, the answer's text as the
    LLM writes it (whole, for a solver whose answer is more than one plain reply).

    ``max_chars`` bounds the answer a streamed reply may write (what is kept to send it
    whole at the end): past it the LLM's reply is closed, the answer is its first
    ``max_chars`` characters and the evidence's ``detail["answer_truncated"]`` says so."""
    _check_question(question)
    require_llm(options, llm, answer=True)
    assert llm is not None
    metered = llm.metered()
    solver = solver_named(options.solver)
    if type(solver).ask is not Solver.ask:  # the solver answers in its own way (rounds)
        with _readiness_explained(store, solver):
            answer = solver.ask(store, embedder, metered, question, options)
        if metered.usage is not None:
            answer.evidence.usage = metered.usage
        yield "evidence", answer.evidence
        if answer.text:
            yield "token", answer.text
        yield "answer", answer
        return
    with _readiness_explained(store, solver):
        evidence = solver.retrieve(store, embedder, question, options, metered)
    if metered.usage is not None:
        evidence.usage = metered.usage
    yield "evidence", evidence
    start = time.perf_counter()
    messages = solver.answer_messages(evidence, options)
    if messages is None:
        answer = solver.answer(metered, evidence, options)
        if answer.text:
            yield "token", answer.text
    else:
        pieces: list[str] = []
        kept = 0
        reply = metered.stream(messages)
        try:
            for piece in reply:
                if max_chars is not None and kept + len(piece) > max_chars:
                    piece = piece[:max_chars - kept]
                    evidence.detail["answer_truncated"] = True
                if piece:
                    pieces.append(piece)
                    kept += len(piece)
                    yield "token", piece
                if evidence.detail.get("answer_truncated"):
                    break
        finally:
            reply.close()  # the LLM's response too, however this ends (ChatClient.stream)
        answer = Answer(evidence, "".join(pieces).strip())
    evidence.timings_ms["answer"] = elapsed_ms(start)
    yield "answer", answer


@contextlib.contextmanager
def _readiness_explained(store: GraphStore, solver: Solver[Any]) -> Iterator[None]:
    """A solver's failure for want of an index it declares becomes one line that names the
    command building it (:class:`~kgdb.retrieve.readiness.NotReadyError`), whatever the
    engine said (FalkorDB: "Invalid arguments for procedure 'db.idx.vector.queryNodes'").
    The indexes are read only after a failure: a retrieval that works pays nothing."""
    try:
        yield
    except NotReadyError:
        raise
    except EngineConnectionError:
        raise  # the engine is not there: nothing to read the indexes with
    except KgdbError as exc:
        message = explain_failure(store, solver)
        if message:
            raise NotReadyError(message) from exc
        raise


def _check_question(question: str) -> None:
    if not question.strip():
        raise AskError("the question is empty")
