"""A catalog update replaces the stored vector on both engines (FalkorDB 4.16.3 skipped a SET
of a vector that compared equal to the stored one, so a renamed type kept its old vector)."""

from __future__ import annotations

import numpy as np
import pytest

from kgdb.cypher import catalog

pytestmark = pytest.mark.live


def _unit(rng: np.random.Generator) -> list[float]:
    v = rng.normal(size=8)
    return (v / np.linalg.norm(v)).tolist()


def test_catalog_update_replaces_the_embedding(store) -> None:
    rng = np.random.default_rng(3)
    v1, v2 = _unit(rng), _unit(rng)
    d = store.dialect
    store.run(catalog.merge_relation_types(d, [("directed_by", "directed by", v1)]))
    store.run(catalog.merge_relation_types(d, [("directed_by", "director of", v2)]))
    row = store.run("MATCH (r:RelationType {name: 'directed_by'}) "
                    "RETURN r.text AS text, r.embedding AS v").records()[0]
    assert row["text"] == "director of"
    assert np.allclose(np.asarray(row["v"], dtype=float), v2, atol=1e-6)

    store.run(catalog.merge_concepts(d, "Disease", [("Disease/Grade 1", "Grade 1", v1)]))
    store.run(catalog.merge_concepts(d, "Disease", [("Disease/Grade 1", "Grade One", v2)]))
    row = store.run("MATCH (c:Concept {id: 'Disease/Grade 1'}) "
                    "RETURN c.name AS name, c.embedding AS v").records()[0]
    assert row["name"] == "Grade One"
    assert np.allclose(np.asarray(row["v"], dtype=float), v2, atol=1e-6)
