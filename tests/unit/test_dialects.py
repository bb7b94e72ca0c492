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


def test_falkordb_scans_the_labels_it_is_told_to() -> None:
    """A label in full_scan is searched by computing every node's distance; any other
    through its HNSW index, as is every label on Neo4j without kgdb's plugin."""
    d = FalkorDBDialect(scan_labels=lambda: frozenset({"Chunk"}))
    scan = d.exact_nearest("Chunk", "embedding", "$k", "$v", d.vector_value("$v"))
    assert d.exact_search("Chunk") and "queryNodes" not in scan
    assert scan.startswith("MATCH (node:`Chunk`)\n")
    assert scan.endswith("vec.euclideanDistance(node.`embedding`, vecf32($v)) AS distance "
                         "WHERE distance IS NOT NULL")
    index = d.exact_nearest("Entity", "embedding", "$k", "$v", d.vector_value("$v"))
    assert not d.exact_search("Entity") and "db.idx.vector.queryNodes('Entity'" in index
    assert not FalkorDBDialect().exact_search("Chunk")  # a fresh dialect: the index
    assert not Neo4jDialect().exact_search("Chunk")


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


# ---------------------------------------------------------------------- GRAPH.BULK rows
def _read_bulk_token(data: bytes, edges: bool) -> tuple[str, list[str], list[list[object]]]:
    """Read one GRAPH.BULK token as FalkorDB's src/bulk_insert/bulk_insert.c does."""
    import struct

    def cstring(at: int) -> tuple[str, int]:
        end = data.index(b"\0", at)
        return data[at:end].decode("utf-8"), end + 1

    def value(at: int) -> tuple[object, int]:
        kind, at = data[at], at + 1
        if kind == 3:
            return cstring(at)
        if kind == 2:
            return struct.unpack_from("<d", data, at)[0], at + 8
        if kind == 5:
            (length,), at = struct.unpack_from("<q", data, at), at + 8
            items = []
            for _ in range(length):
                item, at = value(at)
                items.append(item)
            return items, at
        raise AssertionError(f"type byte {kind} at {at - 1}")

    label, at = cstring(0)
    (count,), at = struct.unpack_from("<I", data, at), at + 4
    keys = []
    for _ in range(count):
        key, at = cstring(at)
        keys.append(key)
    rows: list[list[object]] = []
    while at < len(data):
        row: list[object] = []
        if edges:
            row.extend(struct.unpack_from("<QQ", data, at))
            at += 16
        for _ in keys:
            item, at = value(at)
            row.append(item)
        rows.append(row)
    return label, keys, rows


def test_bulk_insert_rows_read_back_as_the_engine_reads_them() -> None:
    import numpy as np

    from kgdb.dialects.base import BulkEdges, BulkNodes
    from kgdb.errors import UnsupportedFeatureError
    from kgdb.statement import GRAPH_KEY

    d = FalkorDBDialect()
    names = ["Kismet", "naïve ☃", "O'Brien \"x\" \\ y", "tab\there"]
    vectors = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    command = d.bulk_insert(begin=True, nodes=BulkNodes(
        "Entity", ("id", "name"), [(n, n.upper()) for n in names], "embedding", vectors))
    assert command.name == "GRAPH.BULK"
    assert command.args[:6] == (GRAPH_KEY, "BEGIN", 4, 0, 1, 0)
    label, keys, rows = _read_bulk_token(command.args[6], edges=False)
    assert (label, keys) == ("Entity", ["id", "name", "embedding"])
    assert [r[:2] for r in rows] == [[n, n.upper()] for n in names]
    assert np.array_equal(np.array([r[2] for r in rows], dtype=np.float32), vectors)

    pairs = np.array([[0, 1], [3, 2], [1, 1]], dtype=np.uint64)
    command = d.bulk_insert(begin=False, edges=[BulkEdges("directed_by", pairs),
                                                BulkEdges("empty", pairs[:0])])
    assert command.args[:5] == (GRAPH_KEY, 0, 3, 0, 1)
    label, keys, rows = _read_bulk_token(command.args[5], edges=True)
    assert (label, keys, rows) == ("directed_by", [], [[0, 1], [3, 2], [1, 1]])

    # a header separates labels with ':', so such a type is left to Cypher
    assert d.bulk_label_ok("directed_by") and not d.bulk_label_ok("ns:type")
    assert not d.bulk_label_ok("a`b") and not d.bulk_label_ok("")
    with pytest.raises(UnsupportedFeatureError):
        Neo4jDialect().bulk_insert(begin=True)
