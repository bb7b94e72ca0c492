"""Lexical retrieval without a database: the query built from any question keeps only words
(so no character of it is full-text syntax on either engine), the per-question min-max
normalisation, score fusion with the lexical part, and the golden statements."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from kgdb.cypher import lexical as cy
from kgdb.dialects import get_dialect
from kgdb.dialects.base import IndexInfo
from kgdb.retrieve.hybrid import fuse_scores
from kgdb.retrieve.keyword import MAX_TERMS, STOPWORDS, min_max, query_terms
from kgdb.vocabulary import CHUNK
from tests.support.goldens import Case, assert_neo4j_lints_clean, validate_all

SYNTAX = '+-&|!(){}[]^"~*?:\\/,.<>;@#$%=\'`'
"""Every character with a meaning in Lucene's classic query syntax or RediSearch's."""

HOSTILE = ['Who is "the" AND NOT (x) OR y*?', 'title:foo -bar | @text:baz ~qux %fuzzy%',
           "Lothair Ii's wife", "x\\\" OR 1=1 //", "-", "", "the of and", "AND OR NOT"]


def test_query_terms_are_words() -> None:
    assert query_terms("Who is the father of Lothair II's wife?") == \
        ["who", "father", "lothair", "ii", "s", "wife"]
    assert query_terms('title:foo -bar | @text:"baz"') == ["title", "foo", "bar", "text", "baz"]
    assert query_terms("AND OR NOT the of") == []  # Lucene's operators are stop words here
    assert query_terms("x " * 500 + " ".join(f"w{i}" for i in range(200))) == \
        ["x", *[f"w{i}" for i in range(MAX_TERMS - 1)]]


@given(st.text(alphabet=st.sampled_from(list(SYNTAX) + list("aZ9_ é\u00df\u4e2d\n\t")),
               max_size=80) | st.text(max_size=80) | st.sampled_from(HOSTILE))
def test_no_question_makes_query_syntax(question: str) -> None:
    """Whatever the question, each term is lower-case word characters, not a stop word, and
    the engines' queries join them with their OR and nothing else."""
    terms = query_terms(question)
    assert all(re.fullmatch(r"\w+", t) and t == t.lower() and t not in STOPWORDS
               for t in terms)
    assert len(terms) == len(set(terms)) <= MAX_TERMS
    for name, joiner in (("neo4j", " OR "), ("falkordb", " | ")):
        query = get_dialect(name).lexical_query(terms)
        assert query == joiner.join(terms)
        assert not set(query) & set(SYNTAX) - {"|"}


def test_min_max() -> None:
    assert min_max([]) == []
    assert min_max([3.0, 3.0]) == [1.0, 1.0]
    assert min_max([4.0, 2.0, 3.0]) == [1.0, 0.0, 0.5]


def test_fusion_adds_the_lexical_score() -> None:
    dense = {"a": 0.8, "b": 0.7, "c": 0.5}
    ranked = fuse_scores(dense, {"b": 1.0}, 0.05, {"c": 1.0, "d": 0.25}, 0.4)
    assert [(d.id, round(d.score or 0, 6)) for d in ranked] == \
        [("c", 0.9), ("a", 0.8), ("b", 0.75), ("d", 0.6)]
    assert [d.id for d in fuse_scores(dense, {}, 0.2, {"c": 1.0}, 0.0)] == ["a", "b", "c"]


def test_lexical_index_is_recognised() -> None:
    neo4j, falkordb = get_dialect("neo4j"), get_dialect("falkordb")
    fields = cy.LEXICAL_FIELDS
    ours = IndexInfo("fulltext", "node", CHUNK, fields, name="kgdb_chunk_lexical_fulltext",
                     options={"analyzer": "english"})
    other = IndexInfo("fulltext", "node", CHUNK, ("text",), name="kgdb_chunk_text_fulltext")
    assert neo4j.lexical_index_ready([other, ours], CHUNK, fields)
    assert not neo4j.lexical_index_ready([other], CHUNK, fields)
    assert neo4j.lexical_stale([other, ours], CHUNK, fields) == []
    plain = IndexInfo("fulltext", "node", CHUNK, ("text",),
                      options={"language": "english", "stopwords": []})
    made = IndexInfo("fulltext", "node", CHUNK, ("text", "title"),
                     options={"language": "english", "stopwords": list(STOPWORDS)})
    assert falkordb.lexical_index_ready([made], CHUNK, fields)
    assert not falkordb.lexical_index_ready([plain], CHUNK, fields)
    assert falkordb.lexical_stale([plain], CHUNK, fields) == [plain]


CASES = [
    Case("set_chunk_titles", {}, lambda d: cy.set_chunk_titles()),
    Case("count_chunks", {}, lambda d: cy.count_chunks()),
    Case("lexical_chunks", {"terms": ["lothair", "wife"], "k": 10},
         lambda d: cy.lexical_chunks(d, ["lothair", "wife"], 10)),
    Case("lexical_index", {"label": CHUNK, "fields": list(cy.LEXICAL_FIELDS)},
         lambda d: d.lexical_index(CHUNK, cy.LEXICAL_FIELDS, STOPWORDS[:3])),
]


def test_lexical_goldens() -> None:
    table = validate_all("lexical", CASES)
    # lexical_chunks returns id(node), deprecated in Cypher 5 (the linter warns): ppr's
    # seeds are internal ids, as in kgdb/cypher/pagerank.py, which its procedures take.
    assert_neo4j_lints_clean(table, skip=["lexical_chunks"])
