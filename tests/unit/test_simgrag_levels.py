"""The pruned engine's next tau: the smallest sum of candidate distances above a bound."""

from __future__ import annotations

import itertools
import math

from hypothesis import given
from hypothesis import strategies as st

from kgdb.retrieve.simgrag import _next_level

distances = st.lists(st.floats(0.0, 2.0, allow_nan=False), min_size=1, max_size=6, unique=True)


@given(st.lists(distances, min_size=1, max_size=4), st.floats(-0.5, 8.5, allow_nan=False))
def test_next_level_is_the_smallest_sum_above(levels: list[list[float]], above: float) -> None:
    levels = [sorted(values) for values in levels]
    sums = [math.fsum(choice) for choice in itertools.product(*levels)]
    bigger = [s for s in sums if s > above]
    found = _next_level(levels, above, budget=10_000)
    assert found == (min(bigger) if bigger else None)


def test_next_level_gives_up_beyond_its_budget() -> None:
    levels = [[i / 100 for i in range(100)]] * 3
    assert _next_level(levels, 1.0, budget=50) is None
    assert _next_level(levels, 0.0, budget=50) == 0.01
    assert _next_level([], 0.0) is None

