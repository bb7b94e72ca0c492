"""KG-CQR: contextual query retrieval over triple text representations (paper §3.2–3.3;
``kgdb ask --solver cqr``, mode ``cqr`` of ``kgdb eval retrieval``).

1. **Subgraph extraction** (equations 6–7): the ``extract_k`` facts whose TTR (``kgdb index
   triples``) is most similar to the question, through the relationship vector indexes;
   with an LLM, the paper's filter prompt (Figure 7) keeps the relevant ones.
2. **Subgraph completion** (Algorithm 1): beam-search paths between the extracted facts'
   entities, scored by the mean cosine of their TTRs to the question, run in the database
   one statement per expansion level (:mod:`kgdb.retrieve.beam`); up to ``complete_k`` new
   facts of the best paths are added.
3. **Contextual generation** (equation 8): with an LLM, the paper's summary prompt (Figure 8)
   over the completed subgraph; without one, the verbalised subgraph itself (its TTRs, in
   order).
4. **Retrieval** (equation 9): the fused query vector ``alpha * v_q + (1 - alpha) *
   v_context`` (alpha = 0.7, the paper's best), normalised, against the chunks' vector index.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgdb.cypher import documents as cy
from kgdb.cypher import triples as cy_triples
from kgdb.documents.ttr import indexed_types, verbalise
from kgdb.embed import Embedder
from kgdb.engine import GraphStore
from kgdb.errors import KgdbError
from kgdb.llm import ChatClient
from kgdb.llm.client import OutputParseError
from kgdb.retrieve.context import Evidence, Passage, Triple, unique

CQR_EXTRACT_K = 10
CQR_WIDTH = 3
"""Beam width (the paper's Appendix A.3)."""
CQR_MAX_LENGTH = 2
"""Longest completion path, in facts."""
CQR_COMPLETE_K = 20
"""New facts completion may add (the paper's K)."""
CQR_ALPHA = 0.7
CQR_CHUNKS = 10
CHUNKS_READ = 100
"""Chunks read per question when ranking documents (enough beyond recall@10)."""

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


class CqrError(KgdbError):
    """KG-CQR cannot run (bad settings, no triple texts)."""


@dataclass(frozen=True)
class CqrSettings:
    extract_k: int = CQR_EXTRACT_K
    width: int = CQR_WIDTH
    max_length: int = CQR_MAX_LENGTH
    complete_k: int = CQR_COMPLETE_K
    alpha: float = CQR_ALPHA
    chunks: int = CQR_CHUNKS
    direction: str = "both"

    def check(self) -> CqrSettings:
        if min(self.extract_k, self.width, self.max_length, self.chunks) < 1 or \
                self.complete_k < 0:
            raise CqrError("KG-CQR's extract k, beam width, path length and chunks must be at "
                           "least 1, complete k at least 0")
        if not 0.0 <= self.alpha <= 1.0:
            raise CqrError(f"alpha must be between 0 and 1, not {self.alpha}")
        return self


@dataclass
class CqrResult:
    extracted: list[Triple] = field(default_factory=list)
    kept: list[Triple] = field(default_factory=list)
    """The extracted facts the LLM filter kept (all of them without an LLM)."""
    added: list[Triple] = field(default_factory=list)
    context: str = ""
    fused: list[float] = field(default_factory=list)
    evidence: Evidence = field(default_factory=Evidence)

    def to_json(self) -> dict[str, Any]:
        return {"extracted": [t.to_json() for t in self.extracted],
                "kept": len(self.kept), "added": [t.to_json() for t in self.added],
                "context": self.context,
                "passages": [p.to_json() for p in self.evidence.passages],
                "timings_ms": {k: round(v, 3) for k, v in self.evidence.timings.items()}}


def parse_indices(text: str, count: int) -> list[int]:
    """The filter's reply: passage indices (0-based as listed) in a JSON list or object, or
    plain numbers; an index out of range is an error the model is shown."""
    body = re.sub(r"^```(?:json)?|```$", "", text.strip(), flags=re.MULTILINE).strip()
    try:
        value: Any = json.loads(body)
    except json.JSONDecodeError:
        if not re.fullmatch(r"[\d\s,;\[\]]*", body):
            raise OutputParseError("reply with a JSON list of passage indices, e.g. [0, 2]"
                                   ) from None
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


def llm_filter(client: ChatClient, question: str, triples: Sequence[Triple]) -> list[Triple]:
    """The extracted facts the model judges relevant (equation 7)."""
    if not triples:
        return []
    text = "\n".join(f"{i}. {t.text}" for i, t in enumerate(triples))
    keep = client.complete_parsed(
        [{"role": "user", "content": FILTER_PROMPT.format(text=text, question=question)}],
        lambda reply: parse_indices(reply, len(triples)), what="list of relevant passages")
    return [triples[i] for i in keep]


def generate_context(client: ChatClient | None, triples: Sequence[Triple]) -> str:
    """KG-CQR(q): the model's summary of the completed subgraph (equation 8), or without a
    model the subgraph verbalised, one TTR per sentence."""
    if not triples:
        return ""
    if client is None:
        return ". ".join(t.text for t in triples) + "."
    listed = "\n".join(f"({t.head}; {t.type}; {t.tail}): {t.text}" for t in triples)
    return client.complete([{"role": "user",
                             "content": CONTEXT_PROMPT.format(triplets=listed)}]).strip()


def fuse(vq: Sequence[float], vc: Sequence[float] | None, alpha: float) -> list[float]:
    """Equation 9, normalised (the chunk index is L2 over unit vectors)."""
    q = np.asarray(vq, dtype=np.float64)
    v = q if vc is None else alpha * q + (1.0 - alpha) * np.asarray(vc, dtype=np.float64)
    norm = float(np.linalg.norm(v))
    return [float(x) for x in (v / norm if norm else q)]


def retrieve_cqr(store: GraphStore, embedder: Embedder, question: str,
                 vector: Sequence[float], settings: CqrSettings,
                 client: ChatClient | None = None, types: Sequence[str] | None = None
                 ) -> CqrResult:
    """Extraction, completion, context, fused chunk retrieval (see the module docstring).
    ``types``: the indexed relation types, when the caller knows them already."""
    from kgdb.retrieve.beam import complete_subgraph

    settings.check()
    timings: dict[str, float] = {}
    t = time.perf_counter()
    rel_types = indexed_types(store) if types is None else list(types)
    if not rel_types:
        raise CqrError(f"no fact in {store.address} has a triple text representation: run "
                       "kgdb index triples first")
    result = CqrResult(extracted=nearest_facts(store, vector, settings.extract_k, rel_types))
    timings["extract"] = _lap(t)
    t = time.perf_counter()
    result.kept = (llm_filter(client, question, result.extracted) if client is not None
                   else list(result.extracted))
    timings["filter"] = _lap(t)
    t = time.perf_counter()
    completed = complete_subgraph(store, vector, [x.key for x in result.kept],
                                  width=settings.width, max_length=settings.max_length,
                                  top_k=settings.complete_k, direction=settings.direction)
    for a in completed.added:
        names = dict(zip(a.path.entities, a.path.names, strict=True))
        head, tail = names.get(a.head, a.head), names.get(a.tail, a.tail)
        result.added.append(Triple(a.head, a.type, a.tail, head, tail,
                                   a.ttr or verbalise(head, a.type, tail), a.cosine))
    subgraph = unique([*result.kept, *result.added])
    timings["complete"] = _lap(t)
    t = time.perf_counter()
    result.context = generate_context(client, subgraph)
    timings["context"] = _lap(t)
    t = time.perf_counter()
    vc = embedder.embed([result.context])[0] if result.context else None
    result.fused = fuse(vector, vc, settings.alpha)
    timings["embed_context"] = _lap(t)
    t = time.perf_counter()
    rows = store.run(cy.nearest_chunk_documents(store.dialect, result.fused,
                                                settings.chunks)).records()
    ids = [str(r["chunk"]) for r in rows]
    texts = {str(r["id"]): r for r in store.run(cy.chunks_by_id(ids)).records()} if ids else {}
    result.evidence = Evidence(
        triples=subgraph,
        passages=[Passage(str(r["chunk"]), str(r["document"]),
                          str(texts[str(r["chunk"])]["text"]), float(r["distance"]))
                  for r in rows if str(r["chunk"]) in texts],
        timings={**timings, "chunks": _lap(t)})
    return result


def nearest_facts(store: GraphStore, vector: Sequence[float], k: int,
                  types: Sequence[str] | None = None) -> list[Triple]:
    """Equation 6: the ``k`` facts whose TTR is most similar to ``vector`` over every indexed
    type (or ``types``), by exact cosine (the score), ties by head id, type, tail id."""
    rel_types = indexed_types(store) if types is None else list(types)
    if not rel_types or k < 1:
        return []
    rows = store.run(cy_triples.nearest_facts(store.dialect, rel_types, vector, k)).records()
    found = {t.key: t for t in reversed([Triple.from_row(r, "cosine") for r in rows])}
    return sorted(found.values(), key=lambda t: (-t.score, t.key))[:k]


def _lap(start: float) -> float:
    return (time.perf_counter() - start) * 1000
