from __future__ import annotations

import abc
from collections.abc import Sequence

import numpy as np


class Embedder(abc.ABC):
    """Turns texts into float32 vectors of a fixed dimension."""

    model_id: str
    """Names the model in the cache key and in the graph's recorded embedding settings."""

    @property
    @abc.abstractmethod
    def dimension(self) -> int: ...

    @abc.abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A ``(len(texts), dimension)`` float32 array, one row per text, in order."""

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]
