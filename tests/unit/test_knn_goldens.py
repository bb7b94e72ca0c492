"""Golden table of the document layer's statements (kgdb/cypher/knn.py), both dialects side by
side in tests/unit/goldens/knn.json; every Neo4j text linted except GDS's (the linter's
signature list has no gds.* procedures or functions: those statements run live in
tests/live/test_knn.py::test_gds_equals_vector_index).

Regenerate with ``KGDB_UPDATE_GOLDENS=1 pytest tests/unit/test_knn_goldens.py`` and review
the diff."""

from __future__ import annotations

from kgdb.cypher import knn
from tests.support.goldens import Case, assert_neo4j_lints_clean, validate_all

HOSTILE = "x`]->() DELETE n //"
VECTOR = [0.6, 0.8]
ROWS = [{"id": "kismet", "hash": "3f2a", "neighbours": [{"id": "juarez", "score": 0.71}]}]

CASES = [
    Case("read_layer", {"label": "Document"}, lambda d: knn.read_layer("Document")),
    Case("mark_layer", {"label": "Chunk", "k": 3, "method": "vector", "complete": False},
         lambda d: knn.mark_layer("Chunk", 3, "vector", False)),
    Case("layer_state[Document]", {"label": "Document"},
         lambda d: knn.layer_state(d, "Document", signature_from_document=False)),
    Case("layer_state[Chunk]", {"label": "Chunk"},
         lambda d: knn.layer_state(d, "Chunk", signature_from_document=True)),
    Case("layer_state[hostile]", {"label": HOSTILE},
         lambda d: knn.layer_state(d, HOSTILE, signature_from_document=False)),
    Case("count_similar", {"label": "Document"}, lambda d: knn.count_similar(d, "Document")),
    Case("similar_edges", {"label": "Chunk"}, lambda d: knn.similar_edges(d, "Chunk")),
    Case("document_chunk_vectors", {"ids": ["kismet"]},
         lambda d: knn.document_chunk_vectors(d, ["kismet"])),
    Case("set_document_vectors", {"vectors": [["kismet", VECTOR]]},
         lambda d: knn.set_document_vectors(d, [("kismet", VECTOR)])),
    Case("remove_document_vectors", {"ids": ["kismet"]},
         lambda d: knn.remove_document_vectors(d, ["kismet"])),
    Case("delete_similar_from", {"label": "Chunk", "ids": ["kismet#0001#000"]},
         lambda d: knn.delete_similar_from(d, "Chunk", ["kismet#0001#000"])),
    Case("delete_similar", {"label": "Document", "limit": 10000},
         lambda d: knn.delete_similar(d, "Document", 10000)),
    Case("nearest_by_index", {"label": "Document", "ids": ["kismet"], "k": 3},
         lambda d: knn.nearest_by_index(d, "Document", ["kismet"], 3)),
    Case("nearest_by_scan", {"label": "Chunk", "ids": ["kismet#0001#000"], "k": 3},
         lambda d: knn.nearest_by_scan(d, "Chunk", ["kismet#0001#000"], 3)),
    Case("entering_nodes", {"label": "Document", "changed": ["kismet"], "margin": 1e-6},
         lambda d: knn.entering_nodes(d, "Document", ["kismet"], 1e-6)),
    Case("replace_similar", {"label": "Document", "rows": ROWS},
         lambda d: knn.replace_similar(d, "Document", ROWS)),
    Case("sign_similar", {"label": "Document", "signatures": [["kismet", "3f2a"]]},
         lambda d: knn.sign_similar(d, "Document", [("kismet", "3f2a")])),
    Case("gds_project", {"label": "Document", "graph": "kgdb_knn_document_0"},
         lambda d: knn.gds_project(d, "Document", "kgdb_knn_document_0")),
    Case("gds_knn_similar", {"label": "Document", "graph": "kgdb_knn_document_0", "k": 3,
                             "candidates": 30, "seed": 42},
         lambda d: knn.gds_knn_similar(d, "Document", "kgdb_knn_document_0", 3, 30, 42)),
    Case("gds_drop", {"graph": "kgdb_knn_document_0"},
         lambda d: knn.gds_drop(d, "kgdb_knn_document_0")),
]

GDS_CASES = {"gds_project": "gds.graph.project", "gds_knn_similar": "gds.knn.stream",
             "gds_drop": "gds.graph.drop"}


def test_knn_goldens() -> None:
    table = validate_all("knn", CASES)
    hostile = next(c for c in table["cases"] if c["case"] == "layer_state[hostile]")
    assert "`x``]->() DELETE n //`" in "\n".join(hostile["neo4j"]["cypher"])
    assert hostile["falkordb"]["error"] == "InvalidIdentifierError"
    for name, construct in GDS_CASES.items():  # FalkorDB has no Graph Data Science
        case = next(c for c in table["cases"] if c["case"] == name)
        assert case["falkordb"] == {"unsupported": construct}
    assert_neo4j_lints_clean(table, skip=list(GDS_CASES))


def test_no_builder_leaves_a_value_in_the_text() -> None:
    from kgdb.dialects import get_dialect

    for dialect in ("neo4j", "falkordb"):
        d = get_dialect(dialect)
        for case in CASES:
            if case.name.endswith("[hostile]") or (dialect == "falkordb"
                                                    and case.name in GDS_CASES):
                continue
            built = case.build(d)
            for value in ("kismet", "3f2a", "0.71", "kgdb_knn_document_0"):
                assert value not in built.text, (case.name, dialect)
