"""Documents from files: text and Markdown files, JSON/JSONL corpora of records, and PDF,
HTML, DOCX and ODT files (read in :mod:`kgdb.documents.formats`).

Identity rules (the README's "Documents" section says the same):

- A text (``.txt``) or Markdown (``.md``, ``.markdown``) file is one document whose id is the
  file name without its extension (``notes/kismet.md`` -> ``kismet``), so loading the same file
  from another directory updates the same document. Its title is its first heading, else the
  id. Headings are its structure; paragraphs (separated by blank lines) are its sections.
- A JSON file holding a list of records, or a JSONL file of one record per line, is a corpus.
  A record is ``{"id"?, "title", "text"}``; its document id is ``id`` when given, else the
  title. Records that share a document id are the paragraphs of one document, in file order
  (the layout of MuSiQue's ``corpus.json``).
- A PDF, HTML, DOCX or ODT file (:mod:`kgdb.documents.formats`) is one document whose id is
  its file name with the extension (``libtasn1.pdf``: the same manual often comes as PDF and
  HTML side by side), or, found in a directory given, its path under that directory
  (``html/index.html``: trees of web pages repeat file names). Its chunks cite that name with
  their page or section (``libtasn1.pdf p. 12``).
- Two different sources that give the same id in one load (``a.md`` and ``a.txt``, or a file
  and a corpus record) are an error naming both; across loads, the same id is the same
  document, and loading it again replaces it (an unchanged document writes nothing).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from kgdb.documents.formats import (
    DEFAULT_MAX_DOCUMENT_BYTES,
    RICH_SUFFIXES,
    MissingExtra,
    read_rich_document,
)
from kgdb.documents.model import Document, Section
from kgdb.errors import LoadError
from kgdb.text import TextError, limits, normalise_newlines, open_data_file, text_problem

TEXT_SUFFIXES = {".txt": "text", ".md": "markdown", ".markdown": "markdown"}
CORPUS_SUFFIXES = {".json": "json", ".jsonl": "jsonl"}
MAX_ID = 512
"""Longest document id, in characters (chunk ids append ``#pppp#ccc``)."""

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _decode(path: Path, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise LoadError(f"{path}:{line}: not UTF-8 text ({exc.reason} at byte "
                        f"{exc.start})") from exc
    return normalise_newlines(text.removeprefix("\ufeff"))


def _read_bytes(path: Path) -> bytes:
    try:
        with open_data_file(path, what="document") as handle:
            return handle.read()
    except TextError as exc:
        raise LoadError(str(exc)) from exc


def _check(where: str, value: str, what: str) -> str:
    problem = text_problem(value)
    if problem:
        raise LoadError(f"{where}: the {what} {problem}")
    return value


def _check_id(where: str, ident: str) -> str:
    ident = _check(where, ident.strip(), "document id")
    if not ident:
        raise LoadError(f"{where}: the document id is empty")
    if len(ident) > MAX_ID:
        raise LoadError(f"{where}: the document id is longer than {MAX_ID} characters")
    if "#" in ident:
        raise LoadError(f"{where}: the document id {ident!r} contains '#', which separates the "
                        "parts of chunk ids")
    return ident


def paragraphs(text: str, markdown: bool) -> tuple[str | None, list[Section]]:
    """The first heading (Markdown) and the sections: paragraphs under their heading path."""
    title: str | None = None
    path: list[str] = []
    sections: list[Section] = []
    buffer: list[str] = []

    def flush() -> None:
        body = "\n".join(buffer).strip()
        buffer.clear()
        if body:
            sections.append(Section(body, tuple(path)))

    in_fence = False
    for line in text.split("\n"):
        if markdown and line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            buffer.append(line)
            continue
        heading = _HEADING.match(line) if markdown and not in_fence else None
        if heading:
            flush()
            level, name = len(heading.group(1)), heading.group(2).strip()
            if title is None and name:
                title = name
            del path[level - 1:]
            path += [""] * (level - 1 - len(path)) + [name]
            continue
        if not line.strip() and not in_fence:
            flush()
            continue
        buffer.append(line)
    flush()
    return title, sections


def _check_lines(where: str, text: str) -> None:
    """The text contract for a document's text, line by line (README, "Text"): no control
    character but TAB, LF and CR, no lone surrogate, lines of at most ``KGDB_MAX_LINE_BYTES``
    (the text as a whole is a file, bounded by ``KGDB_MAX_FILE_BYTES``, not a value)."""
    limit = limits()
    line_limit = dataclasses.replace(limit, value_bytes=1 << 62)
    for number, line in enumerate(text.split("\n"), start=1):
        problem = text_problem(line, limit=line_limit)
        if problem:
            raise LoadError(f"{where}:{number}: the text {problem}")
        if len(line) * 4 > limit.line_bytes:
            size = len(line.encode("utf-8"))
            if size > limit.line_bytes:
                raise LoadError(f"{where}:{number}: the line is {size} bytes long; a line may "
                                f"have at most {limit.line_bytes} (KGDB_MAX_LINE_BYTES)")


def read_text_document(path: Path) -> Document:
    kind = TEXT_SUFFIXES[path.suffix.lower()]
    text = _decode(path, _read_bytes(path))
    _check_lines(str(path), text)
    ident = _check_id(str(path), path.stem)
    title, sections = paragraphs(text, kind == "markdown")
    if not sections:
        raise LoadError(f"{path}: the document has no text")
    return Document(ident, title or ident, tuple(sections), str(path), {"format": kind})


def _records(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, record) for every record of a JSON list or JSONL file."""
    data = _decode(path, _read_bytes(path))
    if path.suffix.lower() == ".jsonl":
        for number, line in enumerate(data.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                yield f"{path}:{number}", json.loads(line)
            except json.JSONDecodeError as exc:
                raise LoadError(f"{path}:{number}: not JSON ({exc.msg})") from exc
            except RecursionError:
                # from None: the cause is a recursion a thousand frames deep that says no
                # more than the message
                raise LoadError(f"{path}:{number}: the record is nested too deeply") from None
        return
    try:
        records = json.loads(data)
    except json.JSONDecodeError as exc:
        raise LoadError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from exc
    except RecursionError:
        # from None: the cause is a recursion a thousand frames deep that says no
        # more than the message
        raise LoadError(f"{path}: the JSON is nested too deeply") from None
    if not isinstance(records, list):
        raise LoadError(f"{path}: a corpus must be a JSON list of {{id?, title, text}} records, "
                        f"not a {type(records).__name__}")
    for number, record in enumerate(records, start=1):
        yield f"{path}: record {number}", record


def read_corpus(path: Path) -> list[Document]:
    """The documents of a JSON/JSONL corpus, in order of first record."""
    docs: dict[str, dict[str, Any]] = {}
    for where, record in _records(path):
        if not isinstance(record, dict):
            raise LoadError(f"{where}: a record must be an object with title and text")
        unknown = sorted(set(record) - {"id", "title", "text"})
        if unknown:
            raise LoadError(f"{where}: unknown field {unknown[0]!r} (a record has id, title, "
                            "text)")
        title, text = record.get("title"), record.get("text")
        if not isinstance(title, str) or not title.strip():
            raise LoadError(f"{where}: the record needs a non-empty title (a string)")
        if not isinstance(text, str):
            raise LoadError(f"{where}: the record needs a text (a string)")
        raw_id = record.get("id", title)
        if not isinstance(raw_id, str | int) or isinstance(raw_id, bool):
            raise LoadError(f"{where}: the id must be a string or an integer")
        ident = _check_id(where, str(raw_id))
        title = _check(where, normalise_newlines(title).strip(), "title")
        text = normalise_newlines(text).strip()
        _check_lines(where, text)
        doc = docs.setdefault(ident, {"title": title, "sections": [], "where": where})
        if doc["title"] != title:
            raise LoadError(f"{where}: record of document {ident!r} has the title {title!r} but "
                            f"{doc['where']} gave it {doc['title']!r}")
        if text:
            doc["sections"].append(Section(text))
    out = []
    for ident, doc in docs.items():
        if not doc["sections"]:
            raise LoadError(f"{doc['where']}: document {ident!r} has no text")
        out.append(Document(ident, doc["title"], tuple(doc["sections"]), doc["where"],
                            {"format": "corpus"}))
    return out


SUFFIXES = (".txt", ".md", ".json", ".jsonl", ".pdf", ".html", ".docx", ".odt")
"""The formats named in messages (``.markdown``, ``.htm`` and ``.xhtml`` are read too)."""


def _named(suffixes: Iterable[str]) -> str:
    names = list(suffixes)
    return ", ".join(names[:-1]) + f" or {names[-1]}"


def _files(paths: Iterable[Path]) -> Iterator[tuple[Path, str]]:
    """Each file with the id a PDF, HTML, DOCX or ODT file gets: its path under the
    directory given, else its name."""
    for path in paths:
        if path.is_dir():
            found = sorted(walk(path))
            if not found:
                raise LoadError(f"{path}: no {_named(SUFFIXES)} file in this directory")
            yield from ((f, f.relative_to(path).as_posix()) for f in found)
        else:
            yield path, path.name


def walk(root: Path) -> list[Path]:
    """The document files under ``root``, however deep (an explicit stack, no recursion);
    symbolic links to directories are not followed (no loops). A directory that cannot be
    read is a :class:`LoadError` naming it: a load never silently leaves files out."""
    suffixes = {**TEXT_SUFFIXES, **CORPUS_SUFFIXES, **RICH_SUFFIXES}
    found: list[Path] = []
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    elif entry.is_file() and Path(entry.name).suffix.lower() in suffixes:
                        found.append(Path(entry.path))
        except OSError as exc:
            raise LoadError(f"{directory}: cannot read this directory "
                            f"({exc.strerror or exc})") from exc
    return found


def read_file(path: Path, ident: str,
              max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES) -> list[Document]:
    """The documents of one file; ``ident``: the id of a PDF, HTML, DOCX or ODT file, which
    may have at most ``max_bytes``."""
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return [read_text_document(path)]
    if suffix in CORPUS_SUFFIXES:
        return read_corpus(path)
    if suffix in RICH_SUFFIXES:
        return [read_rich_document(path, _check_id(str(path), ident), max_bytes)]
    raise LoadError(f"{path}: unknown document format {suffix or '(no extension)'!r} "
                    f"(use {_named(SUFFIXES)})")


def read_documents(paths: Iterable[str | Path], *,
                   skipped: list[LoadError] | None = None,
                   max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES) -> list[Document]:
    """Every document of ``paths`` (files or directories), checked for id collisions.
    ``skipped``: a file that cannot be read is added to it (its error names the file and
    the cause) and left out; without it, the first such file is the error. A missing
    library (:class:`~kgdb.documents.formats.MissingExtra`) and an id collision are errors
    either way. If no file of ``paths`` could be read, that is an error too. ``max_bytes``:
    the largest PDF, HTML, DOCX or ODT file read (text and JSON files have
    ``KGDB_MAX_FILE_BYTES``)."""
    documents: list[Document] = []
    seen: dict[str, str] = {}
    failed: list[LoadError] = []
    for path, ident in _files(Path(p) for p in paths):
        try:
            found = read_file(path, ident, max_bytes)
        except MissingExtra:
            raise
        except LoadError as exc:
            if skipped is None:
                raise
            failed.append(exc)
            continue
        for doc in found:
            if doc.id in seen:
                raise LoadError(f"{doc.source}: document id {doc.id!r} is also the id of "
                                f"{seen[doc.id]} (ids must be unique within a load; see the "
                                "README's identity rules)")
            seen[doc.id] = doc.source
            documents.append(doc)
    if failed and not documents:
        raise LoadError(str(failed[0]) if len(failed) == 1 else
                        "no file could be read:\n" + "\n".join(str(e) for e in failed)) \
            from failed[0]
    if skipped is not None:
        skipped += failed
    return documents
