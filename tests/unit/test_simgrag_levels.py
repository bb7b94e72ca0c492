"""The pruned engine's next tau: the smallest sum of candidate distances above a bound."""

from __future__ import annotations

import itertools
import math

from hypothesis import given
from hypothesis import strategies as st

from kgdb.retrieve.pattern_search import _next_level

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



def test_the_tau_schedule_takes_single_gsds_then_capped_jumps() -> None:
    """The pruned engine's next tau: the next achievable GSD alone (an unordered run) for the
    first runs; then the slack schedule, capped at four times the anchor candidates admitted
    so far, but never below the next achievable GSD."""
    from kgdb.retrieve.pattern_search import EXACT_RUNS, PRUNE_SLACKS, _next_tau

    anchors = [0.0, 0.5, 0.51, 0.52, 0.53, 0.54, 0.55, 0.56, 0.57, 0.58, 0.9]
    levels = [anchors, [0.0, 0.1]]
    assert _next_tau(0.0, 1e-9, 1, 0.0, 3.0, levels, anchors) == (0.1, True)
    assert EXACT_RUNS == 2
    # third run: lower + 0.25 would admit one anchor; the next GSD is above it anyway
    assert _next_tau(0.1, 0.1 + 1e-9, 2, 0.0, 3.0, levels, anchors) == (0.5, True)
    # 2 anchors admitted: at most 8, so tau stops at the 8th anchor's bound, below 0.75
    assert PRUNE_SLACKS[2] == 0.75
    assert _next_tau(0.5, 0.5, 3, 0.0, 3.0, levels, anchors) == (0.56, False)
    # 8 admitted: at most 32, more than there are: the slack decides
    assert _next_tau(0.56, 0.56, 4, 0.0, 3.0, levels, anchors) == (0.75, False)
    # beyond every slack: everything (upper)
    assert _next_tau(3.75, 3.75, 9, 0.0, 4.0, [[0.0, 4.0]], []) == (4.0, True)
