"""The dialect layer: one quoting function, per-engine differences, did-you-mean."""

from __future__ import annotations

import pytest

from kgdb.dialects import FalkorDBDialect, Neo4jDialect, get_dialect, quote_identifier
from kgdb.errors import ConfigError, InvalidIdentifierError
from kgdb.statement import EngineCommand, Statement

HOSTILE = ["a`b", "x` ) DETACH DELETE n //", "with space", "ünïcødé", "1starts_with_digit",
           "semi;colon", "new\nline", "quote'and\"double", "back\\slash"]


@pytest.mark.parametrize("name", HOSTILE)
def test_quote_identifier_wraps_and_doubles_backticks(name: str) -> None:
    quoted = quote_identifier(name)
    assert quoted.startswith("`") and quoted.endswith("`")
    inner = quoted[1:-1]
    # every backtick inside is doubled, so the quoted name cannot be closed early
    assert inner.replace("``", "") .count("`") == 0
    assert inner.replace("``", "`") == name


@pytest.mark.parametrize("bad", ["", "nul\x00byte", "x" * 300])
def test_quote_identifier_rejects_unquotable_names(bad: str) -> None:
    with pytest.raises(InvalidIdentifierError):
        quote_identifier(bad)


def test_falkordb_rejects_backticks_it_cannot_parse() -> None:
    assert Neo4jDialect().ident("a`b") == "`a``b`"
    with pytest.raises(InvalidIdentifierError, match="backtick"):
        FalkorDBDialect().ident("a`b")


def test_unknown_dialect_suggests_the_closest_name() -> None:
    with pytest.raises(ConfigError, match=r"Unknown dialect 'neo4' \(did you mean 'neo4j'\?\)"):
        get_dialect("neo4")
    assert isinstance(get_dialect("FalkorDB"), FalkorDBDialect)


def test_subquery_forms_differ() -> None:
    body = "MATCH (a)-->(b) RETURN b"
    assert Neo4jDialect().subquery(["a"], body) == "CALL (a) {\nMATCH (a)-->(b) RETURN b\n}"
    assert FalkorDBDialect().subquery(["a"], body) == "CALL {\nWITH a\nMATCH (a)-->(b) RETURN b\n}"


def test_score_to_l2() -> None:
    # Neo4j euclidean score = 1 / (1 + d^2); FalkorDB yields d itself.
    import math

    neo = Neo4jDialect().score_to_l2("score")
    d = 1.7
    assert math.isclose(eval(neo.replace("sqrt", "math.sqrt"),
                             {"math": math, "score": 1 / (1 + d * d)}), d)
    assert FalkorDBDialect().score_to_l2("score") == "score"


def test_vector_values() -> None:
    assert Neo4jDialect().vector_value("row.v") == "row.v"
    assert FalkorDBDialect().vector_value("row.v") == "vecf32(row.v)"


def test_all_distinct_is_pairwise() -> None:
    assert Neo4jDialect.all_distinct(["r1", "r2", "r3"]) == [
        "r1 <> r2", "r1 <> r3", "r2 <> r3"]


@pytest.mark.parametrize("dialect", [Neo4jDialect(), FalkorDBDialect()])
def test_fulltext_query_text_escapes_syntax(dialect) -> None:
    text = dialect.fulltext_query_text('Paris, Texas (1984) "x" -y')
    for ch in '(")':
        assert f"\\{ch}" in text or ch not in dialect.FULLTEXT_SPECIAL


def test_falkordb_constraint_is_an_engine_command() -> None:
    ops = FalkorDBDialect().create_unique_constraint("Entity", "id")
    assert len(ops) == 1 and isinstance(ops[0], EngineCommand)
    assert ops[0].name == "GRAPH.CONSTRAINT"
    neo = Neo4jDialect().create_unique_constraint("Entity", "id")
    assert isinstance(neo[0], Statement) and "REQUIRE n.`id` IS UNIQUE" in neo[0].text
