"""The load test's judge (benchmarks/loadtest.py): an answer equal to one the request got
alone is ok; one whose reads straddled the writer's commit (made of the accepted states'
parts) is counted apart; anything else is wrong."""

from __future__ import annotations

import math
import random
import statistics

from benchmarks.loadtest import Checker, Tenant, composed, think_pause

ABSENT = {"passages": [{"id": "a#0", "score": 0.9}, {"id": "b#0", "score": 0.5}],
          "facts": [], "evidence": "line a\nline b"}
PRESENT = {"passages": [{"id": "a#0", "score": 0.9}, {"id": "tide#0", "score": 0.6},
                        {"id": "b#0", "score": 0.5}],
           "facts": [["Tide log", "mentions", "harbour"]], "evidence": "line a\nline tide"}


def test_an_answer_of_one_state_is_composed() -> None:
    assert composed(ABSENT, [ABSENT, PRESENT])
    assert composed(PRESENT, [ABSENT, PRESENT])


def test_a_mix_of_the_two_states_is_composed() -> None:
    mixed = {**PRESENT, "facts": []}  # the passage seen, its facts not yet
    assert composed(mixed, [ABSENT, PRESENT])
    assert composed({**ABSENT, "evidence": "line a\nline tide"}, [ABSENT, PRESENT])


def test_anything_else_is_not() -> None:
    other = {"id": "z#0", "score": 0.9}
    assert not composed({**ABSENT, "passages": [other]}, [ABSENT, PRESENT])
    assert not composed({**ABSENT, "passages": []}, [ABSENT, PRESENT])  # shorter than both
    assert not composed({**ABSENT, "passages": ABSENT["passages"] * 2}, [ABSENT, PRESENT])
    assert not composed({**ABSENT, "evidence": "line a\nline z"}, [ABSENT, PRESENT])
    assert not composed({**ABSENT, "passages": [{"id": "a#0", "score": 0.7},
                                                 {"id": "b#0", "score": 0.5}]},
                        [ABSENT, PRESENT])  # a score off
    assert not composed({"passages": ABSENT["passages"]}, [ABSENT, PRESENT])  # keys differ


def test_the_checker_counts_a_straddled_answer_apart_and_only_where_states_differ() -> None:
    checker = Checker([Tenant("t1", ["Film"], [])])
    checker.accept("t1", 0, ABSENT)
    mixed = {**PRESENT, "facts": []}
    assert checker.judge("t1", 0, mixed) == "wrong"  # one state: nothing to straddle
    checker.accept("t1", 0, PRESENT)
    assert checker.judge("t1", 0, ABSENT) == "ok"
    assert checker.judge("t1", 0, mixed) == "straddled"
    assert checker.judge("t1", 0, {**ABSENT, "passages": [{"id": "z#0", "score": 1}] * 2}
                         ) == "wrong"


def test_think_time_is_exponential_with_its_mean_and_ends_with_the_load() -> None:
    rng = random.Random(7)
    pauses = [think_pause(rng, 2.0, 1e9) for _ in range(20_000)]
    assert min(pauses) >= 0
    assert abs(statistics.fmean(pauses) - 2.0) < 0.1
    # exponential: the median is ln 2 of the mean (a uniform or fixed pause is not)
    assert abs(statistics.median(pauses) - 2.0 * math.log(2)) < 0.1
    assert think_pause(rng, 2.0, 0.25) <= 0.25  # never past the end of the load
    assert think_pause(rng, 2.0, -1.0) == 0.0
    assert think_pause(rng, 0.0, 100.0) == 0.0  # closed loop
