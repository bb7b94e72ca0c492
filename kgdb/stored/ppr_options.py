"""The ``ppr`` retrieval graph's build options: kgdb/documents/ppr_graph.py builds the graph
with them and stores them, kgdb/retrieve/ppr.py reads them back."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kgdb.errors import KgdbError

SYNONYM_THRESHOLD = 0.8
"""HippoRAG 2's synonym edge threshold (cosine of the phrases' name embeddings)."""
TITLE_WEIGHT = 20.0
"""Weight of the edges between a document's title phrase and its chunks (kgdb/documents/ppr_graph.py);
1 gives HippoRAG 2's uniform passage-phrase edges."""
FORMAT = 4
"""The graph's format: 2 marks title edges, 3 has phrases that stop at sentence ends
(kgdb/documents/spans.py), 4 has phrases of any script (Unicode capitals, NFC) and at most
16 nearest synonyms per phrase (kgdb/documents/ppr_graph.py); a graph of an older format is
rebuilt."""


class GraphBuildError(KgdbError):
    """The retrieval graph cannot be built."""


@dataclass(frozen=True)
class GraphOptions:
    synonym_threshold: float = SYNONYM_THRESHOLD
    gazetteer: bool = True
    """Phrases also from the knowledge graph's entity names (any case)."""
    titles: bool = True
    """Each chunk's document title is one of its phrases."""
    title_weight: float = TITLE_WEIGHT
    """The projection's weight of title edges (kgdb/documents/ppr_graph.py)."""

    def check(self) -> GraphOptions:
        if not 0.0 < self.synonym_threshold <= 1.0:
            raise GraphBuildError(f"synonym threshold must be in (0, 1], not "
                                  f"{self.synonym_threshold}")
        if not 0.0 < self.title_weight <= 1000.0:
            raise GraphBuildError(f"title weight must be in (0, 1000], not "
                                  f"{self.title_weight}")
        return self

    def extraction(self) -> dict[str, Any]:
        return {"gazetteer": self.gazetteer, "titles": self.titles, "format": FORMAT}


def options_of(text: str) -> GraphOptions:
    """The options stored with a graph (JSON); keys this version does not know are ignored."""
    stored = json.loads(text)
    known = {k: stored[k] for k in GraphOptions.__dataclass_fields__ if k in stored}
    return GraphOptions(**known)
