"""One evidence shape for every solver: facts, groups of facts (SimGRAG's subgraphs, KG-CQR's
paths, a logical form's rounds), passages and ranked documents, each with its score and
provenance, plus the statements that ran and the time per phase.

Every solver's ``retrieve`` returns an :class:`Evidence`; the answer step reads it
(:meth:`Evidence.knowledge`), ``kgdb eval retrieval`` ranks documents from it
(:attr:`Evidence.documents`), the CLI renders it (:meth:`Evidence.render`), the service and MCP
send :meth:`Evidence.to_json`, and BI tools read its flat :meth:`Evidence.rows`.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kgdb.link.names import verbalise
from kgdb.llm.client import LlmUsage
from kgdb.measure import Timings
from kgdb.statement import Statement, shown_params, statement_lines

Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]
"""A JSON value."""

ScoreKind = Literal["cosine", "gsd", "pagerank", "rank", "lexical"]
"""What a score means: ``cosine`` similarity (higher is closer), ``gsd`` Graph Semantic
Distance (lower is closer), ``pagerank`` probability mass (higher is more central), ``rank``
a fused rank score (higher is better), ``lexical`` the full-text index's score (higher
matches better; the engine's scorer: :attr:`kgdb.dialects.base.Dialect.LEXICAL_SCORER`)."""

PASSAGE = "passage"
"""The ``relation`` of a flat row that is a passage: ``head`` is its document, ``tail`` its
text, ``source`` the chunk id."""


WIDTH = 80
"""The terminal width :meth:`Evidence.render` keeps to."""
PASSAGE_CHARS = 600
"""A passage longer than this is cut at its last sentence end before it (about eight lines
of 80 columns: ten passages stay readable in a terminal)."""


@dataclass(frozen=True)
class Fact:
    """A fact the solver found: its ends (names and ids), its relation type, its text, its
    score, the chunks it came from and the group (subgraph, path, round) it belongs to."""

    head: str
    relation: str
    tail: str
    head_id: str = ""
    tail_id: str = ""
    text: str = ""
    """The triple text (TTR) where ``kgdb index triples`` wrote one, else the fact verbalised."""
    score: float | None = None
    chunks: tuple[str, ...] = ()
    group: int = 0
    """The 1-based rank of the group it belongs to (0: none)."""

    @property
    def key(self) -> tuple[str, str, str]:
        """``(head id, relation, tail id)``: the stored fact."""
        return (self.head_id or self.head, self.relation, self.tail_id or self.tail)

    @property
    def sentence(self) -> str:
        return self.text or verbalise(self.head, self.relation, self.tail)

    @classmethod
    def from_row(cls, row: Mapping[str, object], score_field: str = "score") -> Fact:
        """From a statement's row ``h, type, t, head, tail, ttr?, chunks?, <score_field>``."""
        head, tail = str(row.get("head") or row["h"]), str(row.get("tail") or row["t"])
        relation = str(row["type"])
        text = row.get("ttr") or verbalise(head, relation, tail)
        chunks = row.get("chunks") or ()
        score = row.get(score_field)
        return cls(head, relation, tail, str(row["h"]), str(row["t"]), str(text),
                   None if score is None else float(str(score)),
                   tuple(str(c) for c in chunks) if isinstance(chunks, list | tuple) else ())

    def to_json(self) -> dict[str, Json]:
        return {"head": self.head, "relation": self.relation, "tail": self.tail,
                "head_id": self.head_id, "tail_id": self.tail_id, "text": self.sentence,
                "score": _rounded(self.score), "chunks": list(self.chunks),
                "group": self.group}


@dataclass(frozen=True)
class Group:
    """Facts that belong together, ranked: a SimGRAG subgraph (score: its GSD, ``nodes``: the
    pattern variable each entity matched), a KG-CQR path, a logical form's round."""

    rank: int
    kind: str
    score: float | None = None
    nodes: tuple[tuple[str, str, str], ...] = ()
    """``(pattern variable, entity id, entity name)`` per matched node."""

    def to_json(self) -> dict[str, Json]:
        return {"rank": self.rank, "kind": self.kind, "score": _rounded(self.score),
                "nodes": {v: {"id": i, "name": n} for v, i, n in self.nodes}}


