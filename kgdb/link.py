"""Linking by meaning: candidates for names, relation phrases and types from the vector indexes.

Distances are exact L2 distances between the query text's embedding and the stored embedding
(the dialect converts each engine's score; tests check it against numpy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore


@dataclass(frozen=True)
class Candidate:
    id: str
    """The node's key: ``Entity.id``, ``RelationType.name``, ``EntityType.name``."""
    name: str
    """Its human text: ``Entity.name``, ``RelationType.text``, ``EntityType.text``."""
    distance: float


_KEYS = {"Entity": ("id", "name"), "Concept": ("id", "name"), "Chunk": ("id", "text"),
         "RelationType": ("name", "text"), "EntityType": ("name", "text")}


def nearest(store: GraphStore, embedder: Embedder, label: str, texts: Sequence[str],
            k: int) -> dict[str, list[Candidate]]:
    """The ``k`` nodes of ``label`` nearest to each text, closest first."""
    key, shown = _KEYS[label]
    statement = store.dialect.nearest_nodes(label, "embedding", returns=(key, shown))
    unique = list(dict.fromkeys(texts))
    vectors = embedder.embed(unique)
    out: dict[str, list[Candidate]] = {}
    for text, vector in zip(unique, vectors, strict=True):
        rows = store.run(statement, {"k": int(k), "vector": vector}).rows
        out[text] = sorted((Candidate(str(r[0]), str(r[1]), float(r[2])) for r in rows),
                           key=lambda c: (c.distance, c.id))[:k]
    return out


def link_entities(store: GraphStore, embedder: Embedder, texts: Sequence[str],
                  k: int = 16) -> dict[str, list[Candidate]]:
    return nearest(store, embedder, "Entity", texts, k)


def link_relations(store: GraphStore, embedder: Embedder, phrases: Sequence[str],
                   k: int = 16) -> dict[str, list[Candidate]]:
    return nearest(store, embedder, "RelationType", phrases, k)


def link_types(store: GraphStore, embedder: Embedder, texts: Sequence[str],
               k: int = 4) -> dict[str, list[Candidate]]:
    return nearest(store, embedder, "EntityType", texts, k)
