"""The bulk loader's record of written facts (kgdb.load.triples.PairSet) answers as a Python
set would, batch after batch, including repeats inside one batch."""

from __future__ import annotations

import numpy as np
import pytest

from kgdb.load.triples import PairSet


@pytest.mark.parametrize("seed", range(5))
def test_pair_set_is_a_set(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pairs = PairSet()
    seen: set[int] = set()
    for _ in range(60):
        # small key ranges make repeats common, within a batch and across batches
        keys = (rng.integers(0, 40, size=int(rng.integers(0, 50))).astype(np.uint64) << 32
                | rng.integers(0, 40, size=1).astype(np.uint64))
        new = pairs.add(keys).tolist()
        expected = []
        for key in keys.tolist():
            expected.append(key not in seen)
            seen.add(key)
        assert new == expected
        assert len(pairs) == len(seen)
        assert all(np.all(run[:-1] < run[1:]) for run in pairs.runs)
    assert len(pairs.runs) <= 12  # runs are merged as they grow


def test_extreme_keys() -> None:
    pairs = PairSet()
    top = np.array([(1 << 64) - 1, 0, (1 << 32) - 1], dtype=np.uint64)
    assert pairs.add(top).tolist() == [True, True, True]
    assert pairs.add(top[::-1]).tolist() == [False, False, False]
