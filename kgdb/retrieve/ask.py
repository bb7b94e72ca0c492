"""One way to answer a question with any solver, for every front end: ``kgdb ask``, the
knowledge service (``kgdb serve``) and the Cypher procedures it relays for.

:func:`retrieve` gathers evidence without an LLM answer; :func:`ask` adds the answer. Both
return an :class:`Answer` that carries the evidence as flat rows (what BI tools and
``custom.kgdb.askEvidence`` read), the Cypher statements that ran, and timings per phase.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.errors import KgdbError
from kgdb.llm import ChatClient
from kgdb.retrieve.context import Evidence, Passage
from kgdb.statement import Statement, shown_params

Solver = Literal["simgrag", "lf", "hig", "cqr", "vector"]


class AskError(KgdbError):
    """A question cannot be answered with the options given (solver without what it needs)."""


class AskOptions(BaseModel):
    """How to answer: the solver and its settings (the options of ``kgdb ask``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    solver: Solver = Field("simgrag", description=(
        "simgrag: pattern graph and top-k subgraphs; lf: logical-form plans; hig: "
        "KG-Retriever; cqr: KG-CQR; vector: nearest chunks (retrieval only)"))
    k: int = Field(3, ge=1, le=1000, description="simgrag: subgraphs (top-k by GSD)")
    kn: int = Field(16, ge=1, le=100000, description="simgrag: candidate entities per node")
    kr: int = Field(16, ge=1, le=100000, description="simgrag: candidate relations per edge")
    kt: int = Field(16, ge=1, le=100000, description="simgrag: candidate types per typed node")
    engine: Literal["cypher", "optimized"] = "cypher"
    distinct: Literal["all", "known", "edges"] = "all"
    examples: Literal["metaqa", "factkg"] = Field("metaqa", description="few-shot examples")
    verify: bool = Field(False, description="simgrag: judge the question as a statement")
    rounds: int = Field(3, ge=1, le=10, description="lf: plan-execute-judge rounds")
    strategy: Literal["onehop", "attentive", "multihop"] = "onehop"
    hig_n: int = Field(3, ge=1, le=1000)
    hig_t: int = Field(30, ge=1, le=10000)
    hig_lambda: float = Field(0.1, ge=-1.0, le=1.0)
    cqr_k: int = Field(10, ge=1, le=10000)
    beam_width: int = Field(3, ge=1, le=100)
    max_path: int = Field(2, ge=1, le=6)
    complete_k: int = Field(20, ge=0, le=10000)
    alpha: float = Field(0.7, ge=0.0, le=1.0)
    chunks: int = Field(10, ge=0, le=1000, description="passages given with the evidence")
    pattern: list[tuple[str, str, str]] | None = Field(None, max_length=64, description=(
        "simgrag: the pattern graph as (head, relation, tail) triples; without it an LLM "
        "writes one"))

    def hig(self) -> Any:
        from kgdb.retrieve.hig import HigSettings

        return HigSettings(strategy=self.strategy, n=self.hig_n, t=self.hig_t,
                           threshold=self.hig_lambda, passages=self.chunks).check()

    def cqr(self) -> Any:
        from kgdb.retrieve.cqr import CqrSettings

        return CqrSettings(extract_k=self.cqr_k, width=self.beam_width,
                           max_length=self.max_path, complete_k=self.complete_k,
                           alpha=self.alpha, chunks=max(self.chunks, 1)).check()


@dataclass(frozen=True)
class EvidenceRow:
    """One fact or passage of the evidence, as flat scalars: ``rank`` orders them (a
    SimGRAG subgraph's facts share its rank), ``source`` says where it came from."""

    rank: int
    head: str
    relation: str
    tail: str
    score: float | None
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "head": self.head, "relation": self.relation,
                "tail": self.tail, "score": None if self.score is None else round(self.score, 6),
                "source": self.source}


PASSAGE = "passage"
"""The ``relation`` of an evidence row that is a passage: ``head`` is its document, ``tail``
its text, ``source`` the chunk id."""


