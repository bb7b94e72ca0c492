"""The graphs (FalkorDB) or databases (Neo4j) the service answers from: one store per tenant,
opened on first use and shared by its requests; each request gets a :meth:`view` of it."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence

import numpy as np

from kgdb.config import Settings
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.serve.tokens import check_tenant


class Tenants:
    """Stores by tenant name. On Neo4j a tenant is a database of the configured server; on
    FalkorDB a graph of the configured (or embedded) server."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._stores: dict[str, GraphStore] = {}
        self._lock = threading.Lock()

    @property
    def neo4j(self) -> bool:
        return not self.settings.embedded and not (self.settings.uri or "").startswith(
            ("redis", "falkordb"))

    @property
    def default(self) -> str:
        return (self.settings.database or "neo4j") if self.neo4j else self.settings.graph

    def store(self, name: str) -> GraphStore:
        check_tenant(name, "database" if self.neo4j else "graph")
        with self._lock:
            store = self._stores.get(name)
            if store is None:
                from kgdb.engine import connect

                tenant = (dataclasses.replace(self.settings, database=name) if self.neo4j
                          else dataclasses.replace(self.settings, graph=name))
                store = self._stores[name] = connect(tenant)
            return store

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()


class LockedEmbedder(Embedder):
    """The service's one embedding model, used by one request at a time (the model and its
    cache are not meant for concurrent calls)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return self.inner.embed(texts)
