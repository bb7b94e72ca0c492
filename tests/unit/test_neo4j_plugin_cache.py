"""The plugin's build cache keeps other checkouts' recent builds (they may be in use)."""

from __future__ import annotations

import os
from pathlib import Path

from kgdb.engine.neo4j_plugin import ARTIFACT, prune_builds


def _jar(folder: Path, name: str, mtime: int) -> Path:
    path = folder / f"{ARTIFACT}-0.1.0-{name}.jar"
    path.write_bytes(name.encode())
    os.utime(path, (mtime, mtime))
    return path


def test_prune_keeps_the_current_and_the_newest_others(tmp_path: Path) -> None:
    others = [_jar(tmp_path, f"h{i}", 1000 + i) for i in range(5)]
    current = _jar(tmp_path, "current", 10)  # oldest mtime: still kept
    unrelated = tmp_path / "build.lock"
    unrelated.write_text("")
    prune_builds(current, keep=3)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([current.name, others[4].name, others[3].name, unrelated.name])


def test_prune_with_room_deletes_nothing(tmp_path: Path) -> None:
    jars = [_jar(tmp_path, f"h{i}", 1000 + i) for i in range(3)]
    prune_builds(jars[0], keep=8)
    assert all(p.is_file() for p in jars)
