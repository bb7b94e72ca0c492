"""Every statement kgdb's core generates for Neo4j passes Neo4j's own Cypher front-end with
zero diagnostics (errors and warnings alike)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgdb.cypher import catalog, explore, housekeeping, load
from kgdb.dialects import IndexInfo, Neo4jDialect
from kgdb.schema import Schema, parse_schema_file
from kgdb.schema.apply import desired_indexes, index_operations
from kgdb.statement import Statement
from tests.support.neo4j_lint import format_diagnostics, lint_available, lint_queries

ROOT = Path(__file__).resolve().parents[2]


def core_statements() -> list[str]:
    d = Neo4jDialect()
    texts: list[str] = []
    schemas = [Schema(source="<built-in>")] + [
        parse_schema_file(p) for p in sorted((ROOT / "loaders" / "schemas").glob("*.schema"))]
    for schema in schemas:
        for spec in desired_indexes(schema, 384, unique_needs_range=d.UNIQUE_NEEDS_RANGE_INDEX):
            texts += [op.text for op in index_operations(d, spec) if isinstance(op, Statement)]
    builders = [catalog.merge_hierarchy(d, "Concept", "id", "locateAt", []),
                load.merge_facts(d, "x`]->() DELETE n //", []),
                explore.count_nodes(),
                d.list_indexes(), d.list_constraints(), housekeeping.label_counts(),
                housekeeping.relationship_type_counts(), housekeeping.ping(),
                housekeeping.delete_some_nodes(10), d.components(),
                d.list_databases()]
    builders += [s for s in (d.find_functions(["apoc.version"]),
                             d.find_procedures(["apoc.custom.installProcedure"])) if s]
    # housekeeping.version_function_call (RETURN apoc.version() ...) is left out: the linter knows only
    # Neo4j's built-in signatures, and kgdb sends it only where SHOW FUNCTIONS found the
    # function (run live in tests/neo4j/test_neo4j_extras.py::test_stats_shows_apoc_and_gds).
    builders += [op for op in d.create_existence_constraint("Film", "title")
                 if isinstance(op, Statement)]
    texts += [s.text for s in builders]
    await_stmt = d.await_indexes()
    assert await_stmt is not None
    texts.append(await_stmt.text)
    for label, key in [("Entity", ("id", "name")), ("RelationType", ("name", "text")),
                       ("EntityType", ("name", "text")), ("Concept", ("id", "name")),
                       ("Chunk", ("id", "text"))]:
        texts.append(housekeeping.nearest_nodes(d, label, "embedding", [0.5] * 4, 5, returns=key).text)
    texts.append(f"{d.fulltext_search_call('Entity', ['name'], '$q')} "
                 "RETURN node.id AS id, score ORDER BY score DESC LIMIT $k")
    for info in [IndexInfo("unique", "node", "Entity", ("id",), name="kgdb_entity_id_unique"),
                 IndexInfo("vector", "node", "Entity", ("embedding",),
                           name="kgdb_entity_embedding_vector")]:
        texts += [op.text for op in d.drop_index(info) if isinstance(op, Statement)]
    for stmt in d.create_vector_index("Entity", "embedding", 384):
        assert isinstance(stmt, Statement)
    # a stored procedure's body with its constants written as literals; the other bodies
    # call APOC, which the linter does not know: they run live in test_procedures_neo4j.py
    from kgdb.cypher.procedures import ruleset_procedure
    from kgdb.dsl.rules_check import load_rules

    rules = load_rules((ROOT / "dsl/examples/hypertension.rules").read_text(), "hypertension")
    texts.append(ruleset_procedure(d, "hypertension", rules).body)
    return texts


def test_core_statements_lint_clean() -> None:
    reason = lint_available()
    if reason:
        pytest.skip(reason)
    texts = core_statements()
    assert len(texts) > 40
    problems = [format_diagnostics(q, diags)
                for q, diags in zip(texts, lint_queries(texts), strict=True) if diags]
    assert not problems, "\n\n".join(problems)
