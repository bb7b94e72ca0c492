"""``kgdb load documents`` and ``kgdb delete document``: KAG's builder, end to end.

For each document: read and chunk it, compare a hash of its content (and of how it is
processed) with the stored one, and only for a new or changed document: remove what its
previous version wrote (its chunks, their mutual-index edges, its chunk ids on facts, and
the extracted facts and entities nothing supports any more), write the document and its
chunks with their embeddings, extract and write the mutual index and the facts, and set the
document's hash last. A load killed at any point leaves the hash unset (or old), so the next
load redoes exactly the unfinished documents and ends in the state of an uninterrupted load;
extraction already paid for comes from the LLM cache.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgdb.cypher import documents as cy
from kgdb.documents.align import Aligned, AlignSettings, align
from kgdb.documents.chunking import DEFAULT_SIZE, chunk_document
from kgdb.documents.formats import DEFAULT_MAX_DOCUMENT_BYTES
from kgdb.documents.gazetteer import DEFAULT_MIN_LENGTH, Gazetteer
from kgdb.documents.model import Chunk, Document, ExtractionStats, Extractor
from kgdb.documents.readers import read_documents
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.errors import LoadError
from kgdb.link import Linker, LinkSettings
from kgdb.link.gazetteer import name_entries
from kgdb.schema.apply import ensure_base_schema

EXTRACT_MODES = ("none", "gazetteer", "llm")
ON_ERROR = ("skip", "fail")
"""What a file that cannot be read does to a load: ``skip`` leaves it out (one line each in
the report) and loads the others; ``fail`` loads nothing."""
MENTIONS = "mentions"
"""The relation of ``--mention-facts``: a document's title entity mentions an entity."""
PIPELINE_VERSION = 1
"""Part of every document's hash: a change of how documents are processed reloads them."""


@dataclass
class DocumentOptions:
    extract: str = "none"
    chunk_size: int = DEFAULT_SIZE
    title_entity: bool = False
    """Make each document's title an entity supported by all its chunks."""
    mention_facts: bool = False
    """With ``title_entity`` and the gazetteer: a fact ``(title)-[:mentions]->(entity)`` for each
    other entity the document's chunks name (the chunks are the fact's support)."""
    ignore_case: bool = False
    min_length: int = DEFAULT_MIN_LENGTH
    batch: int = 32
    """Documents written per round of statements."""
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    """The largest PDF, HTML, DOCX or ODT file read (a larger one is a file error)."""
    align: AlignSettings = field(default_factory=AlignSettings)

    def fingerprint(self, extractor: Extractor | None) -> dict[str, Any]:
        out: dict[str, Any] = {"version": PIPELINE_VERSION, "extract": self.extract,
                               "chunk_size": self.chunk_size, "title_entity": self.title_entity}
        if self.extract == "gazetteer":
            out.update(ignore_case=self.ignore_case, min_length=self.min_length)
            if self.mention_facts:
                out["mention_facts"] = True
        if self.extract == "llm" and extractor is not None:
            out["extractor"] = getattr(extractor, "fingerprint", extractor.name)
            out["align"] = vars(self.align)
        return out


@dataclass
class DocumentReport:
    documents: int = 0
    unchanged: int = 0
    written: int = 0
    chunks: int = 0
    mentions: int = 0
    facts: int = 0
    entities_created: int = 0
    facts_removed: int = 0
    entities_removed: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    """Of ``seconds``: computing embeddings the cache did not have."""
    statements: int = 0
    """Statements the written batches ran (the per-batch count does not grow with the graph)."""
    batches: int = 0
    most_statements_per_batch: int = 0
    dry_run: bool = False
    requests_needed: int | None = None
    """A dry run with ``--extract llm``: the chunks whose extraction is not cached."""
    extraction: ExtractionStats = field(default_factory=ExtractionStats)
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """One line per file that could not be read and was left out (``on_error="skip"``)."""
    pages: int = 0
    """Pages of the PDFs read."""

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if k != "extraction"}
        out["extraction"] = self.extraction.to_json()
        return out


