"""What the live suite assumes of the session's Neo4j. Everything that behaves the same on
both engines is in tests/live/ (parametrized by engine); Neo4j-only behaviour is in
test_neo4j_extras.py."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]


def test_server_is_neo4j_5(neo4j_store) -> None:
    info = neo4j_store.server_info()
    assert info["engine"] == "neo4j" and info["version"].split(".")[0] in {"5", "2025", "2026"}
