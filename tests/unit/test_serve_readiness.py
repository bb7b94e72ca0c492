"""/livez answers as soon as the process does; /readyz only once the embedding model is
loaded (the service loads it at start, beside the first requests). Neither needs a token or
a database."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kgdb.config import Settings
from kgdb.embed.minilm import MiniLMEmbedder


def test_readyz_waits_for_the_model_livez_does_not(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from kgdb.serve.app import create_app
    from kgdb.serve.operations import ServeConfig
    from kgdb.serve.tokens import TokenFile

    model = MiniLMEmbedder()  # not loaded yet: the service's start loads it
    config = ServeConfig(Settings.from_env(), TokenFile(tmp_path / "tokens.json", []))
    app = create_app(config, embedder=model)
    before = TestClient(app)  # no start-up run: nothing has loaded the model
    assert before.get("/livez").json() == {"status": "ok"}
    loading = before.get("/readyz")
    assert loading.status_code == 503 and loading.json() == {"status": "loading"}
    with TestClient(app) as client:  # runs the start-up: the model loads in the background
        assert client.get("/livez").status_code == 200
        deadline = time.monotonic() + 120
        while client.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline, "the model did not load"
            time.sleep(0.1)
        assert client.get("/readyz").json() == {"status": "ready"}
        assert model._tokenizer is not None  # it was the load that made it ready
