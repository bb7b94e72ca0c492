"""kgdb.engine.process.file_lock (the filelock library) between processes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgdb.engine.process import file_lock
from kgdb.errors import EngineConnectionError

ROOT = Path(__file__).resolve().parents[2]


def test_a_lock_held_by_another_process_times_out_then_is_taken(tmp_path: Path) -> None:
    lock = tmp_path / "server.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from kgdb.engine.process import file_lock\n"
         f"with file_lock(Path({str(lock)!r}), 5, 'test'):\n"
         "    print('held', flush=True); sys.stdin.readline()"],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(EngineConnectionError, match=r"embedded FalkorDB: timed out waiting "
                                                         r"for the lock .*server\.lock"), \
                file_lock(lock, 0.5, "embedded FalkorDB"):
            pass
        assert 0.4 < time.monotonic() - started < 5
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(30)
    with file_lock(lock, 5, "embedded FalkorDB"):  # released by the other process
        assert (lock.stat().st_mode & 0o777) == 0o600
