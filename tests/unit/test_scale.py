"""The synthetic graph of ``kgdb bench scale``: deterministic, shaped as documented (skewed
degrees, typed relations, names sharing words), and composed vectors whose neighbours share
words."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from kgdb.scale import ENTITY_TYPES, RELATIONS, ComposedEmbedder, ScaleError, generate

WORDS = ["Harbor", "Crimson", "Vale", "River", "Stone", "Light", "Garden", "Tower", "Silver",
         "Forest", "North", "Bridge"]


def test_generation_is_deterministic_and_shaped() -> None:
    a = generate(3000, 15000, seed=1, vocab=WORDS)
    b = generate(3000, 15000, seed=1, vocab=WORDS)
    assert a.names == b.names and np.array_equal(a.heads, b.heads)
    assert np.array_equal(a.tails, b.tails) and np.array_equal(a.relations, b.relations)
    assert len(set(a.names)) == 3000 and a.facts > 10000
    triples = set(zip(a.heads.tolist(), a.relations.tolist(), a.tails.tolist(), strict=True))
    assert len(triples) == a.facts and not np.any(a.heads == a.tails)
    for h, r, t in list(triples)[:2000]:  # every fact respects its relation's signature
        _, head_type, tail_type = RELATIONS[r]
        assert ENTITY_TYPES[a.types[h]] == head_type and ENTITY_TYPES[a.types[t]] == tail_type
    degrees = sorted(Counter(a.heads.tolist() + a.tails.tolist()).values(), reverse=True)
    assert degrees[0] > 10 * float(np.median(degrees))  # hubs and a long tail
    assert generate(3000, 15000, seed=2, vocab=WORDS).names != a.names
    with pytest.raises(ScaleError):
        generate(10, 5, vocab=WORDS)


class _Words:
    """A stand-in model for the words only: orthogonal word vectors (the real model is used
    by the live bench)."""

    model_id = "test-words"
    dimension = 64

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, WORDS.index(t) if t in WORDS else self.dimension - 1] = 1.0
        return out


def test_composed_vectors_put_shared_words_near() -> None:
    e = ComposedEmbedder(_Words(), WORDS)  # type: ignore[arg-type]
    v = e.embed(["Harbor Crimson 1", "Harbor Crimson 2", "Tower Silver Forest 3", "other text"])
    assert np.allclose(np.linalg.norm(v[:3], axis=1), 1.0, atol=1e-6)
    assert float(v[0] @ v[1]) > 0.9 > float(v[0] @ v[2])
    assert v[3][63] == 1.0 and e.composed == 3  # not a synthetic name: the model embeds it
    assert np.array_equal(e.embed(["Harbor Crimson 1"])[0], v[0])
