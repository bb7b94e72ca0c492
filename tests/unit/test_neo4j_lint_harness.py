"""The offline Neo4j Cypher linter harness can both pass and fail queries.

These tests prove that ``tests.support.neo4j_lint`` (Neo4j's own front-end run under
Node.js, CYPHER 5, Neo4j 5.26 signatures) reports nothing on valid Neo4j 5 Cypher and
reports syntax errors, removed/unknown functions, unknown procedures and wrong argument
counts. They skip only when node or the linter's node_modules are missing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support import neo4j_lint
from tests.support.neo4j_lint import (
    LintDiagnostic,
    format_diagnostics,
    lint_available,
    lint_queries,
)

CLEAN_QUERIES: list[str] = [
    "MATCH (n:Entity {id: $id}) RETURN n",
    "CALL db.index.vector.queryNodes($index, $k, $q) YIELD node, score "
    "RETURN node.id AS id, sqrt(1.0 / score - 1.0) AS l2",
    "CREATE VECTOR INDEX entity_embedding IF NOT EXISTS FOR (n:Entity) ON (n.embedding) "
    "OPTIONS {indexConfig: {`vector.dimensions`: 384, "
    "`vector.similarity_function`: 'euclidean'}}",
    "CREATE FULLTEXT INDEX entity_name IF NOT EXISTS FOR (n:Entity) ON EACH [n.name]",
    "CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (n:Entity) REQUIRE n.id IS UNIQUE",
    "MATCH (a) CALL (a) { MATCH (a)-->(b) RETURN b } RETURN b",
    # labels, relationship types and properties unknown to any schema: no warnings
    "MATCH (n:Never_Seen:`Some Label`)-[r:NEW_REL_TYPE]->(m) "
    "RETURN n.whatever AS w, r.weight AS x, m.xyz AS y",
    "UNWIND $rows AS row\nMERGE (n:Entity {id: row.id})\nSET n += row.props\nRETURN count(n) AS c",
    "CALL db.index.vector.queryRelationships($index, $k, $q) YIELD relationship, score "
    "RETURN elementId(relationship) AS rid, score",
    "CALL db.index.fulltext.queryNodes($index, $text, {limit: $limit}) YIELD node, score "
    "RETURN node, score",
    "CALL db.index.fulltext.queryRelationships($index, $text) YIELD relationship, score "
    "RETURN relationship, score",
    "CALL db.awaitIndexes(300)",
    "CALL db.awaitIndex('entity_embedding', 300)",
    "CALL db.labels() YIELD label RETURN label",
    "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType",
    "CALL db.propertyKeys() YIELD propertyKey RETURN propertyKey",
    "CALL dbms.components() YIELD name, versions, edition RETURN name, versions, edition",
    "MATCH (n:Entity) WHERE n.embedding IS NOT NULL "
    "RETURN n.id AS id, vector.similarity.euclidean(n.embedding, $q) AS s1, "
    "vector.similarity.cosine(n.embedding, $q) AS s2",
    "MATCH (n) RETURN coalesce(n.name, toString(n.id)) AS name, toInteger('1') AS i, "
    "toFloat('1.5') AS f, size(labels(n)) AS nl, keys(n) AS ks",
    "MATCH ()-[r]->() RETURN type(r) AS t, count(*) AS c",
    "MATCH (n:Entity) WHERE n.id IN $ids DETACH DELETE n",
    "MATCH (n:Entity)\nOPTIONAL MATCH (n)-[r]-(m)\nRETURN n, collect(m) AS ms LIMIT $limit",
]

# (id, query, expected severity, substring expected in one diagnostic's message)
BROKEN_QUERIES: list[tuple[str, str, str, str]] = [
    ("syntax-error", "MATCH (n RETURN n", "error", "Invalid input"),
    (
        "removed-exists-property",
        "MATCH (n) RETURN exists(n.prop)",
        "error",
        "no longer supported",
    ),
    (
        "unknown-procedure",
        "CALL db.index.vector.nope(1)",
        "error",
        "Procedure db.index.vector.nope is not present",
    ),
    (
        "falkordb-procedure",
        "CALL db.idx.vector.queryNodes('Entity', 'embedding', 5, vecf32($q)) "
        "YIELD node RETURN node",
        "error",
        "Procedure db.idx.vector.queryNodes is not present",
    ),
    (
        "falkordb-function",
        "RETURN vecf32([1.0, 2.0]) AS v",
        "error",
        "Function vecf32 is not present",
    ),
    (
        "procedure-too-few-args",
        "CALL db.index.vector.queryNodes($index, $k) YIELD node RETURN node",
        "error",
        "required number of arguments",
    ),
    (
        "procedure-too-many-args",
        "CALL db.awaitIndexes(300, 1, 2)",
        "error",
        "arguments",
    ),
    (
        "procedure-unknown-yield",
        "CALL db.index.vector.queryNodes($index, $k, $q) YIELD node, distance RETURN node",
        "error",
        "Unknown procedure output: `distance`",
    ),
    (
        "function-too-few-args",
        "RETURN vector.similarity.cosine([1.0]) AS s",
        "error",
        "Insufficient parameters",
    ),
    ("unknown-function", "RETURN nope(1) AS x", "error", "Function nope is not present"),
    ("apoc-not-in-plain-neo4j", "CALL apoc.create.uuids(1)", "error", "is not present"),
    ("undefined-variable", "MATCH (n) RETURN m", "error", "Variable `m` not defined"),
    (
        "importing-with-subquery-deprecated",
        "MATCH (a) CALL { WITH a MATCH (a)-->(b) RETURN b } RETURN b",
        "warning",
        "deprecated",
    ),
    ("id-function-deprecated", "MATCH (n) RETURN id(n) AS i", "warning", "deprecated"),
    ("cypher-25-prefix", "CYPHER 25 MATCH (n) RETURN n", "error", "[harness]"),
]

REQUIRED_PROCEDURES = [
    "db.index.vector.queryNodes",
    "db.index.vector.queryRelationships",
    "db.index.fulltext.queryNodes",
    "db.index.fulltext.queryRelationships",
    "db.awaitIndexes",
    "db.awaitIndex",
    "db.labels",
    "db.relationshipTypes",
    "db.propertyKeys",
    "dbms.components",
]
REQUIRED_FUNCTIONS = [
    "vector.similarity.euclidean",
    "vector.similarity.cosine",
    "sqrt",
    "coalesce",
    "toString",
    "toInteger",
    "toFloat",
    "size",
    "labels",
    "type",
    "keys",
    "elementId",
    "count",
    "collect",
]

_POSITION_QUERIES = ["MATCH (n RETURN n", "MATCH (n)\nRETURN\n  m"]


def _require_linter() -> None:
    reason = lint_available()
    if reason is not None:
        pytest.skip(f"Neo4j Cypher linter unavailable: {reason}")


@pytest.fixture(scope="module")
def linted() -> dict[str, list[LintDiagnostic]]:
    """All queries of this module linted in one node process."""
    _require_linter()
    queries = CLEAN_QUERIES + [q for _, q, _, _ in BROKEN_QUERIES] + _POSITION_QUERIES
    results = lint_queries(queries)
    assert len(results) == len(queries)
    return dict(zip(queries, results, strict=True))


@pytest.mark.parametrize("query", CLEAN_QUERIES)
def test_clean_query_has_no_diagnostics(
    linted: dict[str, list[LintDiagnostic]], query: str
) -> None:
    diags = linted[query]
    assert diags == [], format_diagnostics(query, diags)


@pytest.mark.parametrize(
    ("query", "severity", "fragment"),
    [pytest.param(q, s, f, id=i) for i, q, s, f in BROKEN_QUERIES],
)
def test_broken_query_is_reported(
    linted: dict[str, list[LintDiagnostic]], query: str, severity: str, fragment: str
) -> None:
    diags = linted[query]
    assert diags, f"expected a diagnostic for {query!r}"
    assert any(d.severity == severity and fragment in d.message for d in diags), (
        f"expected a {severity} containing {fragment!r}\n" + format_diagnostics(query, diags)
    )


def test_positions_are_one_based(linted: dict[str, list[LintDiagnostic]]) -> None:
    (syntax,) = linted["MATCH (n RETURN n"]
    assert (syntax.severity, syntax.line, syntax.column) == ("error", 1, 10)
    (undefined,) = linted["MATCH (n)\nRETURN\n  m"]
    assert (undefined.severity, undefined.line, undefined.column) == ("error", 3, 3)


def test_results_keep_input_order() -> None:
    _require_linter()
    bad, good = "MATCH (n RETURN n", "RETURN 1 AS one"
    results = lint_queries([bad, good, bad, good])
    assert [bool(r) for r in results] == [True, False, True, False]


def test_no_queries_need_no_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(neo4j_lint.shutil, "which", lambda _name: None)
    assert lint_queries([]) == []


def test_signatures_file_has_what_kgdb_needs() -> None:
    data = json.loads((neo4j_lint.LINT_DIR / "neo4j5_signatures.json").read_text())
    assert data["defaultLanguage"] == "CYPHER 5"
    assert isinstance(data["_handwritten"], list)
    # no label list: unknown labels / rel types must not produce warnings
    assert "labels" not in data
    assert "relationshipTypes" not in data
    procedures = data["procedures"]["CYPHER 5"]
    functions = data["functions"]["CYPHER 5"]
    for name in REQUIRED_PROCEDURES:
        assert procedures[name]["name"] == name
        assert procedures[name]["signature"].startswith(name + "(")
    for name in REQUIRED_FUNCTIONS:
        assert functions[name]["name"] == name
    # plugins are not part of a plain Neo4j 5.26
    assert not [n for n in [*procedures, *functions] if n.startswith(("apoc.", "gds."))]


def test_lint_available_reports_missing_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(neo4j_lint.shutil, "which", lambda _name: None)
    reason = lint_available()
    assert reason is not None and "node not found" in reason
    with pytest.raises(RuntimeError, match="node not found"):
        lint_queries(["RETURN 1"])


def test_lint_available_reports_missing_node_modules(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if shutil.which("node") is None:
        pytest.skip("node not found on PATH")
    shutil.copy(neo4j_lint.LINT_DIR / "package.json", tmp_path / "package.json")
    monkeypatch.setattr(neo4j_lint, "LINT_DIR", tmp_path)
    reason = lint_available()
    assert reason is not None
    assert "npm ci --prefix tests/neo4j_lint" in reason


def test_node_failure_raises_with_stderr(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _require_linter()
    script = tmp_path / "broken.mjs"
    script.write_text("process.stderr.write('boom from node\\n'); process.exit(7);\n")
    monkeypatch.setattr(neo4j_lint, "LINT_SCRIPT", script)
    with pytest.raises(RuntimeError, match=r"(?s)exit 7.*boom from node"):
        lint_queries(["RETURN 1"])
