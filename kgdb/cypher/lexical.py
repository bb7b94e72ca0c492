"""Statements of lexical retrieval: the chunks' title property the full-text index reads
beside their text, and the search itself (kgdb/retrieve/keyword.py).

The graph it reads and writes::

    (:Document {title})-[:hasChunk]->(:Chunk {id, document, text, title})

``title`` is the chunk's document title and heading path (``Title > Heading``), the same
path its embedding is computed from (:func:`kgdb.documents.pipeline.embedding_text`); the
load writes it, :func:`set_chunk_titles` writes it for chunks loaded before it did.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgdb.dialects.base import Dialect
from kgdb.statement import Statement
from kgdb.vocabulary import CHUNK, DOCUMENT, HAS_CHUNK

LEXICAL_FIELDS = ("text", "title")
"""The chunk properties the lexical index holds."""


def set_chunk_titles() -> Statement:
    """Give every chunk whose ``title`` is missing or stale its document's title and heading
    path. Rows: ``written``."""
    return Statement(
        f"MATCH (d:{DOCUMENT})-[:{HAS_CHUNK}]->(c:{CHUNK})\n"
        "WITH c, d.title + reduce(path = '', h IN coalesce(c.headings, []) | "
        "CASE WHEN h IS NULL OR h = '' THEN path ELSE path + ' > ' + h END) AS title\n"
        "WHERE c.title IS NULL OR c.title <> title\n"
        "SET c.title = title\n"
        "RETURN count(c) AS written", write=True, idempotent=True)


def count_chunks() -> Statement:
    """Row ``chunks``: how many chunks the graph holds."""
    return Statement(f"MATCH (c:{CHUNK}) RETURN count(c) AS chunks")


def lexical_chunks(dialect: Dialect, terms: Sequence[str], k: int) -> Statement:
    """The ``k`` chunks the lexical index scores best for any of ``terms`` (words from
    :func:`kgdb.retrieve.keyword.query_terms`; the query text is a parameter): rows ``node``
    (the internal id, for ``ppr``'s seeds), ``chunk, document, text, source, score``, best
    first, ties by id."""
    return Statement(
        f"{dialect.lexical_search(CHUNK)}\n"
        "WITH node, score\nORDER BY score DESC, node.id ASC\nLIMIT $k\n"
        "RETURN id(node) AS node, node.id AS chunk, node.document AS document, "
        "node.text AS text, node.source AS source, score",
        {"query": dialect.lexical_query(terms),
         "terms": [dialect.lexical_query([t]) for t in terms],
         "k": int(k)})