@dataclass(frozen=True)
class Passage:
    """A chunk of a document; ``score`` is its cosine similarity to the query (None when it
    came with a fact rather than from a search)."""

    id: str
    document: str
    text: str
    score: float | None = None
    source: str | None = None
    """Where a person finds it: the file and its page(s) or section (``libtasn1.pdf p. 12``,
    ``guide.html § Installation``); None for chunks of text, Markdown and JSON documents."""

    def to_json(self) -> dict[str, Json]:
        return {"id": self.id, "document": self.document, "text": self.text,
                "score": _rounded(self.score), "source": self.source}


@dataclass(frozen=True)
class RankedDocument:
    id: str
    score: float | None = None

    def to_json(self) -> dict[str, Json]:
        return {"id": self.id, "score": _rounded(self.score)}


@dataclass(frozen=True)
class EvidenceRow:
    """One fact or passage as flat scalars (what BI tools and ``kgdb.askEvidence`` read):
    ``rank`` orders them (the facts of one subgraph share its rank), ``source`` says where
    it came from."""

    rank: int
    head: str
    relation: str
    tail: str
    score: float | None
    source: str

    def to_json(self) -> dict[str, Json]:
        return {"rank": self.rank, "head": self.head, "relation": self.relation,
                "tail": self.tail, "score": _rounded(self.score), "source": self.source}


@dataclass
class Evidence:
    """What a solver found for one question."""

    question: str
    solver: str
    score_kind: ScoreKind = "cosine"
    """What the facts' scores mean (passages' scores are always cosine similarities)."""
    facts: list[Fact] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    documents: list[RankedDocument] = field(default_factory=list)
    """Documents best first: what ``kgdb eval retrieval`` scores."""
    statements: list[Statement] = field(default_factory=list)
    timings_ms: Timings = field(default_factory=Timings)
    """Milliseconds per phase; phases named ``embed...`` embed text (the question, a
    context), the others search the graph."""
    detail: dict[str, Json] = field(default_factory=dict)
    """Solver-specific, JSON-ready: SimGRAG's pattern, KG-CQR's context, ..."""
    usage: LlmUsage = field(default_factory=LlmUsage)
    """The LLM requests and tokens of this retrieval (and of its answer, when asked)."""

    @property
    def retrieval_ms(self) -> float:
        """Time spent in the graph: every phase but embedding."""
        return sum(v for k, v in self.timings_ms.items() if not k.startswith("embed"))

    def group_facts(self) -> list[list[Fact]]:
        """The facts of each group, in group order."""
        return [[f for f in self.facts if f.group == g.rank] for g in self.groups]

    def rows(self) -> list[EvidenceRow]:
        """Flat rows: facts (grouped ones carry their group's rank and score), then passages."""
        kinds = {g.rank: g for g in self.groups}
        out: list[EvidenceRow] = []
        for i, f in enumerate(self.facts, 1):
            group = kinds.get(f.group)
            if group is not None:
                out.append(EvidenceRow(group.rank, f.head, f.relation, f.tail,
                                       group.score if group.score is not None else f.score,
                                       f"{group.kind} {group.rank}"))
            else:
                out.append(EvidenceRow(i, f.head, f.relation, f.tail, f.score,
                                       ",".join(f.chunks) or "graph"))
        out += [EvidenceRow(i, p.document, PASSAGE, p.text, p.score, p.id)
                for i, p in enumerate(self.passages, 1)]
        return out

    def knowledge(self) -> list[str]:
        """The evidence as lines for a model: one sentence per fact, then the passages."""
        return [f"- {f.sentence}" for f in self.facts] + \
            [f"[{p.document}] {p.text}" for p in self.passages]

    def to_json(self, *, statements: bool = True) -> dict[str, Json]:
        out: dict[str, Json] = {
            "question": self.question, "solver": self.solver, "score_kind": self.score_kind,
            "evidence": [r.to_json() for r in self.rows()],
            "facts": [f.to_json() for f in self.facts],
            "groups": [g.to_json() for g in self.groups],
            "passages": [p.to_json() for p in self.passages],
            "documents": [d.to_json() for d in self.documents],
            **self.detail}
        if statements:
            out["statements"] = [{"cypher": s.text, "params": shown_params(s.params)}
                                 for s in self.statements]
        out["timings_ms"] = {k: round(v, 3) for k, v in self.timings_ms.items()}
        out["llm"] = dict(self.usage.to_json())
        return out

    def render(self, *, cypher: bool = False, max_params: int = 2000,
               max_text: int = PASSAGE_CHARS, width: int = WIDTH) -> list[str]:
        """Lines for a person, none wider than ``width`` (a word longer than that aside):
        groups with their facts and scores, ungrouped facts, passages (each with its rank,
        score, document and source, its text whole or cut at a sentence end before
        ``max_text`` characters, marked "…"; :meth:`to_json` has it whole), documents, the
        timings and, with ``cypher``, the Cypher that ran (re-runnable with its
        parameters)."""
        lines: list[str] = []
        for group, facts in zip(self.groups, self.group_facts(), strict=True):
            score = "" if group.score is None else f"  {self.score_kind.upper()} {group.score:.4f}"
            lines.append(f"{group.kind} [{group.rank}]{score}")
            for f in facts:
                lines += _wrapped(f"({f.head!r}, {f.relation!r}, {f.tail!r})", width, "    ")
        loose = [f for f in self.facts if f.group == 0]
        for f in loose:
            lines += _wrapped(f"- {f.sentence}" + ("" if f.score is None else
                                                   f"  ({f.score:.4f})"), width, "", "  ")
        if self.passages:
            if lines:
                lines.append("")
            lines.append(f"passages ({len(self.passages)}):")
        for i, p in enumerate(self.passages, 1):
            head = f"{i:>2}. " + ("" if p.score is None else f"{p.score:.4f}  ") + p.document
            source = getattr(p, "source", None)  # the readers' field (file, page, section)
            lines += _wrapped(head + (f" \u00b7 {source}" if source else ""), width, "", "      ")
            lines += _wrapped(cut_text(p.text, max_text), width, "      ")
        if self.documents:
            shown = ", ".join(d.id + ("" if d.score is None else f" ({d.score:.3f})")
                              for d in self.documents[:10])
            more = f" and {len(self.documents) - 10} more" if len(self.documents) > 10 else ""
            if self.passages:
                lines.append("")
            lines += _wrapped(f"documents: {shown}{more}", width, "", "  ")
        if not lines:
            lines.append("Nothing was found.")
        if cypher and self.statements:
            lines += statement_lines(self.statements, max_params=max_params)
        if self.timings_ms:
            lines += _wrapped("time: " + ", ".join(f"{k} {v:.1f} ms"
                                                   for k, v in self.timings_ms.items()),
                              width, "", "  ")
        if self.usage.requests:
            lines.append(f"LLM: {self.usage.describe()}")
        return lines


