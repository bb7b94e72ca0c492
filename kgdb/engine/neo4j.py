"""Neo4j 5.26+ through the official ``neo4j`` driver."""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import re
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from kgdb.cypher import housekeeping
from kgdb.dialects.neo4j import Neo4jDialect, Neo4jNativeDialect
from kgdb.engine.base import SCALARS, GraphStore, NodeValue, PathValue, RelationshipValue, Result
from kgdb.errors import (
    ConfigError,
    EngineConnectionError,
    EngineError,
    EngineUnavailableError,
    GraphNotFoundError,
    QueryTimeoutError,
    ReadOnlyViolationError,
    StatementError,
    TransientEngineError,
    UnsupportedFeatureError,
)
from kgdb.statement import EngineCommand, Statement


class Neo4jStore(GraphStore):
    """Neo4j through the official driver.

    Retries: statements that are safe to repeat (reads and idempotent writes) run in managed
    transactions, which the driver retries on transient failures for up to
    ``max_transaction_retry_time``, except a lone read, which runs as an auto-commit
    transaction (one round trip fewer: no COMMIT) retried by :meth:`_read` the same way;
    every other write runs once, as an auto-commit transaction (``session.run``), and a
    transient failure is reported, never repeated behind the caller's back. kgdb's own retry
    loop (GraphStore) is off here.
    """

    dialect: Neo4jDialect
    retries = 0
    TRANSACTIONS = True
    RETRY_TIME_S = 15.0
    """The driver's ``max_transaction_retry_time`` for managed transactions."""

    def __init__(self, uri: str, username: str, password: str | None, database: str | None,
                 *, timeout_s: float = 300.0, connect_timeout_s: float = 5.0,
                 native: bool | None = None) -> None:
        import neo4j
        from neo4j import exceptions as nx

        self.dialect = Neo4jDialect()
        self.uri, self.database, self.timeout_s = uri, database, timeout_s
        self.username, self.password = username, password
        self._neo4j = neo4j
        self._edition: str | None = None
        try:
            self._driver = neo4j.GraphDatabase.driver(
                uri, auth=(username, password or ""),
                connection_timeout=connect_timeout_s,
                connection_acquisition_timeout=connect_timeout_s * 2,
                max_transaction_retry_time=self.RETRY_TIME_S,
                # kgdb's statements probe labels and keys that may not exist yet; the
                # server's "does not exist" notifications would be printed as warnings.
                notifications_min_severity="OFF",
            )
            self._driver.verify_connectivity()
        except (ValueError, nx.ConfigurationError) as exc:
            raise ConfigError(f"invalid Neo4j URI {uri!r}: {_cause(exc)}") from exc
        except nx.AuthError as exc:
            self._driver_close_quietly()
            raise EngineConnectionError(
                f"cannot connect to Neo4j at {uri}: authentication failed for user "
                f"{username!r} (check NEO4J_USERNAME/NEO4J_PASSWORD): {_message(exc)}") from exc
        except (nx.DriverError, nx.Neo4jError, OSError) as exc:
            self._driver_close_quietly()
            raise EngineConnectionError(
                f"cannot connect to Neo4j at {uri}: {_cause(exc)}") from exc
        if database:
            self._check_database(database)
        self.plugin_version: str | None = None
        """The version of kgdb's Neo4j plugin on the server (None: not loaded)."""
        if native is None:
            from kgdb.config import environment

            native = environment().KGDB_NATIVE
        self.detect_plugin(use=native)

    def detect_plugin(self, *, use: bool = True) -> str | None:
        """Look once for kgdb's plugin (``kgdb.version()``); with ``use`` and the version of
        this kgdb, switch to :class:`Neo4jNativeDialect` (the plugin's back ends), else keep
        plain Cypher. ``use=False`` (or ``KGDB_NATIVE=0``) keeps the Cypher path even where
        the plugin is loaded. Returns the plugin's version, None when absent."""
        from kgdb.engine.neo4j_plugin import VERSION

        self.plugin_version = None
        self.dialect = Neo4jDialect()
        plugin = next(p for p in self.dialect.PLUGINS if p.name == "kgdb")
        probe = self.dialect.find_functions([plugin.probe])
        assert probe is not None
        try:
            if self.run(probe).rows:
                self.plugin_version = str(self.run(
                    housekeeping.version_function_call(plugin)).value())
        except EngineError:  # a user who may not list functions: plain Cypher
            return None
        if use and self.plugin_version == VERSION:
            self.dialect = Neo4jNativeDialect()
        return self.plugin_version

    def _driver_close_quietly(self) -> None:
        driver = getattr(self, "_driver", None)
        if driver is not None:
            driver.close()

    def _check_database(self, database: str) -> None:
        """verify_connectivity does not look at the database: ask it, and name the ones
        there are when it is missing (Community has exactly one user database)."""
        from neo4j import exceptions as nx

        try:
            self.run(housekeeping.ping())
        except EngineError as exc:
            if "DatabaseNotFound" not in str(exc):
                raise
            names: list[str] = []
            try:
                records, _, _ = self._driver.execute_query(
                    self.dialect.list_databases().text, database_="system")
                names = [str(r["name"]) for r in records if r["type"] != "system"]
            except (nx.Neo4jError, nx.DriverError):
                pass
            edition = ""
            if len(names) == 1:
                edition = " (Neo4j Community has one user database)"
            there = f"; it has {', '.join(repr(n) for n in names)}{edition}" if names else ""
            self.close()
            raise GraphNotFoundError(
                f"Neo4j at {self.uri} has no database {database!r} (NEO4J_DATABASE){there}: "
                "unset NEO4J_DATABASE or name an existing database") from exc

    def on_database(self, database: str) -> Neo4jStore:
        """A view of this store on another database of the same server (``system`` for
        administration); the same driver, so close this store, not the view."""
        clone = copy.copy(self)
        clone.database = database
        return clone

    @property
    def address(self) -> str:
        return f"Neo4j at {self.uri}" + (f", database {self.database!r}" if self.database else "")

    def _run(self, statement: Statement, timeout_s: float | None) -> Result:
        return self._run_many([statement], timeout_s)[0]

    def _run_unit(self, statements: list[Statement], timeout_s: float | None) -> list[Result]:
        """One transaction for all of ``statements``: managed (retried by the driver) when
        every one is safe to repeat, else one explicit transaction, run once."""
        return self._run_many(statements, timeout_s)

    def _run_many(self, statements: list[Statement], timeout_s: float | None) -> list[Result]:
        neo4j = self._neo4j
        timeout = timeout_s or self.timeout_s
        params = [{k: _param(v) for k, v in s.params.items()} for s in statements]
        writes = any(s.write for s in statements)
        retry_safe = all(not s.write or s.idempotent for s in statements)
        attempts = 0

        def work(tx: Any) -> list[Result]:
            nonlocal attempts
            attempts += 1
            return [_result(tx.run(s.text, p)) for s, p in zip(statements, params, strict=True)]

        if not writes and len(statements) == 1:
            with self._translated_errors(True):
                return [self._read(statements[0], params[0], timeout)]
        mode = neo4j.WRITE_ACCESS if writes else neo4j.READ_ACCESS
        with (self._translated_errors(retry_safe),
              self._driver.session(database=self.database, default_access_mode=mode) as s):
            if retry_safe:
                managed = neo4j.unit_of_work(timeout=timeout, metadata=self.tx_metadata)(work)
                results = (s.execute_write(managed) if writes else s.execute_read(managed))
                if attempts > 1:
                    results[-1].stats["attempts"] = attempts
                return results
            if len(statements) == 1:  # auto-commit: run once, never retried
                query = neo4j.Query(statements[0].text, timeout=timeout, metadata=self.tx_metadata)
                return [_result(s.run(query, params[0]))]
            with s.begin_transaction(timeout=timeout, metadata=self.tx_metadata) as tx:
                results = work(tx)
                tx.commit()
                return results

    def _read(self, statement: Statement, params: dict[str, Any], timeout: float) -> Result:
        """One read statement as an auto-commit transaction, one round trip (a managed one
        adds the COMMIT's), retried here as the driver would: a read is safe to repeat, on a
        retryable failure, with backoff, for up to ``RETRY_TIME_S``."""
        neo4j = self._neo4j
        from neo4j import exceptions as nx

        deadline, delay, attempts = time.monotonic() + self.RETRY_TIME_S, 0.05, 0
        while True:
            attempts += 1
            try:
                with self._driver.session(database=self.database,
                                          default_access_mode=neo4j.READ_ACCESS) as s:
                    query = neo4j.Query(statement.text, timeout=timeout,
                                        metadata=self.tx_metadata)
                    result = _result(s.run(query, params))
                if attempts > 1:
                    result.stats["attempts"] = attempts
                return result
            except (nx.TransientError, nx.ServiceUnavailable, nx.SessionExpired) as exc:
                if not exc.is_retryable() or time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    @contextlib.contextmanager
    def _translated_errors(self, retried: bool) -> Iterator[None]:
        """Driver and server failures as kgdb errors, each one line naming the cause."""
        from neo4j import exceptions as nx

        try:
            yield
        except nx.AuthError as exc:
            raise EngineConnectionError(
                f"{self.address}: authentication failed for user {self.username!r} "
                f"(NEO4J_USERNAME/NEO4J_PASSWORD): {_message(exc)}") from exc
        except nx.ClientError as exc:
            code = exc.code or ""
            if "TransactionTimedOut" in code or "Terminated" in code:
                raise QueryTimeoutError(f"statement timed out: {_message(exc)}") from exc
            if "Forbidden" in code or "AccessMode" in code:
                raise ReadOnlyViolationError(
                    "this statement writes; run it as a write (kgdb cypher --write)") from exc
            if code.endswith("DatabaseNotFound"):
                raise EngineConnectionError(
                    f"{self.address}: database not found ({code}): {_message(exc)}") from exc
            if code.endswith("ProcedureNotFound"):
                raise StatementError(
                    f"Neo4j has no such procedure ({code}): {_message(exc)}") from exc
            raise StatementError(f"Neo4j rejected the statement ({code}): {_message(exc)}") from exc
        except nx.TransientError as exc:
            how = (f"after the driver's retries ({self.RETRY_TIME_S:.0f} s)" if retried else
                   "and was not retried because it is not idempotent")
            raise TransientEngineError(
                f"Neo4j aborted the transaction ({exc.code}) {how}; nothing of it was written: "
                f"{_message(exc)}") from exc
        except (nx.ServiceUnavailable, nx.SessionExpired) as exc:
            raise EngineUnavailableError(f"{self.address} unavailable: {_cause(exc)}") from exc
        except nx.Neo4jError as exc:
            raise EngineError(f"Neo4j error ({exc.code}): {_message(exc)}") from exc
        except nx.DriverError as exc:
            raise EngineError(f"Neo4j driver error: {_cause(exc)}") from exc

    def _command(self, command: EngineCommand) -> Any:
        raise UnsupportedFeatureError(f"engine command {command.name}", "neo4j")

    def reset(self) -> None:
        while True:
            deleted = self.run(housekeeping.delete_some_nodes(10000)).value(0)
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
        self._edition = str(info.get("edition") or "")
        return {"engine": "neo4j", "version": (info.get("versions") or [""])[0],
                "edition": info.get("edition"), "address": self.address}

    def supports_existence_constraints(self) -> bool:
        """Only Enterprise Edition creates property-existence constraints."""
        if self._edition is None:
            self.server_info()
        return self._edition != "community"


