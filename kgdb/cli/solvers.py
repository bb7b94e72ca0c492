"""Command-line options generated from the solvers' options models: each option's default,
range and help are written once, in its solver's model (:mod:`kgdb.retrieve.registry`), and
become a click option here. An option that several solvers share is one flag."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import annotated_types
import click
from pydantic import ValidationError
from pydantic.fields import FieldInfo

from kgdb.retrieve.registry import DEFAULT_SOLVER, SOLVERS, parse_options, solver_named
from kgdb.retrieve.solver import SolverOptions

F = TypeVar("F", bound=Callable[..., Any])

SPECIAL = ("solver", "pattern")
"""Fields with options of their own: ``--solver`` and ``--pattern``."""


def shared_fields() -> dict[str, FieldInfo]:
    """Every option of every solver, by name (shared options are one field)."""
    out: dict[str, FieldInfo] = {}
    for solver in SOLVERS.values():
        for name, info in solver.options.model_fields.items():
            if name not in SPECIAL:
                out.setdefault(name, info)
    return out


def owners(name: str) -> list[str]:
    """The solvers that have option ``name``."""
    return [s.name for s in SOLVERS.values() if name in s.options.model_fields]


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def click_option(name: str, info: FieldInfo, *, default: Any = None) -> Callable[[F], F]:
    """The click option for one field: its type and range from the annotation and the
    field's constraints, its help from the description with the default. ``default`` None
    leaves the value unset so that the solver's own default applies."""
    annotation = info.annotation
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    bounds = {type(m): m for m in info.metadata}
    low = getattr(bounds.get(annotated_types.Ge), "ge", None)
    high = getattr(bounds.get(annotated_types.Le), "le", None)
    shown = info.default if default is None else default
    help_text = f"{info.description or name} [default: {_shown(shown)}]"
    kwargs: dict[str, Any] = {"default": default, "help": help_text}
    if annotation is bool:
        return click.option(flag(name), name, is_flag=True, flag_value=True, **kwargs)
    if get_origin(annotation) is Literal:
        kwargs["type"] = click.Choice([str(a) for a in get_args(annotation)])
    elif annotation is int:
        kwargs["type"] = click.IntRange(low, high)
    elif annotation is float:
        kwargs["type"] = click.FloatRange(low, high)
    else:
        kwargs["type"] = str
    return click.option(flag(name), name, **kwargs)


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def solver_options(func: F) -> F:
    """``--solver``, ``--pattern`` and every solver's options, for ``kgdb ask`` and ``kgdb
    retrieve`` (the command receives them as ``solver``, ``pattern`` and ``**options``)."""
    for name, info in reversed(shared_fields().items()):
        func = click_option(name, info)(func)
    func = click.option(
        "--pattern", "pattern", multiple=True, metavar="'HEAD|RELATION|TAIL'",
        help="pattern: a triple of the pattern graph (repeat for each; unknowns as "
             "'UNKNOWN <type> <n>'): retrieval without an LLM.")(func)
    listed = "; ".join(f"{s.name}: {s.summary}" for s in SOLVERS.values())
    return click.option(
        "--solver", "solver", default=DEFAULT_SOLVER, show_default=True,
        type=click.Choice([*SOLVERS, *sorted({a for s in SOLVERS.values() for a in s.aliases})]),
        help=f"How to answer ({listed}). Each option below names the solvers it belongs to."
    )(func)


def pattern_triples(values: Iterable[str]) -> list[tuple[str, str, str]] | None:
    """``--pattern 'head|relation|tail'`` values as triples (None when none were given)."""
    triples = []
    for value in values:
        parts = [p.strip() for p in value.split("|")]
        if len(parts) != 3 or not all(parts):
            raise click.BadParameter(f"{value!r} is not 'head|relation|tail'",
                                     param_hint="--pattern")
        triples.append((parts[0], parts[1], parts[2]))
    return triples or None


def options_from_cli(solver: str, pattern: Iterable[str], given: dict[str, Any]
                     ) -> SolverOptions:
    """The options model of ``solver`` from the flags given (unset flags keep the solver's
    defaults); a flag of another solver is a usage error that says whose it is."""
    chosen = solver_named(solver)
    fields = chosen.options.model_fields
    values: dict[str, Any] = {"solver": chosen.name}
    for name, value in given.items():
        if value is None:
            continue
        if name not in fields:
            raise click.UsageError(f"{flag(name)} is an option of {', '.join(owners(name))}, "
                                   f"not of the {chosen.name} solver")
        values[name] = value
    triples = pattern_triples(pattern)
    if triples is not None:
        if "pattern" not in fields:
            raise click.UsageError(f"--pattern is an option of {', '.join(owners('pattern'))}, "
                                   f"not of the {chosen.name} solver")
        values["pattern"] = triples
    try:
        return parse_options(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise click.UsageError(f"{flag(str(error['loc'][-1]))}: {error['msg']}") from exc


def pattern_field_options(names: Iterable[str], **defaults: Any) -> Callable[[F], F]:
    """Some of the ``pattern`` solver's options (``kgdb eval metaqa``, ``kgdb bench
    retrieve``), with other defaults where a command's purpose needs them."""
    fields = SOLVERS["pattern"].options.model_fields

    def decorate(func: F) -> F:
        for name in reversed(list(names)):
            func = click_option(name, fields[name],
                                default=defaults.get(name, fields[name].default))(func)
        return func
    return decorate
