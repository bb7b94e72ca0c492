"""Golden table of the document pipeline's statements (kgdb/cypher/documents.py), both
dialects side by side in tests/unit/goldens/documents.json; every Neo4j text linted.

Regenerate with ``KGDB_UPDATE_GOLDENS=1 pytest tests/unit/test_documents_goldens.py`` and
review the diff."""

from __future__ import annotations

from kgdb.cypher import documents as cy
from tests.support.goldens import Case, assert_neo4j_lints_clean, validate_all

V = [0.25, 0.5]
IDS = ["kismet", "juarez"]
HOSTILE = "x`]->() DELETE n //"
ENTITY = {"id": "Kismet", "name": "Kismet", "type": "Movie", "description": "a 1944 film",
          "synonyms": ["kismet"], "embedding": V}

CASES = [
    Case("document_states", {"ids": IDS}, lambda d: cy.document_states(IDS)),
    Case("unsupport_facts", {"ids": IDS}, lambda d: cy.unsupport_facts(IDS)),
    Case("delete_unsupported_facts", {"ids": IDS}, lambda d: cy.delete_unsupported_facts(IDS)),
    Case("delete_chunks", {"ids": IDS}, lambda d: cy.delete_chunks(IDS)),
    Case("delete_orphan_entities", {}, lambda d: cy.delete_orphan_entities()),
    Case("delete_orphan_concepts", {}, lambda d: cy.delete_orphan_concepts()),
    Case("delete_documents", {"ids": IDS}, lambda d: cy.delete_documents(IDS)),
    Case("merge_documents", {}, lambda d: cy.merge_documents(
        [{"id": "kismet", "title": "Kismet", "source": "kismet.md", "format": "markdown"}])),
    Case("merge_chunks", {}, lambda d: cy.merge_chunks(d, [
        {"id": "kismet#0000#000", "document": "kismet", "position": 0, "text": "Kismet is...",
         "headings": ["Kismet"], "title": "Kismet > Kismet", "embedding": V}])),
    Case("entity_names", {}, lambda d: cy.entity_names(d)),
    Case("schema_relation_types", {}, lambda d: cy.schema_relation_types()),
    Case("merge_extracted_entities", {"type_label": "Movie"},
         lambda d: cy.merge_extracted_entities(d, [ENTITY], "Movie")),
    Case("merge_extracted_entities[no type]", {},
         lambda d: cy.merge_extracted_entities(d, [ENTITY])),
    Case("link_mentions", {}, lambda d: cy.link_mentions([("Kismet", "kismet#0000#000")])),
    Case("merge_extracted_facts", {"relation": "directed_by"}, lambda d: cy.merge_extracted_facts(
        d, "directed_by", [("Kismet", "William Dieterle", "kismet#0000#000")])),
    Case("merge_extracted_facts[hostile]", {"relation": HOSTILE},
         lambda d: cy.merge_extracted_facts(d, HOSTILE, [])),
    Case("merge_concept_links", {}, lambda d: cy.merge_concept_links(
        [("Kismet", "SemanticType/film", "film", "kismet#0000#000")])),
    Case("merge_broader_concepts", {}, lambda d: cy.merge_broader_concepts(
        [("SemanticType/film director", "SemanticType/director", "kismet#0000#000")])),
    Case("note_mentions", {}, lambda d: cy.note_mentions(
        [{"entity": "Kismet", "chunk": "kismet#0000#000", "description": "a 1944 film",
          "synonyms": ["kismet"], "rank": 1}])),
    Case("unsupport_concepts", {"ids": IDS}, lambda d: cy.unsupport_concepts(IDS)),
    Case("delete_unsupported_concept_edges", {},
         lambda d: cy.delete_unsupported_concept_edges()),
    Case("noted_entities", {"ids": IDS}, lambda d: cy.noted_entities(IDS)),
    Case("entity_notes", {"ids": ["Kismet"]}, lambda d: cy.entity_notes(["Kismet"])),
    Case("set_entity_notes", {}, lambda d: cy.set_entity_notes(
        [{"id": "Kismet", "description": None, "described": None, "synonyms": []}])),
    Case("set_document_hashes", {}, lambda d: cy.set_document_hashes([("kismet", "ab12", 3)])),
    Case("nearest_chunk_documents", {"k": 100},
         lambda d: cy.nearest_chunk_documents(d, V, 100)),
    Case("entity_documents", {"ids": ["Kismet", "William Dieterle"]},
         lambda d: cy.entity_documents(["Kismet", "William Dieterle"])),
    Case("collaborating_documents[one hop]", {"n": 3, "hops": 1},
         lambda d: cy.collaborating_documents(d, V, 3, 1)),
    Case("collaborating_documents[two hops]", {"n": 3, "hops": 2},
         lambda d: cy.collaborating_documents(d, V, 3, 2)),
]


def test_documents_goldens() -> None:
    table = validate_all("documents", CASES)
    assert_neo4j_lints_clean(table)
