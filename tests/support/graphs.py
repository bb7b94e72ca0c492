"""Small graphs built directly for tests."""

from __future__ import annotations

import numpy as np

from kgdb.statement import Statement


def indexed_entities(store, vectors: np.ndarray) -> None:
    """``(:Entity {id: "<i>", name: "<i>", embedding})`` for each row, with a vector index."""
    d = store.dialect
    for op in d.create_vector_index("Entity", "embedding", int(vectors.shape[1])):
        store.execute(op)
    wait = d.await_indexes()
    if wait is not None:
        store.run(wait)
    store.run(Statement(f"UNWIND $rows AS row CREATE (:Entity {{id: row.id, name: row.id, "
                        f"embedding: {d.vector_value('row.v')}}})",
                        {"rows": [{"id": str(i), "v": v} for i, v in enumerate(vectors)]},
                        write=True))
