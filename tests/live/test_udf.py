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
from kgdb.retrieve.chunks import RRF_K
from tests.support.hostile import CORPUS

pytestmark = pytest.mark.live

IDS = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=6)
DISTANCES = st.floats(min_value=0.0, max_value=4.0, allow_nan=False) | st.sampled_from(
    [0.0, 0.5, 1.0])  # ties are likely


@pytest.fixture
def library(falkordb_store: Any) -> Any:
    udf.install(falkordb_store)
    yield falkordb_store
    udf.drop(falkordb_store)


def _topk_reference(ids: list[str], distances: list[float], k: int) -> list[tuple[str, float]]:
    best: dict[str, float] = {}
    for i, d in zip(ids, distances, strict=True):
        best[i] = min(best.get(i, d), d)
    return sorted(best.items(), key=lambda x: (x[1], x[0]))[:k]


@given(st.lists(st.tuples(IDS, DISTANCES), max_size=30), st.integers(0, 40))
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
def test_topk_equals_python(library: Any, pairs: list[tuple[str, float]], k: int) -> None:
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


def _rrf_reference(rankings: list[list[str]], k: int) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:  # kgdb.retrieve.chunks.rrf, the hybrid solver
        for i, d in enumerate(ranking):
            scores[d] = scores.get(d, 0.0) + 1.0 / (RRF_K + i + 1)
    return sorted(scores, key=lambda d: (-scores[d], d))[:k]


@given(st.lists(st.lists(IDS, max_size=8, unique=True), max_size=3), st.integers(0, 20))
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
def test_rrf_equals_python(library: Any, rankings: list[list[str]], k: int) -> None:
    rows = library.run("UNWIND kgdb.rrf($r, $c, $k) AS r RETURN r.id AS id",
                       {"r": rankings, "c": RRF_K, "k": k}).records()
    assert [r["id"] for r in rows] == _rrf_reference(rankings, k)


def test_status_install_change_and_drop(library: Any) -> None:
    report = udf.status(library)
    assert report["up_to_date"] and report["installed"] == ["kgdb.version", "kgdb.topk",
                                                            "kgdb.rrf"]
    udf.load(library, udf.script().replace("kgdb-udf/1", "kgdb-udf/0"))
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
                          ("kgdb.topk(range(0, 100001), range(0, 100001), 1)", "more than")):
        with pytest.raises(StatementError, match=message):
            library.run(f"RETURN {call} AS v")


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
            assert store.run("RETURN kgdb.version() AS v").value(0) == "kgdb-udf/1"
            assert udf.status(store)["up_to_date"]
    finally:
        server.stop()
