"""``kgdb index fulltext``: the lexical index over chunks (their text and their document's
title and heading path) that the ``keyword`` solver searches and ``hybrid`` and ``ppr``
fuse with vector search (kgdb/retrieve/keyword.py).

Building it: the chunks loaded before the load wrote their ``title`` get it
(:func:`kgdb.cypher.lexical.set_chunk_titles`), an index over the chunks that is not the
lexical one is dropped where the engine has one full-text index per label (FalkorDB), and the
index is created with English stemming and Lucene's English stop words, then waited for. Once
built, the engines keep it current as chunks are loaded or deleted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from kgdb.cypher import lexical as cy
from kgdb.engine.base import GraphStore
from kgdb.retrieve.keyword import STOPWORDS, forget_lexical_index
from kgdb.schema.apply import await_indexes, execute_ddl
from kgdb.vocabulary import CHUNK


@dataclass
class FulltextReport:
    """What ``kgdb index fulltext`` did."""

    mode: str
    """``created``, ``rebuilt`` (an index of another make was replaced) or ``unchanged``."""
    chunks: int
    titles_written: int
    scorer: str
    dropped: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"mode": self.mode, "chunks": self.chunks, "titles_written": self.titles_written,
                "dropped": self.dropped, "scorer": self.scorer,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()}}


def build_fulltext(store: GraphStore, *, full: bool = False) -> FulltextReport:
    """Make the lexical index over the chunks exist (``full``: drop and create it again)."""
    d = store.dialect
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    written = int(store.run(cy.set_chunk_titles()).records()[0]["written"])
    seconds["titles"] = time.perf_counter() - start
    infos = store.indexes()
    ready = d.lexical_index_ready(infos, CHUNK, cy.LEXICAL_FIELDS)
    stale = d.lexical_stale(infos, CHUNK, cy.LEXICAL_FIELDS)
    if full and ready:
        stale = [i for i in infos if i.kind == "fulltext" and i.label == CHUNK and
                 d.lexical_index_ready([i], CHUNK, cy.LEXICAL_FIELDS)] + stale
    chunks = int(store.run(cy.count_chunks()).records()[0]["chunks"])
    if ready and not full:
        return FulltextReport("unchanged", chunks, written, d.LEXICAL_SCORER, [], seconds)
    forget_lexical_index(store)
    start = time.perf_counter()
    dropped = []
    for info in stale:
        for op in d.drop_index(info):
            store.execute(op)
        dropped.append(f"fulltext index on :{info.label}({', '.join(info.properties)})")
    seconds["drop"] = time.perf_counter() - start
    start = time.perf_counter()
    for op in d.lexical_index(CHUNK, cy.LEXICAL_FIELDS, STOPWORDS):
        execute_ddl(store, op)
    await_indexes(store)
    seconds["index"] = time.perf_counter() - start
    return FulltextReport("rebuilt" if stale or full else "created", chunks, written,
                          d.LEXICAL_SCORER, dropped, seconds)
