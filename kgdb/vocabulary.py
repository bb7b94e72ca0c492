"""The graph vocabulary kgdb writes and reads: node labels and structural relationship types.

Every module names these through this one place, so a reader (or a BI tool's author) finds
the whole vocabulary here, and a rename is one edit."""

from __future__ import annotations

ENTITY = "Entity"
EVENT = "Event"
"""Every entity and event node (``:Entity:<EntityType>``)."""
CONCEPT = "Concept"
"""Concept nodes (``:Concept:<ConceptType>``), targets of ``belongTo``."""
DOCUMENT = "Document"
CHUNK = "Chunk"
RELATION_TYPE = "RelationType"
"""The catalog of predicates, searchable by meaning."""
ENTITY_TYPE = "EntityType"
"""The catalog of entity types, searchable by meaning."""

HAS_CHUNK = "hasChunk"
"""``(:Document)-[:hasChunk {position}]->(:Chunk)``."""
SUPPORTING_CHUNKS = "supporting_chunks"
"""The mutual index: ``(:Entity)-[:supporting_chunks]->(:Chunk)``."""
BELONG_TO = "belongTo"
"""``(instance)-[:belongTo]->(:Concept)``: semantic types and rule conclusions."""
SIMILAR = "SIMILAR"
"""KG-Retriever's document layer: ``(a)-[:SIMILAR {score}]->(b)``."""

STRUCTURAL_RELATIONS = (SUPPORTING_CHUNKS, BELONG_TO, "isA", "contains", "synonym", "isPartOf",
                        "causes", "locateAt", HAS_CHUNK, SIMILAR)
"""Relationship types of the knowledge layer, never a fact's relation (a pattern edge that
asks for any relation skips them)."""
