"""Text embeddings: an :class:`Embedder` interface, offline MiniLM by default, a persistent cache."""

from kgdb.embed.base import Embedder
from kgdb.embed.cache import CachedEmbedder, EmbeddingCache
from kgdb.embed.minilm import MiniLMEmbedder
from kgdb.embed.models import OpenAIEmbedder, SentenceTransformerEmbedder, default_embedder

__all__ = ["CachedEmbedder", "Embedder", "EmbeddingCache", "MiniLMEmbedder", "OpenAIEmbedder",
           "SentenceTransformerEmbedder", "default_embedder"]