@dataclass
class Answer:
    """What a solver found for one question: the answer (None for retrieval alone), the
    evidence rows, solver details, the statements it ran and timings (ms)."""

    question: str
    solver: str
    answer: str | None = None
    evidence: list[EvidenceRow] = field(default_factory=list)
    statements: list[Statement] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
    verdict: bool | None = None
    found: Any = field(default=None, repr=False)
    """What the answer step reads: SimGRAG's Retrieval or the other solvers' Evidence."""

    def to_json(self, *, statements: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"question": self.question, "solver": self.solver}
        if self.answer is not None:
            out["answer"] = self.answer
        if self.verdict is not None:
            out["verdict"] = self.verdict
        out["evidence"] = [row.to_json() for row in self.evidence]
        out.update(self.detail)
        if statements:
            out["statements"] = [{"cypher": s.text, "params": shown_params(s.params)}
                             for s in self.statements]
        out["timings_ms"] = {k: round(v, 3) for k, v in self.timings_ms.items()}
        return out


def retrieve(store: GraphStore, embedder: Embedder, question: str, options: AskOptions,
             llm: ChatClient | None = None, *, examples: str | None = None) -> Answer:
    """The evidence ``options.solver`` finds for ``question``, without an answer. Only
    SimGRAG without ``options.pattern`` needs ``llm`` (to write the pattern graph); KG-CQR
    uses it, when given, to filter the extracted facts and write the context."""
    if not question.strip():
        raise AskError("the question is empty")
    ran: list[Statement] = []
    view = store.view(observer=ran.append)
    answer = Answer(question, options.solver, statements=ran)
    if options.solver == "simgrag":
        _simgrag(view, embedder, question, options, llm, answer, examples)
    elif options.solver == "lf":
        raise AskError("the logical-form solver plans with an LLM: ask, or run a logical "
                       "form (kgdb lf run)")
    else:
        _evidence(view, embedder, question, options, llm, answer)
    return answer


def ask(store: GraphStore, embedder: Embedder, llm: ChatClient, question: str,
        options: AskOptions, *, examples: str | None = None) -> Answer:
    """``question`` answered by ``options.solver`` from the graph, with its evidence.
    ``examples``: a JSON file of few-shot examples instead of ``options.examples``."""
    if not question.strip():
        raise AskError("the question is empty")
    if options.solver == "vector":
        raise AskError("solver 'vector' only retrieves; choose simgrag, lf, hig or cqr")
    if options.verify and options.solver != "simgrag":
        raise AskError("verify works with the simgrag solver")
    if options.solver == "lf":
        return _ask_lf(store, embedder, llm, question, options)
    answer = retrieve(store, embedder, question, options, llm, examples=examples)
    t = time.perf_counter()
    if options.solver == "simgrag":
        from kgdb.retrieve.simgrag_llm import generate_answer, load_examples

        generated = generate_answer(llm, question, answer.found.subgraphs,
                                    load_examples(examples or options.examples),
                                    verify=options.verify)
        answer.answer, answer.verdict = generated.text, generated.verdict
    else:
        from kgdb.retrieve.context import answer_from

        answer.answer = answer_from(llm, question, answer.found)
    answer.timings_ms["answer"] = _ms(t)
    return answer


