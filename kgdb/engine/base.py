"""The one interface every engine adapter implements."""

from __future__ import annotations

import abc
import copy
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from kgdb.cypher import housekeeping
from kgdb.dialects.base import Dialect, IndexInfo, Plugin
from kgdb.errors import EngineUnavailableError, ReadOnlyViolationError
from kgdb.statement import EngineCommand, Operation, Statement
from kgdb.text import check_statement

SCALARS = frozenset({str, int, float, bool, type(None)})
"""Values that pass between Python and either engine as they are: the engines' parameter and
cell conversions check them first, by exact type (they are most of every result)."""

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class Result:
    """Rows of one statement, with plain Python values (nodes become :class:`NodeValue`)."""

    columns: list[str]
    rows: list[list[Any]]
    stats: dict[str, float] = field(default_factory=dict)

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def single(self) -> dict[str, Any] | None:
        records = self.records()
        return records[0] if records else None

    def value(self, default: Any = None) -> Any:
        return self.rows[0][0] if self.rows and self.rows[0] else default


@dataclass(frozen=True)
class NodeValue:
    labels: tuple[str, ...]
    properties: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"labels": list(self.labels), "properties": self.properties}


@dataclass(frozen=True)
class RelationshipValue:
    type: str
    properties: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "properties": self.properties}


@dataclass(frozen=True)
class PathValue:
    nodes: tuple[NodeValue, ...]
    relationships: tuple[RelationshipValue, ...]

    def to_json(self) -> dict[str, Any]:
        return {"nodes": [n.to_json() for n in self.nodes],
                "relationships": [r.to_json() for r in self.relationships]}


