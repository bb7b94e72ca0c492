"""Lexical retrieval: the chunks a full-text index over their text and title scores best for
the question's words, inside the database (``kgdb index fulltext`` builds the index).

``keyword``
    The chunks the lexical index ranks first, each chunk's document ranked at its best chunk.
    Neo4j scores by BM25 (Lucene), FalkorDB by RediSearch's TF-IDF; both stem English and
    drop the same stop words (:attr:`kgdb.dialects.base.Dialect.LEXICAL_SCORER` says exactly
    what each engine computes). The lexical scores are also an ingredient of ``hybrid`` and
    of ``ppr``'s seeds (``lexical_weight``).

The query is built from the question's words alone (:func:`query_terms`): letters, digits
and ``_``, lower-cased, so that no character of the question (quotes, ``-``, ``|``, ``:``,
``*``, ``~``, Lucene's upper-case ``AND``/``OR``/``NOT``) can be full-text query syntax; the
words are joined by the engine's OR and the query is a parameter.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any, Literal

from kgdb.cypher import lexical as cy
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.errors import KgdbError
from kgdb.llm import ChatClient
from kgdb.retrieve.evidence import Evidence, Passage, documents_of
from kgdb.retrieve.solver import PassageOptions, Solver, SolverOptions
from kgdb.vocabulary import CHUNK

STOPWORDS = ("a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
             "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
             "their", "then", "there", "these", "they", "this", "to", "was", "will", "with")
"""Lucene's English stop words (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET), which Neo4j's
'english' analyzer removes; FalkorDB's lexical index is created with the same list, and the
query leaves them out on both."""

MAX_TERMS = 64
"""The most words a query keeps (the first ones): Lucene refuses more than 1,024 clauses,
and a question of more words than this is a passage, not a question."""

MAX_TERM_LENGTH = 64
"""Longer words are left out (no English word is; a hostile one would only cost time)."""

_WORD = re.compile(r"\w+")


class LexicalError(KgdbError):
    """Lexical retrieval cannot run (no lexical index)."""


def query_terms(text: str) -> list[str]:
    """The words of ``text`` a lexical query matches: runs of letters, digits and ``_``,
    lower-cased, without stop words and repeats, in order (at most :data:`MAX_TERMS`)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if word in seen or word in _STOP or len(word) > MAX_TERM_LENGTH or word.strip("_") == "":
            continue
        seen[word] = None
        if len(seen) == MAX_TERMS:
            break
    return list(seen)


_STOP = frozenset(STOPWORDS)

READY_RECHECK_S = 1.0
"""How long a store's lexical index, once seen, is trusted without listing the indexes again:
someone else (a DBA, another process, a test's reset) may drop it, and a retrieval that
trusted a dropped index forever would fail on every call."""

_READY: dict[str, float] = {}


def lexical_ready(store: GraphStore) -> bool:
    """Whether the store has the lexical index (seen within :data:`READY_RECHECK_S`)."""
    seen = _READY.get(store.address)
    if seen is not None and time.monotonic() - seen < READY_RECHECK_S:
        return True
    if store.dialect.lexical_index_ready(store.indexes(), CHUNK, cy.LEXICAL_FIELDS):
        _READY[store.address] = time.monotonic()
        return True
    _READY.pop(store.address, None)
    return False


def forget_lexical_index(store: GraphStore) -> None:
    """Forget that ``store`` had the lexical index (it is being rebuilt)."""
    _READY.pop(store.address, None)


def missing_index(store: GraphStore) -> str:
    return (f"no lexical index over the chunks of {store.address}: build it first "
            "(kgdb index fulltext)")


def lexical_passages(store: GraphStore, question: str, k: int) -> list[Passage]:
    """The ``k`` chunks the lexical index scores best for ``question``'s words, best first,
    each scored by the engine's full-text score; none when no word is left."""
    return [Passage(str(r["chunk"]), str(r["document"]), str(r["text"] or ""),
                    float(r["score"]), r.get("source"))
            for r in lexical_rows(store, question, k)]


def lexical_rows(store: GraphStore, question: str, k: int) -> list[dict[str, Any]]:
    """The rows of :func:`kgdb.cypher.lexical.lexical_chunks` for ``question``'s words
    (``node, chunk, document, text, source, score``); none when no word is left."""
    terms = query_terms(question)
    if k < 1 or not terms:
        return []
    return [dict(r) for r in store.run(cy.lexical_chunks(store.dialect, terms, k)).records()]


def min_max(scores: Sequence[float]) -> list[float]:
    """``scores`` scaled to [0, 1] by their minimum and maximum (all 1 when they are
    equal): the per-question normalisation of score fusion."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high <= low:
        return [1.0 for _ in scores]
    return [(s - low) / (high - low) for s in scores]


class KeywordOptions(PassageOptions, SolverOptions):
    solver: Literal["keyword"] = "keyword"


class KeywordSolver(Solver[KeywordOptions]):
    """The chunks the lexical (full-text) index scores best."""

    name = "keyword"
    aliases = ("bm25", "lexical")
    summary = ("chunks by the full-text index's score for the question's words (BM25 on "
               "Neo4j, TF-IDF on FalkorDB; kgdb index fulltext)")
    options = KeywordOptions
    indexes = ("chunks", "fulltext")
    ranks_by_passages = True

    def retrieve(self, store: GraphStore, embedder: Embedder, question: str,
                 options: KeywordOptions, llm: ChatClient | None = None) -> Evidence:
        evidence = Evidence(question, self.name, score_kind="lexical", statements=[])
        view = store.view(observer=evidence.statements.append)
        if not lexical_ready(store):
            raise LexicalError(missing_index(store))
        with evidence.timings_ms.phase("lexical"):
            evidence.passages = lexical_passages(view, question, options.passages)
        evidence.documents = documents_of(evidence.passages)
        evidence.detail["terms"] = list(query_terms(question))
        evidence.detail["scorer"] = store.dialect.LEXICAL_SCORER
        return evidence
