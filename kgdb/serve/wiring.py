"""One step from a local Neo4j to BI tools calling kgdb from Cypher
(``kgdb neo4j start --with-service``): the service's token, APOC's settings, Neo4j (restarted
when those settings changed), ``kgdb serve`` in the background, and the procedures installed.

Files, all under the Neo4j home: ``service-token`` (0600, the secret APOC sends; the token
file of ``KGDB_HOME`` holds its digest, read scope, tenant ``neo4j``), ``kgdb-serve.json``
(the service's pid and port), ``logs/kgdb-serve.log``. ``kgdb neo4j stop`` stops the service
too (:func:`stop_service`)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgdb.config import Settings
from kgdb.engine.process import free_port, pid_runs, port_free, wait_exit
from kgdb.errors import ConfigError, EngineConnectionError

SERVICE_PORT = 8765
TOKEN_NAME = "neo4j-procedures"
TENANT = "neo4j"
READY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Wired:
    uri: str
    service_url: str
    service_pid: int
    installed: list[str]


def _files(home: Path) -> tuple[Path, Path, Path]:
    return home / "service-token", home / "kgdb-serve.json", home / "logs" / "kgdb-serve.log"


def _secret(path: Path) -> str:
    with contextlib.suppress(FileNotFoundError):
        return path.read_text().strip()
    secret = "kgdb_" + secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(secret + "\n")
    return secret


def _running_service(state_file: Path, token_file: Path) -> dict[str, Any] | None:
    with contextlib.suppress(FileNotFoundError, ValueError, KeyError, TypeError):
        state = json.loads(state_file.read_text())
        if pid_runs(int(state["pid"]), "serve", str(token_file)):
            return dict(state)
    return None


def wire(server: Any, kgdb_home: Path, rule_specs: dict[str, Path], *,
         port: int | None = None, bolt_port: int | None = None,
         http_port: int | None = None) -> Wired:
    """Make ``server`` (a :class:`~kgdb.engine.neo4j_local.LocalNeo4j`) call a running kgdb
    service, with kgdb's procedures installed (see the module's docstring). ``port`` is the
    service's (default 8765 when free, else a free one), ``bolt_port`` and ``http_port``
    Neo4j's (:meth:`~kgdb.engine.neo4j_local.LocalNeo4j.ensure_started`); a port asked for
    that is taken, or a running service on another port, is an error."""
    from kgdb.dsl.rules_check import load_rules
    from kgdb.engine import connect
    from kgdb.procedures import install
    from kgdb.serve.tokens import TokenFile
    from kgdb.text import read_text_file

    secret_file, state_file, log_file = _files(server.home)
    secret = _secret(secret_file)
    token_file = kgdb_home / "tokens.json"
    tokens = TokenFile.open_or_new(token_file)
    if tokens.find(secret) is None:
        if any(t.name == TOKEN_NAME for t in tokens.tokens):
            tokens.remove(TOKEN_NAME)
        tokens.add(TOKEN_NAME, ("read",), (TENANT,), secret=secret)
    service = _running_service(state_file, token_file)
    if service is None:
        if port is not None and not port_free(port):
            raise ConfigError(f"--service-port: 127.0.0.1:{port} is already in use")
        port = port or (SERVICE_PORT if port_free(SERVICE_PORT) else free_port())
    elif port is not None and port != int(service["port"]):
        raise ConfigError(f"kgdb serve for {server.home} already runs on port "
                          f"{service['port']}, not {port}: stop it first (kgdb neo4j stop "
                          f"--home {server.home})")
    else:
        port = int(service["port"])
    url = f"http://127.0.0.1:{port}"
    if server.configure_service(url, secret) and server.status() is not None:
        server.stop()  # APOC reads apoc.conf at start only
    state = server.ensure_started(bolt_port, http_port=http_port, standard_ports=True)
    settings = server.settings(state)
    rules_args = [arg for name, path in rule_specs.items() for arg in ("--rules", f"{name}={path}")]
    if service is None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(log_file, "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "kgdb", "serve", "--port", str(port), "--tokens",
                 str(token_file), *rules_args], stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
                env={**os.environ, **settings, "KGDB_HOME": str(kgdb_home)})
        service = {"pid": process.pid, "port": port}
        state_file.write_text(json.dumps(service))
        _wait_live(url, process, log_file)
    rulesets = {name: load_rules(read_text_file(path, what="rule file"), str(path))
                for name, path in rule_specs.items()}
    store = connect(Settings(uri=settings["KGDB_URI"], username=settings["NEO4J_USERNAME"],
                             password=settings["NEO4J_PASSWORD"], database=None, graph=TENANT,
                             home=kgdb_home, timeout_s=300.0))
    try:
        report = install(store, rulesets, service=True)
    finally:
        store.close()
    return Wired(state.uri, url, int(service["pid"]), list(report.get("installed") or []))


def _wait_live(url: str, process: subprocess.Popen[bytes], log_file: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            lines = [ln for ln in log_file.read_text(errors="replace").splitlines() if ln]
            raise ConfigError("kgdb serve stopped at start: "
                              + (lines[-1][:300] if lines else f"exit {process.returncode}")
                              + f" (log: {log_file})")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/livez", timeout=5) as reply:
            if reply.status == 200:
                return
        time.sleep(0.5)
    raise EngineConnectionError(f"kgdb serve did not answer at {url} within "
                                f"{READY_TIMEOUT_S:.0f} s (log: {log_file})")


def stop_service(home: Path, kgdb_home: Path) -> bool:
    """Stop the service :func:`wire` started for the Neo4j of ``home``; False if none runs."""
    _, state_file, _ = _files(home)
    service = _running_service(state_file, kgdb_home / "tokens.json")
    with contextlib.suppress(FileNotFoundError):
        state_file.unlink()
    if service is None:
        return False
    os.kill(int(service["pid"]), signal.SIGTERM)
    wait_exit(int(service["pid"]), 30.0)
    return True
