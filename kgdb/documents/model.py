"""The values that flow through the document pipeline: documents, chunks, what extraction
finds in a chunk, and the interface every extractor (``llm``, ``gazetteer``) implements.

Readers make :class:`Document` s, the chunker makes :class:`Chunk` s, an :class:`Extractor`
turns chunks into :class:`Extraction` s, alignment fuses them, and the writer stores the
result with its mutual index (``(instance)-[:supporting_chunks]->(:Chunk)``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Section:
    """One structural unit of a document: a paragraph, under its heading path."""

    text: str
    headings: tuple[str, ...] = ()
    page: int | None = None
    """The 1-based page it is on (PDF); None where a document has no pages."""


@dataclass(frozen=True)
class Document:
    id: str
    """Stable identity (see the README's identity rules); ``articleID`` of its chunk ids."""
    title: str
    sections: tuple[Section, ...]
    source: str
    """Where it came from: a file path, or ``corpus.json:17`` for a record."""
    meta: dict[str, Any] = field(default_factory=dict)
    cite: str | None = None
    """The name its passages cite (``libtasn1.pdf``): set by the PDF, HTML, DOCX and ODT
    readers, whose chunks then carry a :attr:`Chunk.source` (``libtasn1.pdf p. 12``); None
    for text, Markdown and JSON documents, whose chunks are stored as they always were."""


@dataclass(frozen=True)
class Chunk:
    id: str
    """``articleID#paraCode#idInPara`` (KAG 2.2.1): adjacent chunks have adjacent ids."""
    document_id: str
    position: int
    """0-based order of the chunk in its document."""
    text: str
    headings: tuple[str, ...] = ()
    pages: tuple[int, ...] = ()
    """The pages its text is on, in order (PDF)."""
    source: str | None = None
    """Where a person finds it: the file and its page(s) or section (``libtasn1.pdf p. 12``,
    ``guide.html § Installation``); None for documents without :attr:`Document.cite`."""


@dataclass(frozen=True)
class ExtractedEntity:
    name: str
    type: str | None = None
    """The schema's entity type when one applies (``Person``), else an open type or None."""
    description: str | None = None
    semantic_type: str | None = None
    """KAG's semantic type / concept (``film director``): becomes ``belongTo`` a Concept."""
    id: str | None = None
    """Set when the entity is an existing graph entity (the gazetteer links, it never creates)."""


@dataclass(frozen=True)
class ExtractedRelation:
    head: str
    relation: str
    tail: str
    """``head`` and ``tail`` are names of entities of the same :class:`Extraction`."""


@dataclass(frozen=True)
class ExtractedEvent:
    name: str
    type: str | None = None
    arguments: tuple[tuple[str, str], ...] = ()
    """``(role, entity name)`` pairs."""
    description: str | None = None


@dataclass(frozen=True)
class Extraction:
    chunk_id: str
    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()
    events: tuple[ExtractedEvent, ...] = ()


@dataclass
class ExtractionStats:
    """What extraction cost: shown with the load's progress and in ``--json``."""

    requests: int = 0
    retries: int = 0
    cached: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    failed_chunks: int = 0

    def to_json(self) -> dict[str, int]:
        return dict(vars(self))


class Extractor(Protocol):
    """Turns chunks into extractions. Implementations: ``llm``, ``gazetteer`` (and ``none``)."""

    name: str
    stats: ExtractionStats

    def extract(self, chunks: Sequence[Chunk]) -> Iterator[Extraction]:
        """One :class:`Extraction` per chunk, in any order; may be called many times."""
        ...
