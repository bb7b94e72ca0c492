"""Per-graph caches under concurrent tenants (issue 35, item 2): ``ppr`` and ``chunks`` on two
graphs from eight threads read each graph's names once, answer as they do alone, never fail,
and a rebuild of one graph invalidates its entry only."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from kgdb.documents.ppr_graph import build_graph
from kgdb.procedures import falkordb as udf
from kgdb.retrieve import entities as entities_module
from kgdb.retrieve import ppr as ppr_module
from kgdb.retrieve.ppr import PprOptions, PprSolver
from tests.conftest import _falkordb_store
from tests.live.test_ppr import CORPUS, SCIENTIST_QUESTIONS, SCIENTISTS, _load

pytestmark = pytest.mark.live

OPTIONS = PprOptions(seed_passages=4, sentences=2)


def _ranking(store: Any, embedder: Any, question: str) -> list[tuple[str, float]]:
    evidence = PprSolver().retrieve(store, embedder, question, OPTIONS)
    return [(p.id, round(p.score, 6)) for p in evidence.passages]


def _names_read(store: Any, embedder: Any, question: str) -> int:
    """Statements reading every phrase name that one retrieval ran."""
    evidence = PprSolver().retrieve(store, embedder, question, OPTIONS)
    return sum(s.text.endswith("RETURN p.id AS id") for s in evidence.statements)


def test_two_tenants_share_nothing_and_thrash_nothing(embedded_home: Path, embedder: Any,
                                                      tmp_path: Path) -> None:
    stores = [_falkordb_store(embedded_home) for _ in range(2)]
    a, b = (next(s) for s in stores)
    try:
        udf.install(a)
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        _load(a, embedder, tmp_path / "a", SCIENTISTS)
        _load(b, embedder, tmp_path / "b", CORPUS)
        build_graph(a, embedder)
        build_graph(b, embedder)
        questions = SCIENTIST_QUESTIONS[:4]
        alone = {(name, q): _ranking(s, embedder, q)
                 for name, s in (("a", a), ("b", b)) for q in questions}
        before = ppr_module._GRAPHS.stats()
        errors: list[BaseException] = []
        seen: dict[tuple[str, str], list[Any]] = {}
        lock = threading.Lock()

        def worker(n: int) -> None:
            try:
                for i in range(12):
                    name, store = (("a", a), ("b", b))[(n + i) % 2]
                    question = questions[(n * 3 + i) % len(questions)]
                    got = _ranking(store.view(), embedder, question)  # as a request
                    with lock:
                        seen.setdefault((name, question), []).append(got)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, repr(errors[0])
        for key, rankings in seen.items():
            assert all(r == alone[key] for r in rankings), key
        after = ppr_module._GRAPHS.stats()
        assert after.misses == before.misses  # both graphs kept all along: no re-reading
        assert after.entries >= 2
        # one graph rebuilt: its own names are read again, the other's are not
        _rebuild(b, embedder, tmp_path)
        misses = ppr_module._GRAPHS.stats().misses
        _ranking(b, embedder, questions[0])
        assert ppr_module._GRAPHS.stats().misses == misses + 1
        _ranking(a, embedder, questions[0])
        assert ppr_module._GRAPHS.stats().misses == misses + 1
        assert _names_read(a, embedder, questions[1]) == 0
    finally:
        for s in stores:
            next(s, None)


def _rebuild(store: Any, embedder: Any, tmp_path: Path) -> None:
    """A write that changes the retrieval graph's build time: one more document, rebuilt."""
    (tmp_path / "more").mkdir(exist_ok=True)
    _load(store, embedder, tmp_path / "more", [*CORPUS, {
        "id": "zanzibar", "title": "Zanzibar Trading",
        "text": "Zanzibar Trading is a grocer that runs 12 stores in Tennessee."}])
    build_graph(store, embedder)


def test_entity_names_are_kept_per_graph(embedded_home: Path, embedder: Any,
                                         tmp_path: Path) -> None:
    """``--solver chunks``' entity names: per graph, read again only after that graph's load."""
    from kgdb.retrieve.entities import _name_index

    stores = [_falkordb_store(embedded_home) for _ in range(2)]
    a, b = (next(s) for s in stores)
    try:
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        _load(a, embedder, tmp_path / "a", SCIENTISTS)
        _load(b, embedder, tmp_path / "b", CORPUS)
        cache = entities_module._NAME_INDEXES
        first_a, first_b = _name_index(a), _name_index(b)
        misses = cache.stats().misses
        for _ in range(5):
            assert _name_index(a) is first_a and _name_index(b) is first_b
        assert cache.stats().misses == misses
        _rebuild(b, embedder, tmp_path)
        assert _name_index(b) is not first_b and _name_index(a) is first_a
        assert cache.stats().misses == misses + 1
    finally:
        for s in stores:
            next(s, None)
