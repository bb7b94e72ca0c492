"""Golden table of the statements of triple text representations, KG-Retriever's KG level
and KG-CQR's extraction (kgdb/cypher/triples.py, kgdb/cypher/documents.py), both dialects
side by side in tests/unit/goldens/ttr.json; every Neo4j text linted.

Regenerate with ``KGDB_UPDATE_GOLDENS=1 pytest tests/unit/test_ttr_goldens.py`` and review
the diff."""

from __future__ import annotations

from kgdb.cypher import documents, triples
from tests.support.goldens import Case, assert_neo4j_lints_clean, validate_all

HOSTILE = "x`]->() DELETE n //"
VECTOR = [0.6, 0.8]

CASES = [
    Case("fact_types", {}, lambda d: triples.fact_types(d)),
    Case("facts_of_type", {"type": "directed_by"},
         lambda d: triples.facts_of_type(d, "directed_by")),
    Case("facts_of_type[hostile]", {"type": HOSTILE},
         lambda d: triples.facts_of_type(d, HOSTILE)),
    Case("set_fact_texts", {"type": "directed_by", "rows": 1},
         lambda d: triples.set_fact_texts(d, "directed_by", [
             {"h": "Kismet", "t": "William Dieterle",
              "text": "Kismet directed by William Dieterle", "embedding": VECTOR}])),
    Case("nearest_facts", {"types": ["directed_by", "starred_actors"], "k": 5},
         lambda d: triples.nearest_facts(d, ["directed_by", "starred_actors"], VECTOR, 5)),
    Case("entity_level_triples", {"documents": [["Kismet", 1.0]], "threshold": 0.1, "t": 30},
         lambda d: documents.entity_level_triples(d, [("Kismet", 1.0)], VECTOR, 0.1, 30)),
    Case("chunks_by_id", {"ids": ["kismet#0001#000"]},
         lambda d: documents.chunks_by_id(["kismet#0001#000"])),
    Case("create_relationship_vector_index", {"type": "directed_by", "dimension": 384},
         lambda d: d.create_vector_index("directed_by", "embedding", 384, relationship=True)),
]


def test_ttr_goldens() -> None:
    table = validate_all("ttr", CASES)
    hostile = next(c for c in table["cases"] if c["case"] == "facts_of_type[hostile]")
    assert "`x``]->() DELETE n //`" in "\n".join(hostile["neo4j"]["cypher"])
    assert hostile["falkordb"]["error"] == "InvalidIdentifierError"
    assert_neo4j_lints_clean(table)


def test_values_are_parameters() -> None:
    from kgdb.dialects import get_dialect

    for name in ("neo4j", "falkordb"):
        d = get_dialect(name)
        stmt = triples.nearest_facts(d, ["directed_by"], VECTOR, 5)
        assert "0.6" not in stmt.text and stmt.params["k"] == 5
        stmt = documents.entity_level_triples(d, [("Kismet", 1.0)], VECTOR, 0.1, 30)
        assert "Kismet" not in stmt.text and stmt.params["threshold"] == 0.1
