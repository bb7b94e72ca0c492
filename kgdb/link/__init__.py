"""The one linker (see :mod:`kgdb.link.linker`): pattern texts to graph candidates.

SimGRAG retrieval, logical forms and every later solver consume its
:class:`~kgdb.ir.LinkedPattern`; no solver looks names up by itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgdb.cypher.link import VectorSearch
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.ir import Candidate
from kgdb.link.linker import (
    ENTITY_TYPE_LABEL,
    RELATION_TYPE_LABEL,
    GivenLinks,
    Linker,
    LinkError,
    LinkReport,
    LinkSettings,
    PatternLinker,
)
from kgdb.link.names import lexical_relation

__all__ = ["GivenLinks", "LinkError", "LinkReport", "LinkSettings", "Linker", "PatternLinker",
           "lexical_relation", "link_entities", "link_relations", "link_types", "nearest"]

_KINDS = {"node": ("Entity", "id", "name"), "relation": (RELATION_TYPE_LABEL, "name", "text"),
          "type": (ENTITY_TYPE_LABEL, "name", "text")}


def nearest(store: GraphStore, embedder: Embedder, kind: str, texts: Sequence[str],
            k: int) -> dict[str, list[Candidate]]:
    """The ``k`` entities (``node``), relation types or entity types nearest to each text by
    meaning, closest first, in one round trip."""
    label, key, shown = _KINDS[kind]
    linker = Linker(store, embedder, LinkSettings(k_nodes=k, k_relations=k, k_types=k))
    unique = list(dict.fromkeys(texts))
    vectors = linker.embed_texts(unique)
    found, _ = linker.search([(kind, VectorSearch(label, key, shown, k, tuple(vectors)),
                                unique)])
    return {text: found[(kind, text)] for text in unique}


def link_entities(store: GraphStore, embedder: Embedder, texts: Sequence[str],
                  k: int = 16) -> dict[str, list[Candidate]]:
    return nearest(store, embedder, "node", texts, k)


def link_relations(store: GraphStore, embedder: Embedder, phrases: Sequence[str],
                   k: int = 16) -> dict[str, list[Candidate]]:
    return nearest(store, embedder, "relation", phrases, k)


def link_types(store: GraphStore, embedder: Embedder, texts: Sequence[str],
               k: int = 4) -> dict[str, list[Candidate]]:
    return nearest(store, embedder, "type", texts, k)
