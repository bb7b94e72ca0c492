"""The concept-tree statement: the relationship type is the type's hypernymPredicate, quoted."""

from __future__ import annotations

import pytest

from kgdb.cypher import catalog
from kgdb.dialects import get_dialect
from kgdb.errors import InvalidIdentifierError
from tests.support.neo4j_lint import format_diagnostics, lint_available, lint_queries

DIALECTS = ("falkordb", "neo4j")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_concept_tree_uses_the_hypernym_predicate(dialect: str) -> None:
    d = get_dialect(dialect)
    statement = catalog.merge_hierarchy(d, "Concept", "id", "locateAt")
    assert statement.text == ("UNWIND $rows AS row\n"
                              "MATCH (c:`Concept` {`id`: row.child})\n"
                              "MATCH (p:`Concept` {`id`: row.parent})\n"
                              "MERGE (c)-[:`locateAt`]->(p)")
    assert statement.write and statement.idempotent and not statement.params


@pytest.mark.parametrize("dialect", DIALECTS)
def test_type_hierarchy_stays_is_a(dialect: str) -> None:
    text = catalog.merge_isa(get_dialect(dialect), "EntityType", "name").text
    assert text.endswith("MERGE (c)-[:isA]->(p)")


def test_hostile_predicate_is_quoted_or_refused() -> None:
    hostile = "x`]->() DELETE n //"
    neo = catalog.merge_hierarchy(get_dialect("neo4j"), "Concept", "id", hostile).text
    assert neo.endswith("MERGE (c)-[:`x``]->() DELETE n //`]->(p)")
    with pytest.raises(InvalidIdentifierError):
        catalog.merge_hierarchy(get_dialect("falkordb"), "Concept", "id", hostile)


def test_neo4j_text_lints_clean() -> None:
    reason = lint_available()
    if reason:
        pytest.skip(reason)
    d = get_dialect("neo4j")
    texts = [catalog.merge_hierarchy(d, "Concept", "id", p).text for p in ("isA", "locateAt")]
    problems = [format_diagnostics(q, diags)
                for q, diags in zip(texts, lint_queries(texts), strict=True) if diags]
    assert not problems, "\n\n".join(problems)
