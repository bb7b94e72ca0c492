"""The numpy MiniLM (the default embedder) against sentence-transformers on torch: the same
vectors within 1e-5 cosine, on texts of every kind the graph holds (names, questions, long
documents past the 256-token truncation, accents, empty strings, batches of mixed lengths)."""

from __future__ import annotations

import numpy as np
import pytest

from kgdb.embed.minilm import MODEL_ID, MiniLMEmbedder, read_safetensors
from kgdb.embed.models import SentenceTransformerEmbedder, default_embedder

TEXTS = [
    "Tom Hanks", "Kismet", "William Dieterle", "directed_by", "starred_actors", "",
    "Who directed the film Kismit, and who starred in it?",
    "Marlene Dietrich", "Der Blaue Engel", "Amélie Poulain", "東京物語", "a",
    "UNKNOWN director 1", "release_year 1944", "bd-r",
    " ".join(["the long document about films and their directors"] * 60),  # > 256 tokens
    "Hypertension: systolic blood pressure >= 140 mmHg or diastolic >= 90 mmHg.",
    "  leading and trailing spaces  ", "MiXeD CaSe WoRdS", "x" * 300,
]


@pytest.fixture(scope="module")
def both() -> tuple[np.ndarray, np.ndarray]:
    pytest.importorskip("sentence_transformers")
    ours = MiniLMEmbedder(batch_size=7).embed(TEXTS)
    theirs = SentenceTransformerEmbedder().embed(TEXTS)
    return ours, theirs


def test_vectors_equal_sentence_transformers_within_1e5_cosine(both) -> None:
    ours, theirs = both
    assert ours.shape == theirs.shape == (len(TEXTS), 384)
    assert ours.dtype == np.float32
    cosine = (ours * theirs).sum(axis=1) / (np.linalg.norm(ours, axis=1)
                                            * np.linalg.norm(theirs, axis=1))
    assert float((1.0 - cosine).max()) < 1e-5, (1.0 - cosine)
    assert float(np.abs(ours - theirs).max()) < 1e-4


def test_order_and_batching_do_not_change_a_vector() -> None:
    model = MiniLMEmbedder(batch_size=3)
    alone = np.stack([model.embed([t])[0] for t in TEXTS[:6]])
    together = model.embed(list(reversed(TEXTS[:6])))[::-1]
    assert np.allclose(alone, together, atol=1e-5)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert model.embed([]).shape == (0, 384)


def test_default_embedder_is_the_numpy_model_under_the_same_cache_key(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("KGDB_HOME", str(tmp_path))
    embedder = default_embedder()
    assert isinstance(embedder.inner, MiniLMEmbedder)
    assert embedder.model_id == MODEL_ID == SentenceTransformerEmbedder.model_id


def test_safetensors_reader_reads_names_shapes_and_values(tmp_path) -> None:
    import json
    import struct

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([7, -8], dtype=np.int64)
    header = {"__metadata__": {"format": "pt"},
              "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
              "b": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]}}
    raw = json.dumps(header).encode()
    path = tmp_path / "t.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + a.tobytes() + b.tobytes())
    tensors = read_safetensors(path)
    assert sorted(tensors) == ["a", "b"]
    assert np.array_equal(tensors["a"], a) and np.array_equal(tensors["b"], b)


def test_batches_hold_at_most_the_token_budget_and_batch_size() -> None:
    # Long passages go a few at a time (a 256-passage batch was memory-bound: 3x slower),
    # short names many at a time; every text once, by length.
    model = MiniLMEmbedder(batch_size=8, tokens_per_batch=100)
    lengths = [5] * 30 + [40] * 5 + [200, 3]
    batches = model.batches(lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert len(b) <= 8
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 100
    assert [len(b) for b in batches if lengths[b[0]] == 40] == [2, 2, 1]
    assert [b for b in batches if 35 in b] == [[35]]  # longer than the budget: alone
    assert MiniLMEmbedder().batches([]) == []


def test_forward_runs_on_the_configured_blas_threads(monkeypatch) -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    seen: list[set[int]] = []
    model = MiniLMEmbedder(threads=1)
    original = model._forward

    def watched(batch):
        seen.append({lib["num_threads"] for lib in threadpoolctl.threadpool_info()
                     if lib["user_api"] == "blas"})
        return original(batch)

    monkeypatch.setattr(model, "_forward", watched)
    model.embed(TEXTS[:4])
    assert seen and all(s <= {1} for s in seen)
    monkeypatch.setenv("KGDB_EMBED_THREADS", "0")
    free = MiniLMEmbedder()
    free._load()
    assert free._blas is None  # 0: the BLAS library's own setting


def test_vectors_do_not_depend_on_the_token_budget() -> None:
    small = MiniLMEmbedder(tokens_per_batch=64).embed(TEXTS)
    large = MiniLMEmbedder(tokens_per_batch=100_000).embed(TEXTS)
    assert np.allclose(small, large, atol=1e-5)
