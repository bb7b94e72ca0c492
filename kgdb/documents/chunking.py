"""Structure-aware chunking (KAG 2.2.1): sections kept whole within a size, ids that keep order.

Consecutive paragraphs under the same heading path are joined while the chunk stays within
``size`` characters; a paragraph longer than ``size`` is split at sentence ends (and a
sentence longer than ``size`` at spaces, or hard at ``size``). A chunk never spans two
heading paths. Chunk ids are ``articleID#paraCode#idInPara``: the document id, the index of
the chunk's first paragraph (4 digits) and the chunk's index within it (3 digits), so the ids
of adjacent chunks sort adjacently.

A chunk of a PDF never spans two pages either: it cites one page. The chunks of a document that has a
:attr:`~kgdb.documents.model.Document.cite` name carry their source: the name and the page(s)
(``libtasn1.pdf p. 12``, ``pp. 12–13``) or the section (``guide.html § Installation``).
"""

from __future__ import annotations

import re

from kgdb.documents.model import Chunk, Document, Section
from kgdb.errors import LoadError

DEFAULT_SIZE = 1200
MIN_SIZE = 100
MAX_SIZE = 100_000
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def chunk_id(document_id: str, paragraph: int, index: int) -> str:
    return f"{document_id}#{paragraph:04d}#{index:03d}"


def _split_long(text: str, size: int) -> list[str]:
    """Pieces of at most ``size`` characters, cut at sentence ends, then spaces, then hard."""
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(text):
        while len(sentence) > size:
            cut = sentence.rfind(" ", 0, size + 1)
            cut = cut if cut > size // 2 else size
            head, sentence = sentence[:cut].rstrip(), sentence[cut:].lstrip()
            if current:
                pieces.append(current)
                current = ""
            pieces.append(head)
        if not sentence:
            continue
        if current and len(current) + 1 + len(sentence) > size:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        pieces.append(current)
    return pieces


def pages_text(pages: tuple[int, ...]) -> str:
    """``p. 3`` or ``pp. 3–5`` (the first and last page)."""
    if not pages:
        return ""
    return f"p. {pages[0]}" if pages[0] == pages[-1] else f"pp. {pages[0]}–{pages[-1]}"


def chunk_source(cite: str, pages: tuple[int, ...], headings: tuple[str, ...]) -> str:
    """Where a person finds a chunk: ``cite`` and its pages, else its innermost heading."""
    if pages:
        return f"{cite} {pages_text(pages)}"
    heading = next((h for h in reversed(headings) if h), "")
    return f"{cite} § {heading}" if heading else cite


def chunk_document(document: Document, size: int = DEFAULT_SIZE) -> list[Chunk]:
    """The document's chunks, in order."""
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise LoadError(f"the chunk size must be between {MIN_SIZE} and {MAX_SIZE} characters, "
                        f"not {size}")
    chunks: list[Chunk] = []
    # (first paragraph index, headings, paragraphs) of the chunk being filled
    group: tuple[int, tuple[str, ...], list[Section]] | None = None

    def emit(first: int, headings: tuple[str, ...], parts: list[Section], index: int = 0,
             text: str | None = None) -> None:
        pages = tuple(dict.fromkeys(s.page for s in parts if s.page is not None))
        source = None if document.cite is None else chunk_source(document.cite, pages, headings)
        chunks.append(Chunk(chunk_id(document.id, first, index), document.id, len(chunks),
                            "\n\n".join(s.text for s in parts) if text is None else text,
                            headings, pages, source))

    for p, section in enumerate(document.sections):
        text = section.text
        if group is not None and (group[1] != section.headings or
                                  group[2][-1].page != section.page or
                                  sum(len(s.text) + 2 for s in group[2]) + len(text) > size):
            emit(*group)
            group = None
        if len(text) > size:
            for i, piece in enumerate(_split_long(text, size)):
                emit(p, section.headings, [section], i, piece)
            continue
        if group is None:
            group = (p, section.headings, [section])
        else:
            group[2].append(section)
    if group is not None:
        emit(*group)
    return chunks