_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*(?=\s)")
"""A sentence end for cutting a passage short: punctuation, closing quotes or brackets,
then white space. Splitting at an abbreviation ("Dr. Smith") only ends the shown part
early; the whole text is in ``--json``."""


def cut_text(text: str, limit: int = PASSAGE_CHARS) -> str:
    """``text`` with its white space runs made single; when longer than ``limit``, cut after
    the last sentence end within it (else the last whole word) and marked with "…"."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    ends = [m.end() for m in _SENTENCE_END.finditer(flat, 0, limit + 1)]
    cut = ends[-1] if ends and ends[-1] >= limit // 4 else flat.rfind(" ", 0, limit + 1)
    if cut <= 0:
        cut = limit
    return flat[:cut].rstrip() + " \u2026"


def _wrapped(text: str, width: int, indent: str, subsequent: str | None = None) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=indent,
                         subsequent_indent=indent if subsequent is None else subsequent,
                         break_long_words=False, break_on_hyphens=False) or [indent.rstrip()]


def documents_of(passages: Iterable[Passage]) -> list[RankedDocument]:
    """Each passage's document at its best passage (passages come best first)."""
    best: dict[str, float | None] = {}
    for p in passages:
        best.setdefault(p.document, p.score)
    return [RankedDocument(d, s) for d, s in best.items()]


def unique_facts(facts: Sequence[Fact]) -> list[Fact]:
    """``facts`` without repeats (the first of each stored fact), in order."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for f in facts:
        if f.key not in seen:
            seen.add(f.key)
            out.append(f)
    return out


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
