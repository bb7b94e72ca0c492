"""KG-CQR (paper sections 3.2-3.3): contextual query retrieval over triple text
representations, the ``triple-context`` solver.

1. **Subgraph extraction** (equations 6–7): the ``nearest_facts`` facts whose TTR (``kgdb index
   triples``) is most similar to the question, through the relationship vector indexes;
   with an LLM, the paper's filter prompt (Figure 7) keeps the relevant ones.
2. **Subgraph completion** (Algorithm 1): beam-search paths between the extracted facts'
   entities, scored by the mean cosine of their TTRs to the question, run in the database
   one statement per expansion level (:mod:`kgdb.retrieve.beam`); up to ``added_facts`` new
   facts of the best paths are added.
3. **Contextual generation** (equation 8): with an LLM, the paper's summary prompt (Figure 8)
   over the completed subgraph; without one, the verbalised subgraph itself (its TTRs, in
   order).
4. **Retrieval** (equation 9): the fused query vector ``alpha * v_q + (1 - alpha) *
   v_context`` (alpha = 0.7, the paper's best), normalised, against the chunks' vector index
   (``ranking=vector``, the paper's). By default (``ranking=scores``) the chunks nearest the
   question and those nearest the fused vector are ranked by ``cos(q, chunk) +
   context_weight * cos(fused, chunk)``, both exact: without an LLM the context is the
   subgraph's triple texts, and ranking by the fused vector alone lost 4.7 points of
   recall@5 to plain vector search on MuSiQue-100 (the README's table).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import Field

from kgdb.cypher import documents as cy_documents
from kgdb.cypher import triples as cy_triples
from kgdb.embed import Embedder
from kgdb.engine import GraphStore
from kgdb.errors import KgdbError
from kgdb.link.names import verbalise
from kgdb.llm import ChatClient
from kgdb.llm.client import OutputParseError
from kgdb.llm.replies import clean_reply
from kgdb.retrieve.evidence import Evidence, Fact, Json, Passage, documents_of, unique_facts
from kgdb.retrieve.passages import nearest_passages
from kgdb.retrieve.solver import PassageOptions, Solver, SolverOptions
from kgdb.stored.triples import indexed_types

FILTER_PROMPT = """\
You are a grader assessing relevance of a list of retrieved passages to a user question. \
The goal is to filter out erroneous retrievals.

Return only the passage index whether the passage is relevant to the question. Provide the \
output as a JSON with passage index seperated by a comma and no premable or explanation.

Here is the list of retrieved text: {text}

Here is the user question: {question}"""
"""The paper's Figure 7, as printed."""

CONTEXT_PROMPT = """\
You are a helpful assistant responsible for generating a comprehensive summary of the data \
provided below. Given the list of triplets that may relation with each other. Please write a \
Concise summary of triplets that aim to provide a contextual information. The output just \
generate a concise summary without any explanation.

Please note that if the provided triplets are contradictory, please resolve the \
contradictions and provide a single, coherent summary (no need Here is part)

Input Triplets: {triplets}"""
"""The paper's Figure 8, as printed."""


class TripleContextError(KgdbError):
    """KG-CQR cannot run (bad settings, no triple texts)."""


class TripleContextOptions(PassageOptions, SolverOptions):
    solver: Literal["triple-context"] = "triple-context"
    nearest_facts: int = Field(10, ge=1, le=10000, description=(
        "triple-context: facts extracted by their triple text's similarity to the question"))
    beam_width: int = Field(3, ge=1, le=100, description=(
        "triple-context: paths kept per expanded path (the paper's beam width)"))
    max_path: int = Field(2, ge=1, le=6, description=(
        "triple-context: longest completion path, in facts"))
    added_facts: int = Field(20, ge=0, le=10000, description=(
        "triple-context: new facts completion may add (the paper's K)"))
    alpha: float = Field(0.7, ge=0.0, le=1.0, description=(
        "triple-context: weight of the question in the fused query vector"))
    direction: Literal["both", "out"] = Field("both", description=(
        "triple-context: both: a path may follow a fact either way; out: head to tail only"))
    ranking: Literal["scores", "vector"] = Field("scores", description=(
        "triple-context: scores: the question's cosine plus context_weight times the fused "
        "vector's; vector: the fused vector alone (the paper's equation 9)"))
    context_weight: float = Field(0.1, ge=0.0, le=10.0, description=(
        "triple-context: weight of the fused vector's cosine (ranking=scores)"))


