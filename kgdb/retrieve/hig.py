"""KG-Retriever's retrieval on its Hierarchical Index Graph (paper §3.2.2; ``kgdb ask --solver
hig``).

1. **Document level.** The top-N documents by cosine to the question (the seeds, over
   ``Document.embedding``, which ``kgdb index knn`` writes) and the documents the document
   layer's ``SIMILAR`` edges reach from them: their neighbours (``onehop``, ``attentive``) or
   neighbours and neighbours' neighbours (``multihop``). Each candidate document has a weight
   w: 1 for a seed; for a neighbour 1 (``onehop``), the edge's similarity (``attentive``) or
   the product of the similarities along the hops (``multihop``); a document reached several
   ways keeps its largest w.
2. **KG level.** The entities the candidate documents' chunks support (the mutual index)
   whose ``w * cos(entity, question) > lambda``; their facts (any relation but the knowledge
   layer's structural ones), at most T, best entity score first (ties by head id, relation,
   tail id), each with the chunks it came from.

Defaults are the paper's MuSiQue setting: N = 3, T = 30, lambda = 0.1 (K = 3 is the layer's).
One statement per level; the answer step gives the LLM the facts and the question.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from kgdb.cypher import documents as cy
from kgdb.engine import GraphStore
from kgdb.errors import KgdbError, did_you_mean
from kgdb.retrieve.context import Evidence, Passage, Triple

STRATEGIES = ("onehop", "attentive", "multihop")
HIG_N = 3
HIG_T = 30
HIG_LAMBDA = 0.1


class HigError(KgdbError):
    """KG-Retriever's retrieval cannot run (bad settings, no document layer)."""


@dataclass(frozen=True)
class HigSettings:
    strategy: str = "onehop"
    n: int = HIG_N
    t: int = HIG_T
    threshold: float = HIG_LAMBDA
    passages: int = 5
    """At most this many chunks the facts came from go with them (0: none)."""

    def check(self) -> HigSettings:
        if self.strategy not in STRATEGIES:
            raise HigError(f"unknown KG-Retriever strategy {self.strategy!r}"
                           f"{did_you_mean(self.strategy, STRATEGIES)}; choose from "
                           f"{', '.join(STRATEGIES)}")
        if self.n < 1 or self.t < 1 or self.passages < 0:
            raise HigError(f"N and T must be at least 1 and passages at least 0 (N = {self.n}, "
                           f"T = {self.t}, passages = {self.passages})")
        return self


def candidate_documents(store: GraphStore, vector: Sequence[float], settings: HigSettings
                        ) -> list[tuple[str, float]]:
    """(document id, weight w), seeds first (most similar first), then the others by w."""
    hops = 2 if settings.strategy == "multihop" else 1
    rows = store.run(cy.collaborating_documents(store.dialect, vector, settings.n, hops)
                     ).records()
    seeds: dict[str, float] = {}
    weights: dict[str, float] = {}

    def admit(doc: object, w: float) -> None:
        if doc is not None:
            weights[str(doc)] = max(weights.get(str(doc), 0.0), w)

    for r in rows:
        seeds[str(r["seed"])] = float(r["seed_sim"])
        w1 = 1.0 if settings.strategy == "onehop" else float(r["w1"] or 0.0)
        admit(r["m1"], w1)
        if hops == 2:
            admit(r["m2"], w1 * float(r["w2"] or 0.0))
    ordered = [(d, 1.0) for d in sorted(seeds, key=lambda d: (-seeds[d], d))]
    ordered += sorted(((d, w) for d, w in weights.items() if d not in seeds),
                      key=lambda dw: (-dw[1], dw[0]))
    return ordered


def retrieve_hig(store: GraphStore, vector: Sequence[float], settings: HigSettings
                 ) -> tuple[list[tuple[str, float]], Evidence]:
    """The candidate documents with their weights, and the evidence: at most T facts and the
    chunks they came from."""
    settings.check()
    t0 = time.perf_counter()
    documents = candidate_documents(store, vector, settings)
    t1 = time.perf_counter()
    rows = store.run(cy.entity_level_triples(store.dialect, documents, vector,
                                             settings.threshold, settings.t)).records()
    triples = [Triple.from_row(r) for r in rows]
    t2 = time.perf_counter()
    evidence = Evidence(triples=triples, timings={"documents": (t1 - t0) * 1000,
                                                  "triples": (t2 - t1) * 1000})
    if settings.passages:
        ids = list(dict.fromkeys(c for t in triples for c in t.chunks))[:settings.passages]
        if ids:
            found = {str(r["id"]): r for r in store.run(cy.chunks_by_id(ids)).records()}
            evidence.passages = [Passage(i, str(found[i]["document"]), str(found[i]["text"]))
                                 for i in ids if i in found]
        evidence.timings["chunks"] = (time.perf_counter() - t2) * 1000
    return documents, evidence
