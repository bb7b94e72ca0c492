"""What the solvers need in the graph before they can answer, whether it is there, and which
command builds it (``kgdb stats``, ``kgdb index``, ``KnowledgeBase.index``, and the message of
a retrieval that fails for want of it; docs/indexes.md).

Each solver declares the names of what it needs (:attr:`kgdb.retrieve.solver.Solver.indexes`);
each name is one :class:`IndexKind` here, with a status (``ready``, ``stale`` or ``missing``)
read by a few counting statements (:mod:`kgdb.cypher.readiness`). The indexes loading writes
(``chunks``: documents, chunks and their vector index; ``entities``: entities and theirs) name
the load command; the others name their ``kgdb index`` subcommand, and their builders are
:data:`kgdb.documents.indexing.BUILDERS` (ingestion sits above retrieval).

Adding an index is one :class:`IndexKind` in :data:`INDEXES`, one builder in ``BUILDERS``
and its name in the solver's ``indexes``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kgdb.cypher import readiness as cy
from kgdb.errors import KgdbError
from kgdb.retrieve.solver import AskError
from kgdb.vocabulary import CHUNK, DOCUMENT, ENTITY

if TYPE_CHECKING:
    from kgdb.engine.base import GraphStore
    from kgdb.retrieve.solver import Solver

State = Literal["ready", "stale", "missing"]
"""``ready``: built and current; ``stale``: built, but data loaded or changed since (the
solver answers from the older index); ``missing``: the solver cannot answer."""


@dataclass(frozen=True)
class IndexStatus:
    """One index's state in one graph, with the command that builds or refreshes it."""

    name: str
    state: State
    detail: str
    """Why it is not ready (``not built``, ``12 of 340 documents changed since the build``)
    or what it holds when it is."""
    command: str

    def to_json(self) -> dict[str, Any]:
        return {"index": self.name, "state": self.state, "detail": self.detail,
                "command": self.command}


Found = tuple[State, str, str]
"""What a status function found: the state, the detail, and the command that makes it ready
when it is not :attr:`IndexKind.command` ('': that one)."""

@dataclass(frozen=True)
class IndexKind:
    name: str
    description: str
    """What it is, in a few words, for ``kgdb stats`` and the messages (``the document
    layer``); docs/indexes.md says more."""
    command: str
    """What builds it (``kgdb index knn``, ``kgdb load documents PATH``)."""
    status: Callable[[GraphStore], Found]
    built_by_index: bool = True
    """False: loading writes it (its command is a load); ``kgdb index`` does not build it."""
    needs: tuple[str, ...] = ()
    """Indexes that must be ready (or stale) before this one can be built."""

    def check(self, store: GraphStore) -> IndexStatus:
        state, detail, command = self.status(store)
        return IndexStatus(self.name, state, detail, command or self.command)


def _count(store: GraphStore, statement: Any, column: str) -> int:
    rows = store.run(statement).records()
    return int(rows[0][column]) if rows else 0


def _has_vector_index(store: GraphStore, label: str, prop: str = "embedding") -> bool:
    return any(i.kind == "vector" and i.entity == "node" and i.label == label
               and i.properties == (prop,) for i in store.indexes())


# ------------------------------------------------------------------ statuses

def _chunks_status(store: GraphStore) -> Found:
    chunks = _count(store, cy.count_chunks(), "nodes")
    if not chunks or not _has_vector_index(store, CHUNK):
        return "missing", "none loaded", ""
    return "ready", f"{chunks} chunks", ""


def _entities_status(store: GraphStore) -> Found:
    entities = _count(store, cy.count_entities(), "nodes")
    if not entities or not _has_vector_index(store, ENTITY):
        return "missing", "none loaded", ""
    return "ready", f"{entities} entities", ""


def _knn_status(store: GraphStore) -> Found:
    from kgdb.cypher import knn as knn_cy

    meta = store.run(knn_cy.read_layer(DOCUMENT)).records()
    if not meta or not _has_vector_index(store, DOCUMENT):
        return "missing", "not built", ""
    if not meta[0]["complete"]:
        return "stale", "the last build did not finish", ""
    documents = _count(store, cy.layer_documents(store.dialect), "documents")
    k = max(0, min(int(meta[0]["k"] or 0), documents - 1))
    pending = _count(store, cy.pending_layer_documents(store.dialect, k), "pending")
    if pending:
        return ("stale", f"{pending} of {documents} documents new or changed since the build",
                "")
    return "ready", f"{documents} documents, k={meta[0]['k']}", ""


