"""FalkorDB through its Redis protocol (``falkordb`` client): embedded or at a ``redis://`` URI."""

from __future__ import annotations

import functools
import logging
import math
import re
import time
from typing import Any

import numpy as np

from kgdb.config import environment
from kgdb.cypher import housekeeping
from kgdb.dialects.falkordb import FalkorDBDialect
from kgdb.engine.base import (
    SCALARS,
    GraphStore,
    NodeValue,
    PathValue,
    RelationshipValue,
    Result,
    describe_indexes,
    wait_for_index_builds,
)
from kgdb.engine.embedded import EmbeddedServer, unretried_client
from kgdb.errors import (
    EngineConnectionError,
    EngineCrashError,
    EngineError,
    EngineUnavailableError,
    GraphNotFoundError,
    QueryTimeoutError,
    ReadOnlyViolationError,
    StatementError,
)
from kgdb.statement import GRAPH_KEY, EngineCommand, Statement

log = logging.getLogger("kgdb")


class FalkorDBStore(GraphStore):
    """A FalkorDB graph. With ``server`` set, it is the embedded one and restarts it if it dies."""

    dialect: FalkorDBDialect

    def __init__(self, host: str, port: int, password: str | None, graph: str, *,
                 server: EmbeddedServer | None = None, timeout_s: float = 300.0,
                 create: bool = True) -> None:
        import falkordb

        self.dialect = FalkorDBDialect(scan_labels=self.scan_labels)
        self.host, self.port, self.graph_name = host, port, graph
        self._password = password
        self._server = server
        self.timeout_s = timeout_s
        self._create = create
        self._falkordb = falkordb
        self._scan_checked = -math.inf
        self._scan: frozenset[str] = frozenset()
        self._connect()

    def _connect(self) -> None:
        try:
            self._open()
            exists = self._create or self.graph_name in self._db.list_graphs()
            if exists:
                self._ensure_graph()
        except Exception as exc:
            raise EngineConnectionError(
                f"cannot connect to FalkorDB at {self.host}:{self.port}: {_cause(exc)}"
            ) from exc
        if not exists:
            self.close()
            raise GraphNotFoundError(f"FalkorDB at {self.host}:{self.port} has no graph "
                                     f"{self.graph_name!r}")

    def _open(self) -> None:
        # The client's constructor already talks to the server (it asks whether it is a
        # cluster): a server killed a moment ago fails here, not at the first query.
        self._db = self._falkordb.FalkorDB(
            host=self.host, port=self.port, password=self._password,
            socket_connect_timeout=5, socket_keepalive=True,
        )
        self._graph = self._db.select_graph(self.graph_name)

    FULL_SCAN_RECHECK_S = 1.0
    """How old the label sizes behind :meth:`scan_labels` may be: after kgdb's own writes
    they are read again at the next search, after other clients' within this time."""

    def scan_labels(self) -> frozenset[str]:
        """The labels the dialect searches exactly by a scan: those with at most
        ``KGDB_FULL_SCAN`` nodes. Read again (one O(1) statement, ``db.meta.stats``) when
        kgdb wrote since, or after :attr:`FULL_SCAN_RECHECK_S`; asked only as a vector search
        is built, so loads run no extra statements."""
        if time.monotonic() - self._scan_checked > self.FULL_SCAN_RECHECK_S:
            self.refresh_full_scan()
        return self._scan

    def refresh_full_scan(self) -> None:
        """Read the label sizes behind :meth:`scan_labels` now. A server without
        ``db.meta.stats`` keeps every label on its index."""
        import redis

        self._scan_checked = time.monotonic()
        limit = environment().KGDB_FULL_SCAN
        if limit == 0:
            self._scan = frozenset()
            return
        try:
            raw = self._graph.ro_query(self.dialect.entity_counts().text)
            sizes = raw.result_set[0][0]
        except (redis.ResponseError, redis.ConnectionError, redis.TimeoutError, OSError,
                IndexError):
            return  # the index, until the sizes can be read (a lost server is reported
            # by the statement itself)
        self._scan = frozenset(label for label, count in sizes.items() if int(count) <= limit)

    CREATE_HANG_S = 30.0
    """How long the write that creates a graph may go unanswered on the embedded server before
    kgdb asks whether the server answers at all. FalkorDB 4.16.3 has been seen (about once in
    eight test-suite runs) to block its main thread for good in ``Globals_AddGraph``, a
    graph's first write: every later command, PING included, then waits with it. Such a
    server is replaced (its acknowledged writes are in its append-only file) and the write,
    which never ran, is sent again."""

    def _ensure_graph(self) -> None:
        # GRAPH.RO_QUERY on a key that does not exist fails ("empty key"); a write query
        # creates the (empty) graph.
        ping = housekeeping.ping().text
        if self._server is None:
            self._graph.query(ping)
            return
        import redis

        probe = unretried_client(self.port, self._password, self.CREATE_HANG_S)
        try:
            probe.execute_command("GRAPH.QUERY", self.graph_name, ping)
            return
        except redis.TimeoutError:
            pass
        finally:
            probe.close()
        if self._server.status() is not None:  # it answers PING: slow, not stuck
            self._graph.query(ping)
            return
        log.warning("%s stopped answering while creating the graph (FalkorDB blocked in "
                    "its main thread); replacing the server (log: %s)", self.address,
                    self._server.log_file)
        state = self._server.replace(self.port)
        self.port, self._password = state.port, self._server.password()
        self._db.connection.close()
        self._open()
        self._graph.query(ping)

    @property
    def address(self) -> str:
        kind = "embedded FalkorDB" if self._server else "FalkorDB"
        return f"{kind} at {self.host}:{self.port}, graph {self.graph_name!r}"

    def _run(self, statement: Statement, timeout_s: float | None) -> Result:
        if _INDEX_DDL.match(statement.text):
            self._settle_indexes()
            try:
                return self._send(statement, timeout_s)
            finally:
                self._settle_indexes()
                self._complete_indexes()
        return self._send(statement, timeout_s)

    def _send(self, statement: Statement, timeout_s: float | None) -> Result:
        import redis

        query = _params_header(statement.params) + statement.text
        timeout_ms = int((timeout_s or self.timeout_s) * 1000)
        # the client's public API: GRAPH.QUERY for writes, GRAPH.RO_QUERY for reads
        send = self._graph.query if statement.write else self._graph.ro_query
        try:
            try:
                raw = send(query, timeout=timeout_ms)
            except redis.ResponseError as exc:
                if _INDEX_NOT_READY not in str(exc) or not self._wait_for_indexes():
                    raise
                raw = send(query, timeout=timeout_ms)
        except redis.ResponseError as exc:
            raise _statement_error(str(exc), statement) from exc
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            raise self._unavailable(exc) from exc
        if statement.write:
            self._scan_checked = -math.inf  # the sizes are read again at the next search
        columns = [str(h[1]) for h in raw.header]
        rows = [[_value(v) for v in row] for row in raw.result_set]
        stats = {
            "nodes_created": raw.nodes_created, "nodes_deleted": raw.nodes_deleted,
            "relationships_created": raw.relationships_created,
            "relationships_deleted": raw.relationships_deleted,
            "properties_set": raw.properties_set, "labels_added": raw.labels_added,
            "indexes_created": raw.indices_created, "run_time_ms": raw.run_time_ms,
        }
        return Result(columns, rows, stats)

    def _wait_for_indexes(self) -> bool:
        """Wait until no index of the graph is being built; False if none was. A server that
        has just loaded a graph (a restart of the embedded one) rebuilds an index created
        after its nodes in the background, and until it is built FalkorDB refuses its queries
        with "Invalid arguments for procedure 'db.idx.vector.queryNodes'" (the 10x corpus's
        70k sentences: about 6 s)."""
        waited = False

        def note(pending: list[Any]) -> None:
            nonlocal waited
            waited = True
            log.warning("%s is still building indexes (%s); waiting", self.address,
                        describe_indexes(pending))

        wait_for_index_builds(self, self.timeout_s, on_wait=note)  # then the retry reports
        return waited

    def _settle_indexes(self) -> None:
        """Wait until no index of the graph is being populated: an index DDL runs only then,
        and returns once its own population is done (Neo4j's ``db.awaitIndexes`` order). In
        FalkorDB 4.16.3 an index created while another was being populated ended that
        population early, its index then served as complete (seen while tracing ``kgdb index
        ppr --full``; what a population itself leaves out, :meth:`_complete_indexes` adds)."""
        pending = wait_for_index_builds(self, self.timeout_s)
        if pending:
            raise EngineError(f"{self.address}: indexes made no progress for "
                              f"{self.timeout_s:.0f} s: {describe_indexes(pending)}")

    def _complete_indexes(self) -> None:
        """Re-add what a just-built index left out. FalkorDB 4.16.3's population of an index
        over entities that took deleted entities' internal ids can skip some of them and
        still report the index built (seen after ``kgdb index ppr --full`` over an earlier
        build: the phrase index held the phrases from internal id 15,077 up, 10,500 of
        13,413). Each index's entity count is compared with the entities it should hold;
        setting the indexed properties of a short label to themselves adds them back."""
        d = self.dialect
        counts = self._send(d.entity_counts(), None).single() or {}
        for row in self._send(d.index_documents(), None).records():
            label, props = str(row["label"]), [str(p) for p in row["properties"]]
            relationship = row["entity"] != "NODE"
            held = int(row["documents"] or 0)
            total = (counts.get("types" if relationship else "labels") or {}).get(label, 0)
            if not props or held >= int(total):  # (an entity without the properties
                continue  # is not held: count those only when the index is short)
            wanted = int(self._send(d.indexable_count(label, relationship, props),
                                    None).value(0))
            if held >= wanted:
                continue
            self._send(d.reindex(label, relationship, props), None)
            after = next((int(r["documents"] or 0) for r in self._send(
                d.index_documents(), None).records() if r["label"] == label and
                (r["entity"] != "NODE") == relationship), held)
            log.warning("%s: FalkorDB built the index of %s holding %d of %d entities; "
                        "re-indexed them: %d now", self.address,
                        f"-[:{label}]-" if relationship else f":{label}", held, wanted, after)

    def _prepare(self, statement: Statement) -> Statement:
        if not statement.params:
            return statement
        return Statement(_params_header(statement.params) + statement.text, {},
                         statement.write, statement.idempotent)

    def _command(self, command: EngineCommand) -> Any:
        import redis

        if command.name == "GRAPH.CONSTRAINT":
            self._settle_indexes()
        args = [self.graph_name if a is GRAPH_KEY else a for a in command.args]
        try:
            reply = self._db.connection.execute_command(command.name, *args)
        except redis.ResponseError as exc:
            raise StatementError(f"{command.description or command.name}: {exc}") from exc
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            raise self._unavailable(exc) from exc
        self._scan_checked = -math.inf  # GRAPH.BULK adds nodes
        return reply

    def _unavailable(self, exc: BaseException) -> EngineError:
        if self._server is not None and self._server.status() is None:
            crash = self._server.crash_report()
            if crash:
                # The statement itself killed the server (a segfault or assertion is in the
                # log; a kill -9 from outside leaves none). Replaying it would kill it again:
                # restart the server for whatever comes next and report the statement once.
                log.warning("%s crashed under a statement: %s", self.address, crash)
                try:
                    self._recover()
                except EngineError:
                    pass
                return EngineCrashError(
                    f"the embedded FalkorDB crashed while running this statement ({crash}); "
                    f"it was restarted and the statement was not retried (log: "
                    f"{self._server.log_file})")
            log.warning("%s went away under a statement (%s); restarting it (log: %s)",
                        self.address, _cause(exc), self._server.log_file)
            return EngineUnavailableError(
                f"{self.address} died under a statement ({_cause(exc)}); "
                f"see {self._server.log_file}")
        return EngineUnavailableError(f"lost connection to {self.address}: {_cause(exc)}")

    def _recover(self) -> None:
        if self._server is not None:
            state = self._server.ensure_started()
            self.port = state.port
            self._password = self._server.password()
        self._connect()

    def reset(self) -> None:
        self.drop()
        self._ensure_graph()

    def drop(self) -> None:
        """Delete the graph's key altogether (bench graphs, tests)."""
        import redis

        self._scan_checked = -math.inf
        try:
            self._graph.delete()
        except redis.ResponseError:
            pass  # the graph does not exist

    def close(self) -> None:
        self._db.connection.close()

    def server_info(self) -> dict[str, Any]:
        version = ""
        for module in self._db.connection.module_list():
            name = module.get(b"name") or module.get("name")
            if name in (b"graph", "graph"):
                ver = int(module.get(b"ver") or module.get("ver") or 0)
                version = f"{ver // 10000}.{ver // 100 % 100}.{ver % 100}"
        return {"engine": "falkordb", "version": version, "address": self.address,
                "embedded": self._server is not None}

    def graphs(self) -> list[str]:
        return list(self._db.list_graphs())


