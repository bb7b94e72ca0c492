"""What the dialect layer hands to an engine: Cypher text with its parameters, or an engine command."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Statement:
    """One Cypher statement and its parameters. Values are never pasted into ``text``."""

    text: str
    params: dict[str, Any] = field(default_factory=dict)
    write: bool = False
    """True when the statement may write; read statements run through read-only calls."""
    idempotent: bool = False
    """True when running it twice equals running it once (MERGE), so a write may be retried
    after a transient failure. Reads are always retried."""

    def with_params(self, **params: Any) -> Statement:
        return Statement(self.text, {**self.params, **params}, self.write, self.idempotent)


class _GraphKey:
    """Placeholder for the graph's key inside :class:`EngineCommand` arguments."""

    def __repr__(self) -> str:
        return "<graph>"


GRAPH_KEY = _GraphKey()


@dataclass(frozen=True)
class EngineCommand:
    """A non-Cypher administrative command (FalkorDB constraints are Redis commands).

    :data:`GRAPH_KEY` in ``args`` is replaced by the engine with the graph's key.
    """

    name: str
    args: tuple[Any, ...] = ()
    description: str = ""
    write: bool = True
    """False for a command that only reads (a read-only store view runs only those)."""


Operation = Statement | EngineCommand


def statement_lines(statements: list[Statement], *, max_params: int = 2000) -> list[str]:
    """``Cypher that ran:`` and each statement with its parameters as a person reads them
    (re-runnable as printed, vectors shown by size), for every command that shows its work."""
    import json

    lines = ["", "Cypher that ran:"]
    for statement in statements:
        params = json.dumps(shown_params(statement.params), default=str, ensure_ascii=False)
        lines += [statement.text, "params: " + params[:max_params], ""]
    return lines


def shown_params(params: dict[str, Any], *, max_items: int = 20) -> dict[str, Any]:
    """Parameters as a person reads them: embedding vectors become ``<384-d vector>`` and long
    lists are cut to their first ``max_items`` items (with a count of the rest)."""

    def shown(value: Any) -> Any:
        if hasattr(value, "tolist"):
            value = value.tolist()
        if isinstance(value, list | tuple):
            if len(value) >= 32 and all(isinstance(x, float) for x in value):
                return f"<{len(value)}-d vector>"
            items = [shown(x) for x in value[:max_items]]
            if len(value) > max_items:
                items.append(f"... {len(value) - max_items} more")
            return items
        if isinstance(value, dict):
            return {k: shown(v) for k, v in value.items()}
        return value

    return {k: shown(v) for k, v in params.items()}