def _simgrag(store: GraphStore, embedder: Embedder, question: str, options: AskOptions,
             llm: ChatClient | None, answer: Answer, examples: str | None) -> None:
    from kgdb.dsl.pattern import pattern_from_triples, pattern_triples
    from kgdb.retrieve.simgrag import search

    t = time.perf_counter()
    if options.pattern is not None:
        pattern = pattern_from_triples(list(options.pattern))
    elif llm is None:
        raise AskError("SimGRAG retrieval needs a pattern graph: give one, or configure an "
                       "LLM (OPENAI_BASE_URL) to write it")
    else:
        from kgdb.retrieve.simgrag_llm import load_examples, query_to_pattern

        pattern = query_to_pattern(llm, question, load_examples(examples or options.examples))
        answer.timings_ms["pattern"] = _ms(t)
    result = search(store, embedder, pattern, k=options.k, k_nodes=options.kn,
                    k_relations=options.kr, k_types=options.kt, engine=options.engine,
                    distinct=options.distinct)
    answer.timings_ms.update(result.timings_ms)
    answer.detail.update({"pattern": pattern_triples(pattern), "engine": result.engine,
                          "subgraphs": [s.to_json() for s in result.subgraphs]})
    answer.found = result
    for rank, subgraph in enumerate(result.subgraphs, 1):
        for head, relation, tail in subgraph.verbal_triples():
            answer.evidence.append(EvidenceRow(rank, head, relation, tail, subgraph.gsd,
                                               f"subgraph {rank}"))


def _evidence(store: GraphStore, embedder: Embedder, question: str, options: AskOptions,
              llm: ChatClient | None, answer: Answer) -> None:
    t = time.perf_counter()
    vector = embedder.embed([question])[0]
    answer.timings_ms["embed"] = _ms(t)
    evidence: Evidence
    if options.solver == "hig":
        from kgdb.retrieve.hig import retrieve_hig

        documents, evidence = retrieve_hig(store, vector, options.hig())
        answer.detail["documents"] = [{"id": d, "weight": round(w, 6)} for d, w in documents]
        answer.detail["triples"] = [t.to_json() for t in evidence.triples]
        answer.detail["passages"] = [p.to_json() for p in evidence.passages]
    elif options.solver == "cqr":
        from kgdb.retrieve.cqr import retrieve_cqr

        result = retrieve_cqr(store, embedder, question, vector, options.cqr(), llm)
        evidence = result.evidence
        answer.detail.update({k: v for k, v in result.to_json().items()
                              if k not in ("timings_ms",)})
    else:
        evidence = _nearest_passages(store, vector, options.chunks)
    answer.timings_ms.update(evidence.timings)
    for rank, triple in enumerate(evidence.triples, 1):
        answer.evidence.append(EvidenceRow(rank, triple.head, triple.type, triple.tail,
                                           triple.score, ",".join(triple.chunks) or "graph"))
    for rank, passage in enumerate(evidence.passages, 1):
        answer.evidence.append(EvidenceRow(rank, passage.document, PASSAGE, passage.text,
                                           passage.score, passage.id))
    answer.found = evidence


def _nearest_passages(store: GraphStore, vector: Any, k: int) -> Evidence:
    from kgdb.cypher import documents as cy

    t = time.perf_counter()
    if k < 1:
        return Evidence()
    rows = store.run(cy.nearest_chunk_documents(store.dialect, vector, k)).records()
    ids = [str(r["chunk"]) for r in rows]
    texts = {str(r["id"]): r for r in store.run(cy.chunks_by_id(ids)).records()} if ids else {}
    passages = [Passage(str(r["chunk"]), str(r["document"]), str(texts[str(r["chunk"])]["text"]),
                        float(r["distance"])) for r in rows if str(r["chunk"]) in texts]
    return Evidence(passages=passages, timings={"chunks": _ms(t)})


def _ask_lf(store: GraphStore, embedder: Embedder, llm: ChatClient, question: str,
            options: AskOptions) -> Answer:
    from kgdb.solve.lf_solver import solve_lf

    ran: list[Statement] = []
    t = time.perf_counter()
    solved = solve_lf(question, store.view(observer=ran.append), embedder, llm, options.rounds)
    answer = Answer(question, "lf", solved.answer, statements=ran,
                    timings_ms={"solve": _ms(t)},
                    detail={"answered": solved.answered,
                            "rounds": [r.to_json() for r in solved.rounds]}, found=solved)
    for number, round_ in enumerate(solved.rounds, 1):
        if round_.run is None:
            continue
        for alias, values in round_.run.output_texts().items():
            for value in values:
                answer.evidence.append(EvidenceRow(number, alias, "=", value, None,
                                                   f"round {number}"))
    return answer


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000