_INDEX_DDL = re.compile(r"\s*(CREATE|DROP)\s+(\w+\s+)?INDEX\b", re.IGNORECASE)
"""A statement that creates or drops an index (``CREATE VECTOR INDEX FOR ...``)."""

_INDEX_NOT_READY = "Invalid arguments for procedure 'db.idx.vector.query"
"""How FalkorDB 4.16 refuses a vector query while that index is being built."""


def _statement_error(message: str, statement: Statement) -> EngineError:
    first = message.split(" errCtx:")[0].removeprefix("errMsg: ").strip()
    first = first.split(" , Stack:")[0].split(", Stack:")[0].strip()  # a UDF's JS stack
    if first.startswith("UDF Exception: interrupted"):
        return QueryTimeoutError("a UDF ran longer than FalkorDB allows (about 3 s) and was "
                                 "stopped")
    if "timed out" in message.lower():
        return QueryTimeoutError(f"statement timed out: {first}")
    if "read-only queries" in message:
        return ReadOnlyViolationError(
            "this statement writes; run it as a write (kgdb cypher --write)")
    return StatementError(f"FalkorDB rejected the statement: {first}")


def _cause(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]


# ---------------------------------------------------------------------- parameters
# The client's own serialiser walks every float of every embedding in Python; this one
# formats float vectors in one pass and keeps full float32 precision ('%.9g' round-trips).
def _params_header(params: dict[str, Any]) -> str:
    if not params:
        return ""
    parts = []
    for key, value in params.items():
        if not key.isidentifier():
            raise EngineError(f"invalid parameter name {key!r}")
        parts.append(f"{key}={_literal(value)}")
    return "CYPHER " + " ".join(parts) + " "


