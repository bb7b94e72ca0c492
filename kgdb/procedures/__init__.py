"""kgdb inside the database: Cypher procedures on Neo4j (:mod:`kgdb.procedures.neo4j`, APOC
Extended custom procedures ``custom.kgdb.*``) and the ``kgdb`` JavaScript UDF library on
FalkorDB (:mod:`kgdb.procedures.falkordb`). Which one an engine gets is its dialect's
``PROCEDURES`` flag."""

from __future__ import annotations

from typing import Any

from kgdb.dsl.rules_ast import RuleSet
from kgdb.engine.base import GraphStore
from kgdb.errors import KgdbError


def _module(store: GraphStore) -> Any:
    kind = store.dialect.PROCEDURES
    if not kind:
        from kgdb.errors import UnsupportedFeatureError

        raise UnsupportedFeatureError("stored procedures", store.dialect.NAME)
    if kind == "apoc-custom":
        from kgdb.procedures import neo4j

        return neo4j
    from kgdb.procedures import falkordb

    return falkordb


def install(store: GraphStore, rulesets: dict[str, RuleSet], *, service: bool = True
            ) -> dict[str, Any]:
    module = _module(store)
    if store.dialect.PROCEDURES == "apoc-custom":
        return dict(module.install(store, rulesets, service=service))
    return dict(module.install(store))


def status(store: GraphStore, rulesets: dict[str, RuleSet] | None = None, *,
           service: bool = True) -> dict[str, Any]:
    module = _module(store)
    if store.dialect.PROCEDURES == "apoc-custom":
        return dict(module.status(store, rulesets, service=service))
    return dict(module.status(store))


def drop(store: GraphStore) -> dict[str, Any]:
    return dict(_module(store).drop(store))


def procedure_status(store: GraphStore) -> dict[str, Any]:
    """What is installed, for health reports: never raises (an error becomes ``error``)."""
    try:
        return status(store)
    except KgdbError as exc:
        return {"error": str(exc).splitlines()[0]}
