"""Fusion by meaning keeps its promise (issue 24): no pair in a fused group is below the
threshold (no transitive chains), groups never mix types, and the work is sub-quadratic
(blocking by type and name keys)."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kgdb.documents.align import fusion_groups


def _chain(step: float, n: int) -> np.ndarray:
    """Unit vectors on a circle, each ``step`` radians from the previous: neighbours close,
    the ends far apart."""
    return np.array([[np.cos(i * step), np.sin(i * step)] for i in range(n)], dtype=np.float32)


def test_a_chain_of_close_names_is_not_fused_end_to_end() -> None:
    vectors = _chain(0.25, 6)  # neighbours: cos 0.969; two apart: cos 0.878
    names = [f"Acme Studio {i}" for i in range(6)]
    groups = fusion_groups(names, ["Org"] * 6, vectors, 0.95)
    assert groups and all(len(g) == 2 for g in groups)  # pairs, never the chain
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for g in groups:
        assert float((unit[g] @ unit[g].T).min()) >= 0.95


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["Film", "Person", None]),
                          st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3)),
                min_size=2, max_size=40),
       st.floats(0.5, 0.99))
def test_no_pair_in_a_group_is_below_the_threshold(items: list, threshold: float) -> None:
    types = [t for t, _ in items]
    vectors = np.array([v for _, v in items], dtype=np.float32) + 1e-3
    names = [f"shared name {i}" for i in range(len(items))]  # one block: all compared
    groups = fusion_groups(names, types, vectors, threshold)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    seen: set[int] = set()
    for group in groups:
        assert len(group) >= 2 and not seen & set(group)
        seen |= set(group)
        assert len({types[i] for i in group}) == 1
        assert float((unit[group] @ unit[group].T).min()) >= threshold - 1e-6


def test_work_is_sub_quadratic() -> None:
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(3000)]
    names = [" ".join(rng.sample(vocabulary, 3)) for _ in range(5000)]
    vectors = np.random.default_rng(7).normal(size=(5000, 16)).astype(np.float32)
    stats: dict[str, int] = {}
    fusion_groups(names, ["Thing"] * 5000, vectors, 0.95, stats)
    assert stats["compared"] < 5000 * 4999 // 2 // 50