def _literal(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise EngineError(f"cannot send the non-finite number {value!r} as a parameter")
        return repr(float(value))
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            if not np.all(np.isfinite(value)):
                raise EngineError("cannot send a vector with NaN or infinite values")
            if value.dtype == np.float32 and value.ndim == 1:
                return _float32_format(len(value)) % tuple(value.tolist())
            if value.dtype == np.float32 and value.ndim == 2:
                row = _float32_format(value.shape[1])
                return "[" + ",".join(row % tuple(r) for r in value.tolist()) + "]"
            return "[" + ",".join(map(repr, value.tolist())) + "]"
        return _literal(value.tolist())
    if isinstance(value, (list, tuple)):
        if value and all(type(v) is float for v in value):  # a vector: one pass (the
            # per-item path is slow: docs/design/neo4j-latency.md)
            if not all(map(math.isfinite, value)):
                bad = next(v for v in value if not math.isfinite(v))
                raise EngineError(f"cannot send the non-finite number {bad!r} as a parameter")
            return "[" + ",".join(map(repr, value)) + "]"
        return "[" + ",".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            if not isinstance(k, str) or not k or "`" in k:
                raise EngineError(f"invalid map key {k!r} in a parameter")
            items.append(f"`{k}`:{_literal(v)}")
        return "{" + ",".join(items) + "}"
    raise EngineError(f"cannot send a parameter of type {type(value).__name__}")


@functools.lru_cache(maxsize=16)
def _float32_format(n: int) -> str:
    # One format operation per vector: '%.9g' round-trips every float32 exactly.
    return "[" + ",".join(["%.9g"] * n) + "]"


@functools.lru_cache(maxsize=1)
def _graph_types() -> tuple[Any, Any, Any]:
    from falkordb.edge import Edge
    from falkordb.node import Node
    from falkordb.path import Path

    return Node, Edge, Path


def _value(value: Any) -> Any:
    # Called for every cell: scalars return first, and the client's classes are imported
    # once (imports per cell are slow: docs/design/neo4j-latency.md).
    if type(value) in SCALARS:
        return value
    Node, Edge, Path = _graph_types()
    if isinstance(value, Node):
        return NodeValue(tuple(value.labels or ()), _props(value.properties))
    if isinstance(value, Edge):
        return RelationshipValue(value.relation, _props(value.properties))
    if isinstance(value, Path):
        return PathValue(tuple(_value(n) for n in value.nodes()),
                         tuple(_value(e) for e in value.edges()))
    if isinstance(value, list):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items()}
    return value


def _props(props: dict[str, Any] | None) -> dict[str, Any]:
    return {k: _value(v) for k, v in (props or {}).items()}