class TripleContextSolver(Solver[TripleContextOptions]):
    """KG-CQR (Bui et al., "KG-CQR: Leveraging Structured Relation Representations in
    Knowledge Graphs for Contextual Query Retrieval"): facts by triple text, beam completion,
    the subgraph as the query's context, chunks by the fused query vector."""

    name = "triple-context"
    aliases = ("cqr", "kg-cqr")
    summary = ("KG-CQR: facts by triple text, beam-search completion, chunks by the question "
               "fused with that context")
    options = TripleContextOptions
    indexes = ("chunks", "triples")
    ranks_by_passages = True

    def retrieve(self, store: GraphStore, embedder: Embedder, question: str,
                 options: TripleContextOptions, llm: ChatClient | None = None) -> Evidence:
        evidence, view, vector = self.start(store, embedder, question)
        result = retrieve_triple_context(view, embedder, question, vector, options, llm, evidence=evidence)
        evidence.detail.update(result.to_json())
        return evidence


@dataclass
class TripleContextResult:
    extracted: list[Fact] = field(default_factory=list)
    kept: list[Fact] = field(default_factory=list)
    """The extracted facts the LLM filter kept (all of them without an LLM)."""
    added: list[Fact] = field(default_factory=list)
    context: str = ""

    def to_json(self) -> dict[str, Json]:
        return {"extracted": [t.to_json() for t in self.extracted],
                "kept": len(self.kept), "added": [t.to_json() for t in self.added],
                "context": self.context}


def parse_indices(text: str, count: int) -> list[int]:
    """The filter's reply: passage indices (0-based as listed) in a JSON list or object, or
    plain numbers; an index out of range is an error the model is shown."""
    body = clean_reply(text)
    try:
        value: Any = json.loads(body)
    except json.JSONDecodeError as exc:
        if not re.fullmatch(r"[\d\s,;\[\]]*", body):
            raise OutputParseError("reply with a JSON list of passage indices, e.g. [0, 2]"
                                   ) from exc
        value = [int(x) for x in re.findall(r"\d+", body)]
    if isinstance(value, dict):
        value = next((v for v in value.values() if isinstance(v, (list, str, int))), None)
    if isinstance(value, str):
        value = [int(x) for x in re.findall(r"-?\d+", value)]
    if isinstance(value, int):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, int) or
                                              (isinstance(v, str) and v.strip().isdigit())
                                              for v in value):
        raise OutputParseError("reply with a JSON list of passage indices, e.g. [0, 2]")
    out = [int(v) for v in value]
    bad = [i for i in out if not 0 <= i < count]
    if bad:
        raise OutputParseError(f"index {bad[0]} is not one of the listed passages "
                               f"(0 to {count - 1})")
    return sorted(set(out))


def llm_filter(client: ChatClient, question: str, triples: Sequence[Fact]) -> list[Fact]:
    """The extracted facts the model judges relevant (equation 7)."""
    if not triples:
        return []
    text = "\n".join(f"{i}. {t.text}" for i, t in enumerate(triples))
    keep = client.complete_parsed(
        [{"role": "user", "content": FILTER_PROMPT.format(text=text, question=question)}],
        lambda reply: parse_indices(reply, len(triples)), what="list of relevant passages")
    return [triples[i] for i in keep]


def generate_context(client: ChatClient | None, triples: Sequence[Fact]) -> str:
    """KG-CQR(q): the model's summary of the completed subgraph (equation 8), or without a
    model the subgraph verbalised, one TTR per sentence."""
    if not triples:
        return ""
    if client is None:
        return ". ".join(t.text for t in triples) + "."
    listed = "\n".join(f"({t.head}; {t.relation}; {t.tail}): {t.text}" for t in triples)
    return client.complete([{"role": "user",
                             "content": CONTEXT_PROMPT.format(triplets=listed)}]).strip()


