"""Evidence for the LLM: facts and chunks that retrieval found, verbalised, and the answer
the model writes from them (``kgdb ask --solver hig`` and ``--solver cqr``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kgdb.documents.ttr import verbalise
from kgdb.llm import ChatClient


@dataclass(frozen=True)
class Triple:
    """A fact that retrieval returned: its ends' ids and names, its relation type, its text
    (the TTR where ``kgdb index triples`` wrote one), a score, and the chunks it came from."""

    head_id: str
    type: str
    tail_id: str
    head: str
    tail: str
    text: str
    score: float
    chunks: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.head_id, self.type, self.tail_id)

    @classmethod
    def from_row(cls, row: dict[str, Any], score_field: str = "score") -> Triple:
        head, tail = str(row["head"] or row["h"]), str(row["tail"] or row["t"])
        text = row.get("ttr") or verbalise(head, str(row["type"]), tail)
        return cls(str(row["h"]), str(row["type"]), str(row["t"]), head, tail, str(text),
                   float(row[score_field]), tuple(str(c) for c in (row.get("chunks") or ())))

    def to_json(self) -> dict[str, Any]:
        return {"head": self.head, "relation": self.type, "tail": self.tail, "text": self.text,
                "score": round(self.score, 6), "head_id": self.head_id,
                "tail_id": self.tail_id, "chunks": list(self.chunks)}


@dataclass(frozen=True)
class Passage:
    id: str
    document: str
    text: str
    score: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "document": self.document, "text": self.text,
                **({"score": round(self.score, 6)} if self.score is not None else {})}


@dataclass
class Evidence:
    """What a solver hands the LLM, with timings (ms) per phase."""

    triples: list[Triple] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [f"- {t.text}" for t in self.triples]
        out += [f"[{p.document}] {p.text}" for p in self.passages]
        return out


ANSWER_PROMPT = """\
Answer the question from the knowledge below: facts from a knowledge graph and passages from \
documents. Use only this knowledge; if it does not contain the answer, say that it does not. \
Answer in one short sentence or a list of names, without explanation.

Knowledge:
{knowledge}

Question: {question}
Answer:"""


def answer_from(client: ChatClient, question: str, evidence: Evidence) -> str:
    """The model's answer to ``question`` from ``evidence`` (KG-Retriever's and KG-CQR's
    generation step: the retrieved knowledge combined with the original question)."""
    knowledge = "\n".join(evidence.lines()) or "(nothing was retrieved)"
    prompt = ANSWER_PROMPT.format(knowledge=knowledge, question=question.strip())
    return client.complete([{"role": "user", "content": prompt}]).strip()


def unique(triples: Sequence[Triple]) -> list[Triple]:
    """``triples`` without repeats (the first of each fact), in order."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for t in triples:
        if t.key not in seen:
            seen.add(t.key)
            out.append(t)
    return out