def _result(result: Any) -> Result:
    keys = list(result.keys())
    rows = [[_value(v) for v in record.values()] for record in result]
    counters = result.consume().counters
    stats = {name: getattr(counters, name) for name in (
        "nodes_created", "nodes_deleted", "relationships_created",
        "relationships_deleted", "properties_set", "labels_added", "indexes_added",
        "constraints_added")}
    return Result(keys, rows, stats)


class _Vector(list[float]):
    """A vector parameter: packed as the list it is, shown by its size. The driver renders
    every parameter into its debug log before sending it, whether that log is on or not
    (neo4j 6.4): for 384-d vectors, about 1 s per 1,000 of them."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<{len(self)}-d vector>"


def _param(value: Any) -> Any:
    if type(value) in SCALARS:
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f" and value.ndim == 1:
            return _Vector(value.tolist())
        if value.dtype.kind == "f" and value.ndim == 2:
            return [_Vector(row) for row in value.tolist()]
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):  # scalar items (a vector's floats) without a call
        return [v if type(v) in SCALARS else _param(v) for v in value]
    if isinstance(value, dict):
        return {k: v if type(v) in SCALARS else _param(v) for k, v in value.items()}
    return value


def _value(value: Any) -> Any:
    if type(value) in SCALARS:
        return value
    from neo4j import graph

    if isinstance(value, graph.Node):
        return NodeValue(tuple(sorted(value.labels)), {k: _value(v) for k, v in value.items()})
    if isinstance(value, graph.Relationship):
        return RelationshipValue(value.type, {k: _value(v) for k, v in value.items()})
    if isinstance(value, graph.Path):
        return PathValue(tuple(_value(n) for n in value.nodes),
                         tuple(_value(r) for r in value.relationships))
    if isinstance(value, list):  # scalar items and fields without a call
        return [v if type(v) in SCALARS else _value(v) for v in value]
    if isinstance(value, dict):
        return {k: v if type(v) in SCALARS else _value(v) for k, v in value.items()}
    if hasattr(value, "iso_format"):
        return value.iso_format()
    if isinstance(value, (dt.date, dt.time, dt.datetime)):
        return value.isoformat()
    return value


_REASON = re.compile(r"\(reason (.+)\)\s*$")


def _cause(exc: BaseException) -> str:
    """A driver error on one line. A refused connection comes as "Couldn't connect to H:P
    (resolved to ...):" with the reason on later lines; keep the reason."""
    text = str(exc) or type(exc).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reasons = [m.group(1) for line in lines[1:] if (m := _REASON.search(line))]
    if reasons:
        return "; ".join(dict.fromkeys(reasons))[:300]
    return lines[0][:300] if lines else type(exc).__name__


def _message(exc: Any) -> str:
    """A server error's own message on one line (syntax errors add the query and a caret
    on further lines)."""
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return str(text).splitlines()[0][:300]