class GraphStore(abc.ABC):
    """A graph engine: run statements with parameters, batched writes, timeouts, retries."""

    dialect: Dialect
    retries: int = 3
    """How many times kgdb retries a transient failure of a retry-safe statement (0 where the
    engine's own client owns retries)."""

    TRANSACTIONS: ClassVar[bool] = False
    """Whether :meth:`run_unit` runs its statements in one transaction (all or nothing)."""

    timeout_s: float = 300.0
    """Seconds a statement may run (``KGDB_TIMEOUT``)."""
    read_only: bool = False
    """Refuse every write (set on a :meth:`view`; reads also go through read-only calls)."""
    tx_metadata: dict[str, Any] | None = None
    """Transaction metadata sent with every statement where the engine records it (Neo4j's
    ``SHOW TRANSACTIONS`` and query log)."""
    observer: Callable[[Statement], None] | None = None
    """Called with every statement before it runs (a view's record of what a request ran)."""
    remaining: Callable[[], float | None] | None = None
    """Seconds left to the whole request a view serves (None: no limit; it raises
    :class:`~kgdb.errors.QueryTimeoutError` once none are): each statement's timeout is cut
    to it, so a request of many statements still ends on time."""

    def view(self, *, read_only: bool = False, timeout_s: float | None = None,
             metadata: dict[str, Any] | None = None,
             observer: Callable[[Statement], None] | None = None,
             remaining: Callable[[], float | None] | None = None) -> GraphStore:
        """This store for one request: the same connection, with writes refused
        (``read_only``), another statement timeout, transaction metadata, an observer of
        the statements it runs and the request's time left (``remaining``). Close the store
        it came from, never the view."""
        clone = copy.copy(self)
        clone.remaining = remaining
        clone.read_only = read_only or self.read_only
        if timeout_s is not None:
            clone.timeout_s = timeout_s
        clone.tx_metadata = metadata if metadata is not None else self.tx_metadata
        clone.observer = observer
        return clone

    def _admit(self, statements: Iterable[Operation]) -> None:
        for statement in statements:
            if self.read_only and statement.write:
                raise ReadOnlyViolationError(f"{self.address} is read-only here: a write was refused")
            if self.observer is not None and isinstance(statement, Statement):
                self.observer(statement)

    @property
    @abc.abstractmethod
    def address(self) -> str:
        """Where the engine is, for messages (``redis://127.0.0.1:6379 graph 'kgdb'``)."""

    @abc.abstractmethod
    def _run(self, statement: Statement, timeout_s: float | None) -> Result:
        """Run one statement once; raise kgdb errors (transient ones as EngineUnavailableError)."""

    @abc.abstractmethod
    def _command(self, command: EngineCommand) -> Any:
        """Run one engine command."""

    @abc.abstractmethod
    def close(self) -> None: ...

    @abc.abstractmethod
    def reset(self) -> None:
        """Delete every node, relationship, index and constraint of this graph."""

    def drop(self) -> None:
        """Remove the graph itself where the engine has graphs as keys; else empty it."""
        self.reset()

    @abc.abstractmethod
    def server_info(self) -> dict[str, Any]:
        """Engine name and version."""

    # ------------------------------------------------------------------ running
    def run(self, statement: Statement | str, params: dict[str, Any] | None = None, *,
            write: bool | None = None, timeout_s: float | None = None) -> Result:
        """Run a statement; reads go through read-only calls unless ``write`` is set.

        Transient failures (engine restarting, connection dropped) are retried with backoff
        when the statement is safe to repeat (a read, or an idempotent write).
        """
        if isinstance(statement, str):
            statement = Statement(statement, params or {}, write=bool(write))
        elif params or write is not None:
            statement = Statement(statement.text, {**statement.params, **(params or {})},
                                  statement.write if write is None else write,
                                  statement.idempotent)
        check_statement(statement.text, statement.params)  # the text contract, every engine
        self._admit([statement])
        return self._run_checked(statement, self._bounded(timeout_s))

    def _bounded(self, timeout_s: float | None) -> float | None:
        """``timeout_s`` (or the store's) cut to the request's time left."""
        left = self.remaining() if self.remaining is not None else None
        if left is None:
            return timeout_s
        return max(0.001, min(timeout_s or self.timeout_s, left))

    def _run_checked(self, statement: Statement, timeout_s: float | None) -> Result:
        retry_safe = not statement.write or statement.idempotent
        return self._with_retries(lambda: self._run(statement, timeout_s), retry_safe)

    def run_unit(self, statements: Sequence[Statement], *,
                 timeout_s: float | None = None) -> list[Result]:
        """Run ``statements`` as one unit of work. Where the engine has transactions
        (:attr:`TRANSACTIONS`) the unit is one transaction: a failure of any statement writes
        nothing of the unit. Elsewhere the statements run one after another, each atomic on
        its own."""
        for statement in statements:  # the text contract, every engine
            check_statement(statement.text, statement.params)
        self._admit(statements)
        return self._run_unit(list(statements), self._bounded(timeout_s))

    def run_prepared_unit(self, statements: Sequence[Statement]) -> list[Result]:
        """:meth:`run_unit` for statements that :meth:`prepare` returned (already checked
        against the text contract; a writer thread only sends them)."""
        self._admit(statements)
        return self._run_unit(list(statements), None)

    def _run_unit(self, statements: list[Statement], timeout_s: float | None) -> list[Result]:
        return [self._run_checked(statement, timeout_s) for statement in statements]

    def prepare(self, statement: Statement) -> Statement:
        """Check a statement against the text contract and do its client-side work ahead of
        time (FalkorDB renders parameters into the text), so a writer thread only sends it
        (:meth:`run_prepared_unit`)."""
        check_statement(statement.text, statement.params)
        return self._prepare(statement)

    def _prepare(self, statement: Statement) -> Statement:
        return statement

    def execute(self, operation: Operation) -> Any:
        if isinstance(operation, EngineCommand):
            check_statement(" ".join(a for a in operation.args if isinstance(a, str)), {})
            self._admit([operation])
            return self._with_retries(lambda: self._command(operation), True)
        return self.run(operation)

    def run_batches(self, build: Callable[[list[R]], Statement], rows: Iterable[R], *,
                    batch_size: int = 1000,
                    on_batch: Callable[[int], None] | None = None) -> int:
        """Run the statement ``build`` makes for each batch of ``rows``; returns rows sent.

        Each batch is one statement, so a batch is written wholly or not at all.
        """
        sent = 0
        for batch in batched(rows, batch_size):
            self.run(build(batch))
            sent += len(batch)
            if on_batch:
                on_batch(len(batch))
        return sent

    def _with_retries(self, call: Callable[[], T], retry_safe: bool) -> T:
        delay = 0.2
        for attempt in range(self.retries + 1):
            try:
                return call()
            except EngineUnavailableError:
                if not retry_safe or attempt == self.retries:
                    raise
                self._recover()
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def _recover(self) -> None:  # noqa: B027 - an optional hook, not an abstract method
        """Hook to bring the engine back before a retry (the embedded server restarts itself)."""

    # ------------------------------------------------------------------ capabilities
    def plugins(self) -> list[dict[str, Any]]:
        """The procedure libraries the engine has (APOC, GDS on Neo4j), as
        ``{"name", "title", "version"}`` (``version`` None when the library does not report
        one). Libraries that are absent are left out; an engine without plugins gives []."""
        wanted: Sequence[Plugin] = self.dialect.PLUGINS
        if not wanted:
            return []
        found: set[str] = set()
        for probe in (self.dialect.find_functions([p.probe for p in wanted if p.function]),
                      self.dialect.find_procedures([p.probe for p in wanted if not p.function])):
            if probe is not None:
                found.update(str(r[0]) for r in self.run(probe).rows)
        out: list[dict[str, Any]] = []
        for plugin in wanted:
            if plugin.probe not in found:
                continue
            version = None
            if plugin.function:
                version = self.run(housekeeping.version_function_call(plugin)).value()
            out.append({"name": plugin.name, "title": plugin.title,
                        "version": None if version is None else str(version)})
        return out

    def supports_existence_constraints(self) -> bool:
        """Whether the engine enforces property-existence (NOT NULL) constraints."""
        return self.dialect.EXISTENCE_CONSTRAINTS

    # ------------------------------------------------------------------ schema introspection
    def indexes(self) -> list[IndexInfo]:
        """Indexes and constraints, normalised."""
        found = self.dialect.parse_indexes(self.run(self.dialect.list_indexes()).records())
        found += self.dialect.parse_constraints(
            self.run(self.dialect.list_constraints()).records())
        return found

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def batched(rows: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of up to ``size`` items, in order."""
    batch: list[T] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def describe_indexes(infos: Iterable[IndexInfo]) -> str:
    """``range :Phrase(id) [Indexing] 662/13413: UNDER CONSTRUCTION, ...`` for messages."""
    return ", ".join(f"{i.kind} :{i.label}({', '.join(i.properties)}) {i.state}" for i in infos)


def wait_for_index_builds(store: Any, timeout_s: float, *,
                          on_wait: Callable[[list[IndexInfo]], None] | None = None
                          ) -> list[IndexInfo]:
    """Poll ``store.indexes()`` until none is being built: ``[]`` then, else the ones still
    pending once none has made progress for ``timeout_s`` (FalkorDB reports progress,
    "[Indexing] 894985/919361": a large index may take longer as long as it keeps moving).
    ``on_wait`` is told the pending ones once, if there are any."""
    deadline = time.monotonic() + timeout_s
    seen: tuple[str, ...] = ()
    while True:
        pending = [i for i in store.indexes() if i.state != "ONLINE"]
        if not pending:
            return []
        if not seen and on_wait is not None:
            on_wait(pending)
        states = tuple(i.state for i in pending)
        if states != seen:
            seen, deadline = states, max(deadline, time.monotonic() + timeout_s)
        if time.monotonic() > deadline:
            return pending
        time.sleep(0.1)
