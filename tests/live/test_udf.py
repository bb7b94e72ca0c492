"""The kgdb UDF library on the embedded FalkorDB: install, status (equal, then changed),
every function equal to kgdb's Python computation (hypothesis), bounded and hostile inputs
refused without running anything, survival of a server restart, drop."""

from __future__ import annotations

import math
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgdb.procedures import falkordb as udf
from kgdb.retrieve.hybrid import RRF_K
from tests.support.hostile import CORPUS

pytestmark = pytest.mark.live

IDS = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=6) | st.integers(
    -(2**53) + 1, 2**53 - 1)
"""Ids are strings or integers (never coerced: 1 and "1" are two ids)."""


def _id_key(value: str | int) -> tuple[bool, str | int]:
    return isinstance(value, str), value  # integers first, numerically; strings by code point
DISTANCES = st.floats(min_value=0.0, max_value=4.0, allow_nan=False) | st.sampled_from(
    [0.0, 0.5, 1.0])  # ties are likely


@pytest.fixture
def library(falkordb_store: Any) -> Any:
    udf.install(falkordb_store)
    yield falkordb_store
    udf.drop(falkordb_store)


def _topk_reference(ids: list[Any], distances: list[float], k: int) -> list[tuple[Any, float]]:
    best: dict[Any, float] = {}
    for i, d in zip(ids, distances, strict=True):
        best[i] = min(best.get(i, d), d)
    return sorted(best.items(), key=lambda x: (x[1], _id_key(x[0])))[:k]


@given(st.lists(st.tuples(IDS, DISTANCES), max_size=30), st.integers(0, 40))
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
def test_topk_equals_python(library: Any, pairs: list[tuple[Any, float]], k: int) -> None:
    ids, distances = [p[0] for p in pairs], [p[1] for p in pairs]
    rows = library.run("UNWIND kgdb.topk($ids, $d, $k) AS r "
                       "RETURN r.rank AS rank, r.id AS id, r.distance AS distance",
                       {"ids": ids, "d": distances, "k": k}).records()
    expected = _topk_reference(ids, distances, k)
    assert [r["id"] for r in rows] == [i for i, _ in expected]
    # FalkorDB replies with 15 significant digits
    assert all(math.isclose(r["distance"], d, rel_tol=1e-14, abs_tol=1e-300)
               for r, (_, d) in zip(rows, expected, strict=True))
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))


def _rrf_reference(rankings: list[list[Any]], k: int) -> list[Any]:
    scores: dict[Any, float] = {}
    for ranking in rankings:  # kgdb.retrieve.hybrid.rrf, the hybrid solver
        for i, d in enumerate(ranking):
            scores[d] = scores.get(d, 0.0) + 1.0 / (RRF_K + i + 1)
    return sorted(scores, key=lambda d: (-scores[d], _id_key(d)))[:k]


@given(st.lists(st.lists(IDS, max_size=8, unique=True), max_size=3), st.integers(0, 20))
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
def test_rrf_equals_python(library: Any, rankings: list[list[Any]], k: int) -> None:
    rows = library.run("UNWIND kgdb.rrf($r, $c, $k) AS r RETURN r.id AS id",
                       {"r": rankings, "c": RRF_K, "k": k}).records()
    assert [r["id"] for r in rows] == _rrf_reference(rankings, k)


def test_status_install_change_and_drop(library: Any) -> None:
    report = udf.status(library)
    assert report["up_to_date"] and report["installed"] == [
        "kgdb.version", "kgdb.topk", "kgdb.rrf", "kgdb.ppr", "kgdb.pprKnown", "kgdb.pprHasBlock",
        "kgdb.pprStored"]
    udf.load(library, udf.script().replace("kgdb-udf/4", "kgdb-udf/0"))
    assert udf.status(library)["changed"] == ["kgdb"]
    assert library.run("RETURN kgdb.version() AS v").value(0) == "kgdb-udf/0"
    udf.install(library)
    assert udf.status(library)["up_to_date"]
    assert udf.drop(library)["dropped"] and not udf.status(library)["installed"]
    assert udf.drop(library)["dropped"] == []