def _hash(document: Document, chunks: Sequence[Chunk], fingerprint: dict[str, Any]) -> str:
    body = json.dumps({"title": document.title, "fingerprint": fingerprint,
                       "chunks": [[c.id, c.text, list(c.headings), *_cited(c)] for c in chunks]},
                      ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _cited(chunk: Chunk) -> list[Any]:
    """A chunk's source and pages in its hash, only where it has a source (the hashes of text,
    Markdown and JSON documents stay what they were: reloading them writes nothing)."""
    return [] if chunk.source is None else [chunk.source, list(chunk.pages)]


def chunk_title(document: Document, chunk: Chunk) -> str:
    """A chunk's title and heading path (``Title > Heading``), its ``title`` property."""
    return " > ".join([document.title, *[h for h in chunk.headings if h]])


def embedding_text(document: Document, chunk: Chunk) -> str:
    """What a chunk's embedding is computed from: its title and heading path, then its text."""
    return f"{chunk_title(document, chunk)}\n{chunk.text}"


def _rows(store: GraphStore, statement: Any) -> list[dict[str, Any]]:
    return store.run(statement).records()


def _remove(store: GraphStore, ids: Sequence[str], report: DocumentReport) -> None:
    """What the documents' previous versions wrote, except the Document nodes: their chunks,
    the facts, concept links and ``isA`` edges only they supported, and the descriptions and
    synonyms only they gave (recomputed from the chunks that remain)."""
    if not ids:
        return
    store.run(cy.unsupport_facts(ids))
    report.facts_removed += int(_rows(store, cy.delete_unsupported_facts(ids))[0]["deleted"])
    store.run(cy.unsupport_concepts(ids))
    store.run(cy.delete_unsupported_concept_edges())
    lost: dict[str, set[str]] = {}
    for row in _rows(store, cy.noted_entities(ids)):
        lost.setdefault(str(row["id"]), set()).update(str(s) for said in row["said"]
                                                      for s in said or [])
    store.run(cy.delete_chunks(ids))
    noted = list(lost)
    for start in range(0, len(noted), 1000):
        rows = [_renoted(r, lost[str(r["id"])])
                for r in _rows(store, cy.entity_notes(noted[start:start + 1000]))]
        changed = [r for r in rows if r is not None]
        if changed:
            store.run(cy.set_entity_notes(changed))


def _renoted(row: dict[str, Any], lost: set[str]) -> dict[str, Any] | None:
    """An entity's description and synonyms from what its remaining chunks said (in the
    order they were loaded): a description extraction gave becomes the first remaining one;
    a synonym the removed chunks (``lost``) said and no remaining chunk says goes, any other
    stays. None when nothing changes."""
    notes = sorted((n for n in row["notes"] if n and n[0] is not None), key=lambda n: n[0])
    said = {str(s) for n in notes for s in (n[2] or [])}
    synonyms = [str(s) for s in row["synonyms"] or []]
    kept = [s for s in synonyms if s not in lost or s in said]
    description, described = row["description"], row["described"]
    if described:
        description = next((str(n[1]) for n in notes if n[1] is not None), None)
        described = True if description is not None else None
    if description == row["description"] and kept == synonyms and \
            described == row["described"]:
        return None
    return {"id": row["id"], "description": description, "described": described,
            "synonyms": kept}


def schema_types(store: GraphStore) -> tuple[list[str] | None, list[str] | None]:
    """The entity and relation types an applied schema declares (None: no schema, so
    extraction is open)."""
    entity_types = sorted(Linker(store, None, LinkSettings("names")).catalog()) or None
    relation_types = [str(r["name"]) for r in _rows(store, cy.schema_relation_types())]
    return entity_types, (relation_types or None) if entity_types else None


def gazetteer_for(store: GraphStore, options: DocumentOptions) -> Gazetteer:
    return Gazetteer(name_entries(store), ignore_case=options.ignore_case,
                     min_length=options.min_length)


def load_documents(store: GraphStore, embedder: Embedder, paths: Iterable[str | Path], *,
                   options: DocumentOptions | None = None, extractor: Extractor | None = None,
                   progress: bool = True, dry_run: bool = False,
                   on_error: str = "skip") -> DocumentReport:
    """Load the documents of ``paths`` (see the module docstring). ``extractor`` is the LLM
    extractor when ``options.extract`` is ``llm``. ``dry_run``: write nothing, report what a
    load would write (documents, chunks) and the LLM requests it would make. ``on_error``
    (:data:`ON_ERROR`): ``skip`` leaves out a file that cannot be read (the report's
    ``skipped`` names each with its cause) and loads the rest; ``fail`` raises the first such
    error and writes nothing. Either way no file is half-written: every file is read before
    anything is written, and nothing is written when no file could be read."""
    options = options or DocumentOptions()
    _check(options, extractor)
    if on_error not in ON_ERROR:
        raise LoadError(f"unknown on_error {on_error!r}; choose one of {', '.join(ON_ERROR)}")
    skipped: list[LoadError] | None = [] if on_error == "skip" else None
    # every file is read and checked before anything is written
    documents = read_documents(paths, skipped=skipped, max_bytes=options.max_document_bytes)
    report = write_documents(store, embedder, documents, options=options, extractor=extractor,
                             progress=progress, dry_run=dry_run)
    report.skipped = [str(e) for e in skipped or []]
    return report


def _check(options: DocumentOptions, extractor: Extractor | None) -> None:
    if options.extract not in EXTRACT_MODES:
        raise LoadError(f"unknown extraction {options.extract!r}; choose one of "
                        f"{', '.join(EXTRACT_MODES)}")
    if options.extract == "llm" and extractor is None:
        raise LoadError("--extract llm needs an LLM extractor")


def write_documents(store: GraphStore, embedder: Embedder, documents: Sequence[Document], *,
                    options: DocumentOptions | None = None, extractor: Extractor | None = None,
                    progress: bool = True, dry_run: bool = False) -> DocumentReport:
    """:func:`load_documents` of documents already read (``kgdb bench documents`` loads a
    corpus in parts)."""
    from kgdb.progress import progress_bar

    options = options or DocumentOptions()
    _check(options, extractor)
    t0 = time.perf_counter()
    embedded = getattr(embedder, "compute_seconds", 0.0)
    chunked = [(d, chunk_document(d, options.chunk_size)) for d in documents]
    report = DocumentReport(documents=len(documents), dry_run=dry_run,
                            pages=sum(int(d.meta.get("pages", 0)) for d in documents))
    if not dry_run:
        ensure_base_schema(store, embedder)
    if options.extract == "gazetteer":
        extractor = gazetteer_for(store, options)
        if options.title_entity:  # the titles this load makes entities are found too
            for d in documents:
                extractor.add(d.title, d.title)
        report.notes.append(f"gazetteer of {len(extractor)} names "
                            f"({extractor.ambiguous} shared by several entities)")
    fingerprint = options.fingerprint(extractor)
    hashes = {d.id: _hash(d, chunks, fingerprint) for d, chunks in chunked}
    stored: dict[str, Any] = {}
    ids = list(hashes)
    for start in range(0, len(ids), 1000):
        for row in _rows(store, cy.document_states(ids[start:start + 1000])):
            stored[str(row["id"])] = row["hash"]
    todo = [(d, chunks) for d, chunks in chunked if stored.get(d.id) != hashes[d.id]]
    report.unchanged = len(chunked) - len(todo)
    if dry_run:
        report.written = len(todo)
        report.chunks = sum(len(chunks) for _, chunks in todo)
        if options.extract == "llm":
            is_cached = getattr(extractor, "is_cached", lambda chunk: False)
            report.requests_needed = sum(1 for _, chunks in todo for c in chunks
                                         if not is_cached(c))
        report.seconds = round(time.perf_counter() - t0, 3)
        return report
    linker = Linker(store, None, LinkSettings("names"))  # one per load: it caches catalog reads
    counts: list[int] = []
    writer = store.view(observer=lambda _: counts.__setitem__(-1, counts[-1] + 1))
    bar = progress_bar(total=len(todo), unit="docs", file=sys.stderr,
                       disable=not progress or not todo, desc="documents")
    try:
        for start in range(0, len(todo), options.batch):
            batch = todo[start:start + options.batch]
            counts.append(0)
            _write_batch(writer, embedder, batch, options, extractor, hashes, report, linker)
            bar.update(len(batch))
            postfix: dict[str, Any] = {"chunks": report.chunks, "mentions": report.mentions,
                                       "facts": report.facts}
            if options.extract == "llm" and extractor is not None:
                postfix.update(requests=extractor.stats.requests, cached=extractor.stats.cached,
                               tokens=extractor.stats.tokens_in + extractor.stats.tokens_out)
            bar.set_postfix(postfix)
    finally:
        bar.close()
    report.entities_removed += int(_rows(store, cy.delete_orphan_entities())[0]["deleted"])
    store.run(cy.delete_orphan_concepts())
    if extractor is not None and options.extract == "llm":
        report.extraction = extractor.stats
        for reason, count in sorted(getattr(extractor, "dropped", {}).items()):
            report.notes.append(f"extraction dropped {count} item(s): {reason} (the log "
                                "names the chunks)")
    report.written = len(todo)
    report.batches, report.statements = len(counts), sum(counts)
    report.most_statements_per_batch = max(counts, default=0)
    report.embed_seconds = round(getattr(embedder, "compute_seconds", 0.0) - embedded, 3)
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def _write_batch(store: GraphStore, embedder: Embedder,
                 batch: Sequence[tuple[Document, list[Chunk]]], options: DocumentOptions,
                 extractor: Extractor | None, hashes: dict[str, str],
                 report: DocumentReport, linker: Linker) -> None:
    d = store.dialect
    ids = [doc.id for doc, _ in batch]
    _remove(store, ids, report)
    store.run(cy.merge_documents([{"id": doc.id, "title": doc.title, "source": doc.source,
                                   "format": doc.meta.get("format", "")} for doc, _ in batch]))
    chunks = [(doc, c) for doc, cs in batch for c in cs]
    vectors: Any = embedder.embed([embedding_text(doc, c) for doc, c in chunks]) if chunks else []
    for start in range(0, len(chunks), 500):
        part = range(start, min(start + 500, len(chunks)))
        store.run(cy.merge_chunks(d, [
            {"id": chunks[i][1].id, "document": chunks[i][1].document_id,
             "position": chunks[i][1].position, "text": chunks[i][1].text,
             "headings": list(chunks[i][1].headings),
             "title": chunk_title(chunks[i][0], chunks[i][1]), "embedding": vectors[i],
             # null for text, Markdown and JSON chunks: no property is written
             "source": chunks[i][1].source, "pages": list(chunks[i][1].pages) or None}
            for i in part]))
    report.chunks += len(chunks)
    mentions: list[tuple[str, str]] = []
    if options.title_entity:
        titles = list(dict.fromkeys(doc.title for doc, _ in batch))
        title_vectors = embedder.embed(titles)
        store.run(cy.merge_extracted_entities(d, [
            {"id": t, "name": t, "description": None, "synonyms": [], "embedding": v}
            for t, v in zip(titles, title_vectors, strict=True)]))
        mentions += [(doc.title, c.id) for doc, cs in batch for c in cs]
    aligned: Aligned | None = None
    if extractor is not None and options.extract != "none":
        extractions = list(extractor.extract([c for _, c in chunks]))
        if options.extract == "gazetteer":
            found = [(e.id, x.chunk_id) for x in extractions for e in x.entities if e.id]
            mentions += found
            if options.mention_facts and options.title_entity:
                title_of = {c.id: doc.title for doc, c in chunks}
                facts = list(dict.fromkeys((title_of[c], e, c) for e, c in found
                                           if e != title_of[c]))
                for start in range(0, len(facts), 5000):
                    store.run(cy.merge_extracted_facts(d, MENTIONS, facts[start:start + 5000]))
                report.facts += len(facts)
        else:
            aligned = align(store, embedder, extractions, options.align, linker)
            _write_aligned(store, aligned, report)
            mentions += aligned.mentions
    mentions = list(dict.fromkeys(mentions))
    for start in range(0, len(mentions), 5000):
        store.run(cy.link_mentions(mentions[start:start + 5000]))
    report.mentions += len(mentions)
    if aligned is not None:
        _note_mentions(store, aligned)
    store.run(cy.set_document_hashes([(doc.id, hashes[doc.id], len(cs)) for doc, cs in batch]))


def _write_aligned(store: GraphStore, aligned: Aligned, report: DocumentReport) -> None:
    d = store.dialect
    for type_label, rows in aligned.new_entities.items():
        store.run(cy.merge_extracted_entities(d, rows, type_label))
        report.entities_created += len(rows)
    if aligned.updates:
        store.run(cy.merge_extracted_entities(d, aligned.updates))
    for relation, facts in aligned.facts.items():
        store.run(cy.merge_extracted_facts(d, relation, facts))
        report.facts += len(facts)
    if aligned.concepts:
        store.run(cy.merge_concept_links(aligned.concepts))
    if aligned.broader:
        store.run(cy.merge_broader_concepts(aligned.broader))


def _note_mentions(store: GraphStore, aligned: Aligned) -> None:
    """What each chunk said about each entity, on its mention edge (after the edges exist);
    ranked by load order (a clock in ns, then the order within this batch)."""
    base = time.time_ns()
    notes = [{**note, "rank": base + i} for i, note in enumerate(aligned.notes)]
    for start in range(0, len(notes), 5000):
        store.run(cy.note_mentions(notes[start:start + 5000]))


def delete_documents(store: GraphStore, ids: Sequence[str]) -> DocumentReport:
    """Remove documents: their chunks and mutual-index edges, and the extracted facts and
    entities that no other source supports (never what a triples or records load created)."""
    found = {str(r["id"]) for r in _rows(store, cy.document_states(ids))}
    missing = [i for i in ids if i not in found]
    if missing:
        raise LoadError(f"no document with id {missing[0]!r} in this graph")
    report = DocumentReport(documents=len(ids))
    _remove(store, ids, report)
    store.run(cy.delete_documents(ids))
    report.entities_removed += int(_rows(store, cy.delete_orphan_entities())[0]["deleted"])
    store.run(cy.delete_orphan_concepts())
    return report
