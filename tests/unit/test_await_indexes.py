"""Waiting for indexes: as long as they make progress, never longer once they stall."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kgdb.dialects import FalkorDBDialect
from kgdb.dialects.base import IndexInfo
from kgdb.errors import SchemaError
from kgdb.schema.apply import await_indexes


class _Store:
    """What await_indexes asks of a FalkorDB store: its dialect and its indexes' states."""

    dialect = FalkorDBDialect()

    def __init__(self, states: Any) -> None:
        self.states = states

    def indexes(self) -> list[IndexInfo]:
        return [IndexInfo("vector", "node", "Entity", ("embedding",), state=next(self.states))]


def test_a_slow_index_that_keeps_moving_is_waited_for() -> None:
    started = time.monotonic()

    def states() -> Any:
        done = 0
        while time.monotonic() - started < 1.0:  # four times the timeout
            done += 1
            yield f"[Indexing] {done}/1000: UNDER CONSTRUCTION"
        while True:
            yield "ONLINE"

    await_indexes(_Store(states()), timeout_s=0.25)  # type: ignore[arg-type]
    assert time.monotonic() - started >= 1.0


def test_a_stalled_index_fails_after_the_timeout() -> None:
    def states() -> Any:
        while True:
            yield "[Indexing] 0/0: UNDER CONSTRUCTION"

    started = time.monotonic()
    with pytest.raises(SchemaError, match=r"made no progress for 0 s: vector :Entity\(embedding\)"):
        await_indexes(_Store(states()), timeout_s=0.3)  # type: ignore[arg-type]
    assert 0.3 <= time.monotonic() - started < 2.0
