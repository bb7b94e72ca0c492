"""``--max-rows`` also bounds the parameters of the statements a response shows (issue 35):
a statement's lists of candidate names (one per pattern node, k each) showed up to k(n)
names beyond the rows cut; now every statement's parameters hold at most ``max_rows``
values in all, both engines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.live.test_hostile_service import films  # noqa: F401 (the fixture)
from tests.live.test_serve import _load, _service

pytestmark = pytest.mark.live


def _values(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_values(v) for v in value.values())
    if isinstance(value, list):
        return sum(_values(v) for v in value)
    return 1


def test_statement_parameters_are_cut_to_max_rows(films: Any, embedder: Any,  # noqa: F811
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    many = "".join(f"Prolific|directed_by_many|Film {i}\n" for i in range(12))
    _load(films, embedder, many, tmp_path, "many")
    service = _service(films, embedder, tmp_path, monkeypatch, allow_writes=False)
    body = {"question": "q", "options": {
        "pattern": [["Prolific", "directed_by_many", "UNKNOWN film 1"],
                    ["UNKNOWN film 1", "directed_by_many", "UNKNOWN person 2"]], "k": 1000}}
    whole = service.call("POST", "/retrieve", json=body).json()
    assert max(_values(s["params"]) for s in whole["statements"]) > 3  # there is more to cut
    service.app.state.config.max_rows = 3
    for path in ("/retrieve", "/ask"):
        reply = service.call("POST", path, json=body)
        if path == "/ask" and reply.status_code != 200:
            continue  # no LLM here: /ask's evidence is checked through /retrieve
        got = reply.json()
        evidence = got["evidence"] if isinstance(got.get("evidence"), dict) else got
        assert evidence["statements"], path
        assert all(_values(s["params"]) <= 3 for s in evidence["statements"]), path
        assert got["truncated"] is True