def test_bad_and_hostile_input_is_refused_or_a_value(library: Any) -> None:
    from kgdb.errors import StatementError

    for text in CORPUS.values():
        if "\x00" in text or any(0xD800 <= ord(c) <= 0xDFFF for c in text) or \
                any((ord(c) < 0x20 and c not in "\t\n\r") or 0x7F <= ord(c) <= 0x9F
                    for c in text):  # refused by kgdb's text contract before any engine
            continue
        rows = library.run("UNWIND kgdb.topk([$t], [0.5], 1) AS r RETURN r.id AS id",
                           {"t": text}).records()
        assert rows == [{"id": text}]
    for call, message in (("kgdb.topk([1], [1, 2], 1)", "differ in length"),
                          ("kgdb.topk('x', [1], 1)", "must be a list"),
                          ("kgdb.topk([1], [1], -1)", "k must be"),
                          ("kgdb.topk(range(0, 50000), range(0, 50000), 1)", "more than")):
        with pytest.raises(StatementError, match=message):
            library.run(f"RETURN {call} AS v")


def test_ids_are_typed_arity_checked_and_work_bounded(library: Any) -> None:
    """Issue 24: ids are strings or integers, never coerced or merged; a wrong number of
    arguments is an error; the work of one call is bounded by a clear error, never
    interrupted by FalkorDB's UDF time limit."""
    from kgdb.errors import QueryTimeoutError, StatementError

    rows = library.run("UNWIND kgdb.topk([1, '1', 1.0, 'null'], [0.5, 0.5, 0.4, 0.5], 9) AS r "
                       "RETURN r.id AS id, r.distance AS d").records()
    assert rows == [{"id": 1, "d": 0.4}, {"id": "1", "d": 0.5}, {"id": "null", "d": 0.5}]
    fused = library.run("UNWIND kgdb.rrf([[1, 'a'], ['1', 'a']], 60, 9) AS r "
                        "RETURN r.id AS id, r.score AS s").records()
    assert [r["id"] for r in fused] == ["a", 1, "1"]
    assert fused[1]["s"] == pytest.approx(1 / 61) and fused[0]["s"] == pytest.approx(2 / 62)
    for call, message in (("kgdb.topk([null], [1], 1)", "strings or integers, not null"),
                          ("kgdb.topk([{a: 1}], [1], 1)", "strings or integers, not object"),
                          ("kgdb.topk([[1]], [1], 1)", "strings or integers, not a list"),
                          ("kgdb.topk([1.5], [1], 1)", "strings or integers"),
                          ("kgdb.rrf([[null]], 60, 1)", "strings or integers"),
                          ("kgdb.topk([1], [1], 1, 'extra')", "takes 3 arguments"),
                          ("kgdb.rrf([[1]], 60)", "takes 3 arguments"),
                          ("kgdb.version(1)", "takes 0 arguments")):
        with pytest.raises(StatementError, match=message) as info:
            library.run(f"RETURN {call} AS v")
        assert "Stack" not in str(info.value)
    # at the limits the call completes (ties everywhere: the slowest order to sort)
    big = ("WITH [x IN range(0, $n - 1) | $p + toString(x)] AS ids "
           "RETURN size(kgdb.topk(ids, [x IN ids | 0.5], $n)) AS v")
    try:
        assert library.run(big, {"n": 49_999, "p": "é"}).value(0) == 49_999
        assert library.run(big, {"n": 4_000, "p": "\U0001F600\ue000" * 60}).value(0) == 4_000
    except QueryTimeoutError:
        pytest.fail("a call within the limits was stopped by FalkorDB's UDF time limit")
    with pytest.raises(StatementError, match="more than 1000000 characters"):
        library.run(big, {"n": 20_000, "p": "x" * 60})


def test_library_survives_a_server_restart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    from kgdb.config import Settings
    from kgdb.engine import connect
    from kgdb.engine.embedded import EmbeddedServer

    monkeypatch.setenv("KGDB_HOME", str(tmp_path / "home"))
    server = EmbeddedServer(tmp_path / "home")
    try:
        with connect(Settings.from_env(graph="udf")) as store:
            udf.install(store)
            state = server.status()
            assert state is not None
            os.kill(state.pid, signal.SIGKILL)
            assert store.run("RETURN kgdb.version() AS v").value(0) == "kgdb-udf/4"
            assert udf.status(store)["up_to_date"]
    finally:
        server.stop()
