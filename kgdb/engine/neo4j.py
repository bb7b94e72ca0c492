"""Neo4j 5.26+ through the official ``neo4j`` driver (managed transactions, which retry)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np

from kgdb.dialects.neo4j import Neo4jDialect
from kgdb.engine.base import GraphStore, NodeValue, PathValue, RelationshipValue, Result
from kgdb.errors import (
    ConfigError,
    EngineConnectionError,
    EngineError,
    EngineUnavailableError,
    QueryTimeoutError,
    ReadOnlyViolationError,
    StatementError,
    UnsupportedFeatureError,
)
from kgdb.statement import EngineCommand, Statement


class Neo4jStore(GraphStore):
    dialect: Neo4jDialect

    def __init__(self, uri: str, username: str, password: str | None, database: str | None,
                 *, timeout_s: float = 300.0, connect_timeout_s: float = 5.0) -> None:
        import neo4j
        from neo4j import exceptions as nx

        self.dialect = Neo4jDialect()
        self.uri, self.database, self.timeout_s = uri, database, timeout_s
        self.username, self.password = username, password
        self._neo4j = neo4j
        try:
            self._driver = neo4j.GraphDatabase.driver(
                uri, auth=(username, password or ""),
                connection_timeout=connect_timeout_s,
                connection_acquisition_timeout=connect_timeout_s * 2,
                max_transaction_retry_time=15.0,
                # kgdb's statements probe labels and keys that may not exist yet; the
                # server's "does not exist" notifications would be printed as warnings.
                notifications_min_severity="OFF",
            )
            self._driver.verify_connectivity()
        except (ValueError, nx.ConfigurationError) as exc:
            raise ConfigError(f"invalid Neo4j URI {uri!r}: {exc}") from None
        except nx.AuthError as exc:
            raise EngineConnectionError(
                f"cannot connect to Neo4j at {uri}: authentication failed "
                f"(NEO4J_USERNAME/NEO4J_PASSWORD): {exc.message}") from None
        except (nx.DriverError, nx.Neo4jError, OSError) as exc:
            raise EngineConnectionError(
                f"cannot connect to Neo4j at {uri}: {_cause(exc)}") from None

    @property
    def address(self) -> str:
        return f"Neo4j at {self.uri}" + (f", database {self.database!r}" if self.database else "")

    def _run(self, statement: Statement, timeout_s: float | None) -> Result:
        from neo4j import exceptions as nx

        neo4j = self._neo4j
        params = {k: _param(v) for k, v in statement.params.items()}

        @neo4j.unit_of_work(timeout=timeout_s or self.timeout_s)
        def work(tx: Any) -> Result:
            result = tx.run(statement.text, params)
            keys = list(result.keys())
            rows = [[_value(v) for v in record.values()] for record in result]
            counters = result.consume().counters
            stats = {name: getattr(counters, name) for name in (
                "nodes_created", "nodes_deleted", "relationships_created",
                "relationships_deleted", "properties_set", "labels_added", "indexes_added",
                "constraints_added")}
            return Result(keys, rows, stats)

        mode = neo4j.WRITE_ACCESS if statement.write else neo4j.READ_ACCESS
        try:
            with self._driver.session(database=self.database, default_access_mode=mode) as s:
                if statement.write:
                    return s.execute_write(work)
                return s.execute_read(work)
        except nx.ClientError as exc:
            code = exc.code or ""
            if "TransactionTimedOut" in code or "Terminated" in code:
                raise QueryTimeoutError(f"statement timed out: {exc.message}") from None
            if "Forbidden" in code or "AccessMode" in code:
                raise ReadOnlyViolationError(
                    "this statement writes; run it as a write (kgdb cypher --write)") from None
            raise StatementError(f"Neo4j rejected the statement ({code}): {exc.message}") from None
        except (nx.ServiceUnavailable, nx.SessionExpired, nx.TransientError) as exc:
            raise EngineUnavailableError(f"{self.address} unavailable: {_cause(exc)}") from None
        except nx.Neo4jError as exc:
            raise EngineError(f"Neo4j error ({exc.code}): {exc.message}") from None

    def _command(self, command: EngineCommand) -> Any:
        raise UnsupportedFeatureError(f"engine command {command.name}", "neo4j")

    def reset(self) -> None:
        while True:
            deleted = self.run(self.dialect.delete_some_nodes(), {"limit": 10000}).value(0)
            if not deleted:
                break
        for info in self.indexes():
            if info.kind != "lookup":
                for op in self.dialect.drop_index(info):
                    self.execute(op)

    def close(self) -> None:
        self._driver.close()

    def server_info(self) -> dict[str, Any]:
        info = self.run(self.dialect.components()).single() or {}
        return {"engine": "neo4j", "version": (info.get("versions") or [""])[0],
                "edition": info.get("edition"), "address": self.address}


def _param(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_param(v) for v in value]
    if isinstance(value, dict):
        return {k: _param(v) for k, v in value.items()}
    return value


def _value(value: Any) -> Any:
    from neo4j import graph

    if isinstance(value, graph.Node):
        return NodeValue(tuple(sorted(value.labels)), {k: _value(v) for k, v in value.items()})
    if isinstance(value, graph.Relationship):
        return RelationshipValue(value.type, {k: _value(v) for k, v in value.items()})
    if isinstance(value, graph.Path):
        return PathValue(tuple(_value(n) for n in value.nodes),
                         tuple(_value(r) for r in value.relationships))
    if isinstance(value, list):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items()}
    if hasattr(value, "iso_format"):
        return value.iso_format()
    if isinstance(value, (dt.date, dt.time, dt.datetime)):
        return value.isoformat()
    return value


def _cause(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]
