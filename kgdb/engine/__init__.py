"""Engines: one :class:`GraphStore` interface, a Neo4j adapter and a FalkorDB adapter."""

from __future__ import annotations

import logging
import os
from urllib.parse import urlparse

from kgdb.config import Settings
from kgdb.engine.base import GraphStore, NodeValue, PathValue, RelationshipValue, Result
from kgdb.engine.embedded import EmbeddedServer
from kgdb.errors import ConfigError

NEO4J_SCHEMES = {"neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc"}
FALKORDB_SCHEMES = {"redis", "falkordb"}
NEO4J_ONLY_VARIABLES = ("NEO4J_PASSWORD", "NEO4J_DATABASE")
"""Variables that only a Neo4j connection reads: set while kgdb uses the embedded FalkorDB,
they mean the Neo4j settings did not reach kgdb (``KGDB_URI=...`` without ``export``)."""

log = logging.getLogger("kgdb")


def unused_neo4j_variables(settings: Settings) -> list[str]:
    """The Neo4j-only variables set in the environment while ``settings`` name the embedded
    FalkorDB (empty when they are used, or when the caller chose the embedded engine by
    name, ``uri="embedded"``, as ``kgdb bench retrieve --engines falkordb,neo4j`` does)."""
    if not settings.embedded or settings.uri == "embedded":
        return []
    return [name for name in NEO4J_ONLY_VARIABLES if os.environ.get(name)]


def connect(settings: Settings | None = None, *, create: bool = True) -> GraphStore:
    """Open the configured graph: Neo4j for a ``neo4j://``/``bolt://`` URI, else the embedded
    FalkorDB (started if it is not running). ``create=False``: a FalkorDB graph that does not
    exist is a :class:`~kgdb.errors.GraphNotFoundError` (as a missing Neo4j database always
    is) rather than created."""
    settings = settings or Settings.from_env()
    unused = unused_neo4j_variables(settings)
    if unused:
        log.warning("%s set but KGDB_URI/NEO4J_URI is not: using the embedded FalkorDB, not "
                    "Neo4j (export KGDB_URI=bolt://..., or eval \"$(kgdb neo4j start)\")",
                    " and ".join(unused) + (" is" if len(unused) == 1 else " are"))
    if settings.embedded:
        from kgdb.engine.falkordb import FalkorDBStore

        server = EmbeddedServer(settings.home)
        state = server.ensure_started()
        return FalkorDBStore("127.0.0.1", state.port, server.password(), settings.graph,
                             server=server, timeout_s=settings.timeout_s, create=create)
    assert settings.uri is not None
    parsed = urlparse(settings.uri)
    if parsed.scheme in NEO4J_SCHEMES:
        from kgdb.engine.neo4j import Neo4jStore

        return Neo4jStore(settings.uri, settings.username, settings.password, settings.database,
                          timeout_s=settings.timeout_s)
    if parsed.scheme in FALKORDB_SCHEMES:
        from kgdb.engine.falkordb import FalkorDBStore

        return FalkorDBStore(parsed.hostname or "127.0.0.1", parsed.port or 6379,
                             parsed.password, settings.graph, timeout_s=settings.timeout_s,
                              create=create)
    raise ConfigError(
        f"unsupported URI {settings.uri!r} in KGDB_URI/NEO4J_URI: use neo4j://, bolt:// "
        "(Neo4j), redis:// (an external FalkorDB) or leave it unset for the embedded FalkorDB"
    )


__all__ = ["EmbeddedServer", "GraphStore", "NodeValue", "PathValue", "RelationshipValue",
           "Result", "connect", "unused_neo4j_variables"]
