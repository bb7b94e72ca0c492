"""A live Neo4j 5.26 for the Neo4j suite: KGDB_NEO4J_URI if set, else testcontainers when a
Docker engine answers, else every test here is skipped with the reason."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

IMAGE = "neo4j:5.26-community"


def _docker_reason() -> str | None:
    try:
        import docker

        docker.from_env().ping()
        return None
    except Exception as exc:  # no client library, no socket, no engine
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"


@pytest.fixture(scope="session")
def neo4j_settings() -> Iterator[dict[str, str]]:
    if os.environ.get("KGDB_NEO4J_URI"):
        yield {"uri": os.environ["KGDB_NEO4J_URI"],
               "username": os.environ.get("NEO4J_USERNAME", "neo4j"),
               "password": os.environ.get("NEO4J_PASSWORD", "kgdb-password")}
        return
    reason = _docker_reason()
    if reason:
        pytest.skip("Neo4j suite skipped: KGDB_NEO4J_URI is not set and no Docker engine "
                    f"answers ({reason}); run `docker compose -f docker/compose.yaml up -d` and "
                    "set KGDB_NEO4J_URI=neo4j://localhost:7687 NEO4J_PASSWORD=kgdb-password")
    from testcontainers.neo4j import Neo4jContainer

    container = (Neo4jContainer(IMAGE, password="kgdb-password")
                 .with_env("NEO4J_PLUGINS", '["apoc", "graph-data-science"]')
                 .with_env("NEO4J_dbms_security_procedures_unrestricted", "apoc.*,gds.*"))
    with container:
        yield {"uri": container.get_connection_url(), "username": "neo4j",
               "password": "kgdb-password"}


@pytest.fixture
def neo4j_store(neo4j_settings: dict[str, str]) -> Iterator:
    from kgdb.engine.neo4j import Neo4jStore

    store = Neo4jStore(neo4j_settings["uri"], neo4j_settings["username"],
                       neo4j_settings["password"], None)
    store.reset()
    try:
        yield store
    finally:
        store.reset()
        store.close()