def _triples_status(store: GraphStore) -> Found:
    from kgdb.cypher import triples as triples_cy

    rows = store.run(triples_cy.fact_types(store.dialect)).records()
    facts = sum(int(r["facts"]) for r in rows)
    if not facts:
        return "missing", "no facts loaded", "kgdb load triples FILE, then kgdb index triples"
    embedded = sum(int(r["embedded"]) for r in rows)
    indexed = {i.label for i in store.indexes() if i.kind == "vector"
               and i.entity == "relationship" and i.properties == (triples_cy.EMBEDDING,)}
    if not embedded or not indexed:
        return "missing", "not built", ""
    unindexed = [str(r["type"]) for r in rows if str(r["type"]) not in indexed]
    if embedded < facts or unindexed:
        return "stale", f"{facts - embedded} of {facts} facts without a triple text", ""
    return "ready", f"{facts} facts of {len(rows)} relation types", ""


def _ppr_status(store: GraphStore) -> Found:
    from kgdb.cypher import pagerank as ppr_cy

    meta = store.run(ppr_cy.read_meta()).records()
    if not meta or meta[0]["built"] is None:
        return "missing", "not built", ""
    if meta[0]["pending"]:
        return "stale", "the last build did not finish", ""
    pending = _count(store, cy.pending_ppr_chunks(), "pending")
    chunks = _count(store, cy.count_chunks(), "nodes")
    if pending:
        return "stale", f"{pending} of {chunks} chunks new since the build", ""
    return "ready", f"{chunks} chunks", ""


def _fulltext_status(store: GraphStore) -> Found:
    # The engines keep a built full-text index current as chunks are written: never stale.
    from kgdb.cypher import lexical as lexical_cy

    if not store.dialect.lexical_index_ready(store.indexes(), CHUNK, lexical_cy.LEXICAL_FIELDS):
        return "missing", "not built", ""
    return "ready", f"{_count(store, cy.count_chunks(), 'nodes')} chunks", ""


INDEXES: dict[str, IndexKind] = {i.name: i for i in (
    IndexKind("chunks", "documents", "kgdb load documents PATH", _chunks_status,
              built_by_index=False),
    IndexKind("entities", "entities", "kgdb load triples FILE", _entities_status,
              built_by_index=False),
    IndexKind("knn", "the document layer", "kgdb index knn", _knn_status, needs=("chunks",)),
    IndexKind("triples", "triple texts", "kgdb index triples", _triples_status,
              needs=("entities",)),
    IndexKind("ppr", "the retrieval graph", "kgdb index ppr", _ppr_status, needs=("chunks",)),
    IndexKind("fulltext", "the lexical index", "kgdb index fulltext", _fulltext_status,
              needs=("chunks",)),
)}
"""Every index a solver may need, by name, in build order (the builders:
:data:`kgdb.documents.indexing.BUILDERS`)."""


class NotReadyError(AskError):
    """A solver's index is missing: the message names the command that builds it."""


@dataclass
class SolverReadiness:
    solver: str
    indexes: list[IndexStatus] = field(default_factory=list)

    @property
    def state(self) -> State:
        states = {i.state for i in self.indexes}
        return "missing" if "missing" in states else "stale" if "stale" in states else "ready"

    def message(self) -> str:
        """One line: what is missing and which command builds it (empty when ready)."""
        missing = [i for i in self.indexes if i.state == "missing"]
        if not missing:
            return ""
        first = missing[0]
        kind = INDEXES[first.name]
        hint = ", or kgdb index for every solver" if first.command == kind.command and \
            kind.built_by_index else ""
        return (f"the {self.solver} solver needs {kind.description} ({first.detail}): "
                f"run {first.command}{hint}")

    def to_json(self) -> dict[str, Any]:
        return {"solver": self.solver, "state": self.state,
                "indexes": [i.to_json() for i in self.indexes]}


def index_statuses(store: GraphStore, names: Iterable[str]) -> dict[str, IndexStatus]:
    """The status of each index named (each read once)."""
    return {name: INDEXES[name].check(store) for name in dict.fromkeys(names)}


def readiness(store: GraphStore, solvers: Iterable[Solver[Any]] | None = None
              ) -> list[SolverReadiness]:
    """Each solver's readiness (default: every registered solver), each index read once."""
    from kgdb.retrieve.registry import SOLVERS

    chosen = list(SOLVERS.values() if solvers is None else solvers)
    statuses = index_statuses(store, (n for s in chosen for n in s.indexes))
    return [SolverReadiness(s.name, [statuses[n] for n in s.indexes]) for s in chosen]


def explain_failure(store: GraphStore, solver: Solver[Any]) -> str:
    """After ``solver`` failed: the one-line :meth:`SolverReadiness.message` when one of its
    indexes is missing, else '' (the failure has another cause, or the graph cannot be read
    to tell)."""
    if not solver.indexes:
        return ""
    try:
        return readiness(store, [solver])[0].message()
    except KgdbError:
        return ""
