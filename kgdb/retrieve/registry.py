"""Every solver, found by name: ``kgdb ask --solver``, ``kgdb retrieve --solver``, ``kgdb eval
retrieval --mode``, ``kgdb bench retrieve``, the service, MCP and the procedure relay all look
solvers up here. Adding a solver is one module (a :class:`~kgdb.retrieve.solver.Solver`
subclass with its options model) and one line below."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import Discriminator, Tag, TypeAdapter

from kgdb.errors import did_you_mean
from kgdb.retrieve.document_graph import DocumentGraphSolver
from kgdb.retrieve.entities import EntitiesSolver
from kgdb.retrieve.hybrid import HybridSolver
from kgdb.retrieve.keyword import KeywordSolver
from kgdb.retrieve.logical_form import LogicalFormSolver
from kgdb.retrieve.pattern import PatternSolver
from kgdb.retrieve.ppr import PprSolver
from kgdb.retrieve.solver import AskError, Solver, SolverOptions
from kgdb.retrieve.triple_context import TripleContextSolver
from kgdb.retrieve.vector import VectorSolver

SOLVERS: dict[str, Solver[Any]] = {s.name: s for s in (
    PatternSolver(),
    LogicalFormSolver(),
    DocumentGraphSolver(),
    TripleContextSolver(),
    VectorSolver(),
    KeywordSolver(),
    EntitiesSolver(),
    HybridSolver(),
    PprSolver(),
)}
"""Solvers by name, in the order ``--help`` lists them."""

DEFAULT_SOLVER = "pattern"
ALIASES = {alias: s.name for s in SOLVERS.values() for alias in s.aliases}


def solver_named(name: str) -> Solver[Any]:
    """The solver called ``name`` (or one of its earlier names)."""
    found = SOLVERS.get(ALIASES.get(name, name))
    if found is None:
        raise AskError(f"unknown solver {name!r}{did_you_mean(name, SOLVERS)}; choose from "
                       f"{', '.join(SOLVERS)}")
    return found


def _solver_tag(value: object) -> str:
    name = value.get("solver", DEFAULT_SOLVER) if isinstance(value, dict) else \
        getattr(value, "solver", DEFAULT_SOLVER)
    return ALIASES.get(str(name), str(name))


def _with_canonical_name(value: object) -> object:
    if isinstance(value, dict):
        return {**value, "solver": _solver_tag(value)}
    return value


if TYPE_CHECKING:
    AnyOptions = SolverOptions
else:
    from pydantic import BeforeValidator

    AnyOptions = Annotated[
        Union[tuple(Annotated[s.options, Tag(s.name)] for s in SOLVERS.values())],  # noqa: UP007
        Discriminator(_solver_tag), BeforeValidator(_with_canonical_name)]
"""Any solver's options, told apart by ``solver`` (default ``pattern``; earlier names
accepted): the request models of the service and MCP use it, so their schemas are generated
from the solvers' own options models."""

_ADAPTER: TypeAdapter[SolverOptions] = TypeAdapter(AnyOptions)


def parse_options(value: dict[str, object] | None) -> SolverOptions:
    """Options for the solver ``value["solver"]`` names, validated by its options model."""
    return _ADAPTER.validate_python(value or {})
