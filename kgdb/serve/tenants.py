"""The graphs (FalkorDB) or databases (Neo4j) the service answers from: one store per tenant,
opened on first use and shared by its requests (each gets a view of it), a bounded number
open at a time."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kgdb.config import Settings
from kgdb.engine.base import GraphStore
from kgdb.errors import GraphNotFoundError
from kgdb.serve.errors import ServiceError
from kgdb.serve.tokens import check_tenant


class Tenants:
    """Stores by tenant name. On Neo4j a tenant is a database of the configured server; on
    FalkorDB a graph of the configured (or embedded) server.

    A tenant that does not exist is a 404 and is never created (the service only reads and
    applies rules; loads create graphs). At most ``limit`` stores stay open: the least
    recently used one not leased by a request is closed when another is needed."""

    def __init__(self, settings: Settings, limit: int = 32,
                 on_close: Callable[[str], None] | None = None) -> None:
        self.settings = settings
        self.limit = limit
        self.on_close = on_close
        """Told the name of every store closed (the tenant's embedding cache goes too)."""
        self._stores: OrderedDict[str, GraphStore] = OrderedDict()
        self._leases: Counter[str] = Counter()
        self._lock = threading.Lock()

    @property
    def neo4j(self) -> bool:
        return not self.settings.embedded and not (self.settings.uri or "").startswith(
            ("redis", "falkordb"))

    @property
    def default(self) -> str:
        return (self.settings.database or "neo4j") if self.neo4j else self.settings.graph

    @contextmanager
    def lease(self, name: str) -> Iterator[GraphStore]:
        """The tenant's store for the duration of one request (it is not closed meanwhile)."""
        store = self._acquire(name)
        try:
            yield store
        finally:
            with self._lock:
                self._leases[name] -= 1
                if self._leases[name] <= 0:
                    del self._leases[name]
                self._evict()

    def open_count(self) -> int:
        with self._lock:
            return len(self._stores)

    def _acquire(self, name: str) -> GraphStore:
        check_tenant(name, "database" if self.neo4j else "graph")
        with self._lock:
            store = self._stores.get(name)
            if store is not None:
                self._stores.move_to_end(name)
                self._leases[name] += 1
                return store
        store = self._connect(name)  # outside the lock: other tenants are not held up
        with self._lock:
            known = self._stores.get(name)
            if known is not None:
                store.close()
                store = known
            self._stores[name] = store
            self._stores.move_to_end(name)
            self._leases[name] += 1
            self._evict()
            return store

    def _connect(self, name: str) -> GraphStore:
        from kgdb.engine import connect

        tenant = (dataclasses.replace(self.settings, database=name) if self.neo4j
                  else dataclasses.replace(self.settings, graph=name))
        try:
            return connect(tenant, create=False)
        except GraphNotFoundError as exc:
            what = "database" if self.neo4j else "graph"
            raise ServiceError(404, f"no {what} {name!r} on this server") from exc

    def _evict(self) -> None:
        """Close the least recently used stores no request holds, down to the limit (the
        caller holds the lock)."""
        for name in list(self._stores):
            if len(self._stores) <= self.limit:
                return
            if not self._leases.get(name):
                self._stores.pop(name).close()
                if self.on_close is not None:
                    self.on_close(name)

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()
