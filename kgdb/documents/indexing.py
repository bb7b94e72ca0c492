"""``kgdb index`` with no subcommand (and ``KnowledgeBase.index``): build or refresh every
index a registered solver needs (:attr:`kgdb.retrieve.solver.Solver.indexes`), each with its
own incremental builder and the options it was last built with.

The indexes, their statuses and commands are :data:`kgdb.retrieve.readiness.INDEXES` (below
ingestion, so that retrieval can say what is missing); their builders are :data:`BUILDERS`
here. A builder writes nothing when its index is current, so a second ``kgdb index`` only
reads (docs/indexes.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.retrieve.readiness import INDEXES, IndexStatus, NotReadyError, index_statuses
from kgdb.vocabulary import DOCUMENT

Builder = Callable[[GraphStore, Embedder, bool], Any]
"""``build(store, embedder, progress)``: bring the index up to date with the options it was
last built with (the defaults the first time); returns the builder's report (with
``to_json``)."""


def _build_knn(store: GraphStore, embedder: Embedder, progress: bool) -> Any:
    from kgdb.cypher import knn as knn_cy
    from kgdb.documents.knn import DEFAULT_K, build_knn

    meta = store.run(knn_cy.read_layer(DOCUMENT)).records()
    k = int(meta[0]["k"]) if meta and meta[0]["k"] else DEFAULT_K  # the K it was built with
    return build_knn(store, label=DOCUMENT, k=k)


def _build_triples(store: GraphStore, embedder: Embedder, progress: bool) -> Any:
    from kgdb.documents.triple_index import index_triples

    return index_triples(store, embedder, progress=progress)


def _build_ppr(store: GraphStore, embedder: Embedder, progress: bool) -> Any:
    from kgdb.documents.ppr_graph import build_graph, stored_options

    return build_graph(store, embedder, stored_options(store))  # the options it was built with


def _build_fulltext(store: GraphStore, embedder: Embedder, progress: bool) -> Any:
    from kgdb.documents.fulltext import build_fulltext

    return build_fulltext(store)


BUILDERS: dict[str, Builder] = {
    "knn": _build_knn,
    "triples": _build_triples,
    "ppr": _build_ppr,
    "fulltext": _build_fulltext,
}
"""The builder of every index ``kgdb index`` builds, by its name in
:data:`~kgdb.retrieve.readiness.INDEXES`."""

OWN_PROGRESS = frozenset({"triples"})
"""Builders that show a progress bar of their own (``kgdb index`` then shows no spinner
beside it)."""


def needed_indexes() -> list[str]:
    """The buildable indexes some registered solver needs, in the order of ``INDEXES``."""
    from kgdb.retrieve.registry import SOLVERS

    wanted = {n for s in SOLVERS.values() for n in s.indexes}
    return [name for name in INDEXES if name in BUILDERS and name in wanted]


@dataclass
class IndexStep:
    """What ``kgdb index`` did with one index: ``built`` (its builder ran; ``report`` says
    what it wrote, possibly nothing) or ``skipped`` (what it needs is missing: ``reason``)."""

    name: str
    outcome: Literal["built", "skipped"]
    before: IndexStatus
    after: IndexStatus | None = None
    report: Any = None
    reason: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.name, "outcome": self.outcome,
                               "before": self.before.to_json(),
                               "after": self.after.to_json() if self.after else None,
                               "seconds": round(self.seconds, 3)}
        if self.report is not None:
            out["report"] = self.report.to_json()
        if self.reason:
            out["reason"] = self.reason
        return out


def build_indexes(store: GraphStore, embedder: Embedder, names: Iterable[str] | None = None,
                  *, progress: bool = False,
                  on_step: Callable[[str, IndexStatus], None] | None = None
                  ) -> list[IndexStep]:
    """Build or refresh each index of ``names`` (default :func:`needed_indexes`) whose
    prerequisites are there, incrementally. ``on_step(name, status)`` is called before each
    build (the CLI shows progress with it)."""
    import time

    steps: list[IndexStep] = []
    for name in names if names is not None else needed_indexes():
        kind = INDEXES.get(name)
        if kind is None or name not in BUILDERS:
            written = f"; {kind.command} writes it" if kind is not None else ""
            raise NotReadyError(f"kgdb index does not build {name!r}{written}; it builds "
                                f"{', '.join(BUILDERS)}")
        before = kind.check(store)
        lacking = [s for s in index_statuses(store, kind.needs).values()
                   if s.state == "missing"]
        if lacking:
            steps.append(IndexStep(name, "skipped", before, reason=(
                f"needs {INDEXES[lacking[0].name].description} ({lacking[0].detail}): "
                f"run {lacking[0].command}")))
            continue
        if on_step is not None:
            on_step(name, before)
        start = time.perf_counter()
        report = BUILDERS[name](store, embedder, progress)
        steps.append(IndexStep(name, "built", before, kind.check(store), report,
                               seconds=time.perf_counter() - start))
    return steps
