"""Process and port helpers shared by the servers kgdb starts itself (the embedded FalkorDB,
the Maven-started Neo4j): free ports, pid liveness that sees through reused pids and zombies,
reaping, stopping."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import filelock

from kgdb.errors import EngineConnectionError


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now (it can be taken before it is bound)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_free(port: int) -> bool:
    """Whether a server could listen on ``port`` now: SO_REUSEADDR, as servers set it, so
    connections of a stopped server still in TIME_WAIT do not count."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def pid_runs(pid: int, *fragments: str) -> bool:
    """True when ``pid`` is alive and its command line holds every fragment (so a reused pid
    is not taken for our server). Without /proc the pid is trusted."""
    if not pid_alive(pid):
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().replace(b"\x00", b" ").decode(errors="replace")
    except OSError:
        return True
    return all(fragment in cmdline for fragment in fragments)


def reap(pid: int) -> None:
    """Collect the exit status of a server this process started (avoids zombies)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def wait_exit(pid: int, timeout_s: float) -> None:
    """Wait up to ``timeout_s`` for ``pid`` to end, then SIGKILL it."""
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid) and time.monotonic() < deadline:
        reap(pid)
        time.sleep(0.05)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    reap(pid)


@contextlib.contextmanager
def file_lock(path: Path, timeout_s: float, what: str) -> Iterator[None]:
    """An exclusive lock on ``path`` between kgdb processes (start and stop of one server),
    from the maintained ``filelock`` library; waiting longer than ``timeout_s`` is an error
    naming ``what``."""
    lock = filelock.FileLock(path, mode=0o600)
    try:
        lock.acquire(timeout=timeout_s, poll_interval=0.1)
    except filelock.Timeout as exc:
        raise EngineConnectionError(f"{what}: timed out waiting for the lock {path} held by "
                                    "another kgdb process") from exc
    try:
        yield
    finally:
        lock.release()
