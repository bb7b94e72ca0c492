"""The one parameter helper: builders add values and paste back the ``$name`` it returns.

Values never enter Cypher text; parameter names are chosen here, inside the builders, so no
caller outside :mod:`kgdb.cypher` knows one.
"""

from __future__ import annotations

from typing import Any


class Params:
    """Parameters of one statement under construction."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def add(self, name: str, value: Any) -> str:
        """Store ``value`` as ``$name`` (a fresh suffix if the name is taken); returns ``$name``."""
        if not name.isidentifier():
            raise ValueError(f"invalid parameter name {name!r}")
        key, n = name, 1
        while key in self.values:
            n += 1
            key = f"{name}_{n}"
        self.values[key] = value
        return f"${key}"
