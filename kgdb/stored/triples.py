"""Which facts are searchable by meaning: the relation types whose facts carry a triple text
embedding under a relationship vector index (``kgdb index triples`` writes them; ``triple-context``
(KG-CQR) and the service's fact search read them)."""

from __future__ import annotations

from kgdb.cypher import triples as cy
from kgdb.engine.base import GraphStore


def indexed_types(store: GraphStore) -> list[str]:
    """The relation types whose facts are searchable by TTR (they have the vector index)."""
    return sorted({i.label for i in store.indexes()
                   if i.kind == "vector" and i.entity == "relationship"
                   and i.properties == (cy.EMBEDDING,)})