def fuse(vq: Sequence[float], vc: Sequence[float] | None, alpha: float) -> list[float]:
    """Equation 9, normalised (the chunk index is L2 over unit vectors)."""
    q = np.asarray(vq, dtype=np.float64)
    v = q if vc is None else alpha * q + (1.0 - alpha) * np.asarray(vc, dtype=np.float64)
    norm = float(np.linalg.norm(v))
    return [float(x) for x in (v / norm if norm else q)]


def retrieve_triple_context(store: GraphStore, embedder: Embedder, question: str,
                            vector: Sequence[float], options: TripleContextOptions,
                            client: ChatClient | None = None,
                            types: Sequence[str] | None = None, *,
                            evidence: Evidence) -> TripleContextResult:
    """Extraction, completion, context, fused chunk retrieval (see the module docstring), into
    ``evidence`` (facts, passages, documents, timings). ``types``: the indexed relation
    types, when the caller knows them already."""
    from kgdb.retrieve.beam import complete_subgraph

    timings = evidence.timings_ms
    with timings.phase("extract"):
        rel_types = indexed_types(store) if types is None else list(types)
        if not rel_types:
            raise TripleContextError(f"no fact in {store.address} has a triple text representation: run "
                           "kgdb index triples first")
        result = TripleContextResult(extracted=nearest_facts(store, vector, options.nearest_facts,
                                                   rel_types))
    with timings.phase("filter"):
        result.kept = (llm_filter(client, question, result.extracted) if client is not None
                       else list(result.extracted))
    with timings.phase("complete"):
        completed = complete_subgraph(store, vector, [x.key for x in result.kept],
                                      width=options.beam_width, max_length=options.max_path,
                                      top_k=options.added_facts, direction=options.direction)
        for a in completed.added:
            names = dict(zip(a.path.entities, a.path.names, strict=True))
            head, tail = names.get(a.head, a.head), names.get(a.tail, a.tail)
            result.added.append(Fact(head, a.type, tail, a.head, a.tail,
                                     a.ttr or verbalise(head, a.type, tail), a.cosine))
        subgraph = unique_facts([*result.kept, *result.added])
    with timings.phase("context"):
        result.context = generate_context(client, subgraph)
    with timings.phase("embed_context"):
        vc = embedder.embed([result.context])[0] if result.context else None
        fused = fuse(vector, vc, options.alpha)
    with timings.phase("chunks"):
        evidence.passages = nearest_passages(store, fused, options.passages) \
            if options.ranking == "vector" or vc is None else \
            fused_ranking(store, vector, fused, options.passages, options.context_weight)
    evidence.facts = subgraph
    evidence.documents = documents_of(evidence.passages)
    return result


def fused_ranking(store: GraphStore, vector: Sequence[float], fused: Sequence[float], k: int,
                  weight: float) -> list[Passage]:
    """The ``k`` best of the chunks nearest ``vector`` and nearest ``fused`` by ``cos(vector,
    chunk) + weight * cos(fused, chunk)`` (exact cosines), ties by chunk id."""
    ids = list(dict.fromkeys(p.id for v in (vector, fused) for p in nearest_passages(store, v, k)))
    if not ids:
        return []
    rows = store.run(cy_documents.chunks_scored(store.dialect, ids, vector, fused)).records()
    scored = [Passage(str(r["id"]), str(r["document"]), str(r["text"] or ""),
                      float(r["question"]) + weight * float(r["context"]), r.get("source"))
              for r in rows]
    return sorted(scored, key=lambda p: (-(p.score or 0.0), p.id))[:k]


def nearest_facts(store: GraphStore, vector: Sequence[float], k: int,
                  types: Sequence[str] | None = None) -> list[Fact]:
    """Equation 6: the ``k`` facts whose TTR is most similar to ``vector`` over every indexed
    type (or ``types``), by exact cosine (the score), ties by head id, type, tail id."""
    rel_types = indexed_types(store) if types is None else list(types)
    if not rel_types or k < 1:
        return []
    rows = store.run(cy_triples.nearest_facts(store.dialect, rel_types, vector, k)).records()
    found = {t.key: t for t in reversed([Fact.from_row(r, "cosine") for r in rows])}
    return sorted(found.values(), key=lambda t: (-(t.score or 0.0), t.key))[:k]
