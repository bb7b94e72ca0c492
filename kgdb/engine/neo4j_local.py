"""A real Neo4j 5.26 Community with APOC Core, APOC Extended and the open build of GDS, started
from Maven Central without Docker (``make neo4j``, ``kgdb neo4j start``, the test suite).

Maven resolves the jars named in ``kgdb/data/neo4j/pom.xml`` into ``~/.m2`` (nothing is
copied, built or shaded); kgdb runs Neo4j's own entry point
(``org.neo4j.server.CommunityEntryPoint``) with them on the classpath and the plugin jars also
in the plugins directory (procedures are found by scanning that directory, APOC's and GDS's
extensions on the classpath; shared/NEO4J.md). The server listens on 127.0.0.1 only, on a free
port, with authentication on and a generated password in a user-only file.

Files under its home (``.neo4j/`` in the repository for ``make neo4j``): ``conf/`` (neo4j.conf,
apoc.conf), ``data/``, ``logs/`` (``console.log`` is the JVM's output), ``plugins/`` (links to
the plugin jars in ``~/.m2`` and to kgdb's own plugin jar, built from ``neo4j-plugin/``; set
``KGDB_NEO4J_PLUGIN=0`` to start without it), ``password`` (0600), ``server.json`` (pid and
port), ``lock``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from kgdb.config import environment
from kgdb.cypher import housekeeping
from kgdb.engine.neo4j_plugin import plugin_jar, source_dir
from kgdb.engine.process import file_lock, free_port, pid_runs, port_free, port_open, reap, wait_exit
from kgdb.errors import EngineConnectionError

log = logging.getLogger("kgdb")

ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"
USERNAME = "neo4j"
START_TIMEOUT_S = 180.0
STANDARD_BOLT_PORT = 7687
STANDARD_HTTP_PORT = 7474
"""Neo4j's own default ports: ``kgdb neo4j start`` takes them when they are free, so the
URLs stay the same from one start to the next (the test suite takes free ports)."""
RESOLVE_TIMEOUT_S = 1800.0

JVM_FLAGS = [
    # Neo4j 5.26's default server.jvm.additional set (conf/neo4j.conf of the distribution),
    # without AlwaysPreTouch (it would touch the whole heap at start on a small machine).
    "-XX:+UseG1GC", "-XX:-OmitStackTraceInFastThrow", "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields", "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024", "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.tls.ephemeralDHKeySize=2048", "-Djdk.tls.rejectClientInitiatedRenegotiation=true",
    "-XX:FlightRecorderOptions=stackdepth=256", "-XX:+UnlockDiagnosticVMOptions",
    "-XX:+DebugNonSafepoints", "-Dlog4j2.disable.jmx=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
]


@dataclass(frozen=True)
class LocalNeo4jState:
    pid: int
    port: int
    started_at: float
    start_seconds: float = 0.0
    http_port: int = 0
    """The HTTP port (Neo4j's Query API, ``/db/<database>/query/v2``); 0 when unknown."""
    heap: str = ""
    pagecache: str = ""
    """The memory it was started with ("" when unknown): a restart keeps them."""

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    @property
    def http_url(self) -> str | None:
        return f"http://127.0.0.1:{self.http_port}" if self.http_port else None


class LocalNeo4j:
    """Lifecycle of one Maven-started Neo4j in ``home``."""

    def __init__(self, home: Path, *, heap: str = "1g", pagecache: str = "512m",
                 vector_copy: str | None = None) -> None:
        self.home = home.resolve()
        self.heap, self.pagecache = heap, pagecache
        self.vector_copy = vector_copy or environment().KGDB_NEO4J_VECTOR_COPY
        """The plugin's kind of in-memory vector copy (``-Dkgdb.vectors.copy``): auto (float32
        while it fits a quarter of the heap, int8 beyond), float32 or int8."""
        self.state_file = self.home / "server.json"
        self.password_file = self.home / "password"
        self.lock_file = self.home / "lock"
        self.console_log = self.home / "logs" / "console.log"
        self.service_file = self.home / "kgdb-service.conf"
        """``apoc.static.kgdb.*`` lines (the kgdb service's URL and token) added to apoc.conf
        at every start: :meth:`configure_service`."""

    def configure_service(self, url: str, token: str) -> bool:
        """Record the knowledge service that ``custom.kgdb.ask`` and ``custom.kgdb.embed``
        call (read by APOC from apoc.conf at start: ``apoc.static.get('kgdb.url')``). Returns
        whether it changed (a running server needs a restart to see it)."""
        for name, value in (("url", url), ("token", token)):
            if not value or any(ch in value for ch in "\r\n\\"):
                raise EngineConnectionError(f"the kgdb service {name} must be one line "
                                            "without backslashes")
        text = f"apoc.static.kgdb.url={url}\napoc.static.kgdb.token={token}\n"
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        old = self.service_file.read_text() if self.service_file.exists() else ""
        if old == text:
            return False
        descriptor = os.open(self.service_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(text)
        return True

    # ------------------------------------------------------------------ public
    def ensure_started(self, port: int | None = None, *, http_port: int | None = None,
                       standard_ports: bool = False) -> LocalNeo4jState:
        """The running server of this home, or a new one (resolving the jars first). Its Bolt
        port is ``port`` and its HTTP port ``http_port`` (either taken is an error, never
        another port), else with ``standard_ports`` 7687 and 7474 when free, else free ones.
        A server of this home running on other ports than those asked for is an error."""
        state = self.status()
        if state:
            return self._as_asked(state, port, http_port)
        with self._locked():
            state = self.status()
            if state:
                return self._as_asked(state, port, http_port)
            self._clear_stale()
            return self._start(port, standard_ports, http_port)

    def _as_asked(self, state: LocalNeo4jState, port: int | None,
                  http_port: int | None) -> LocalNeo4jState:
        for asked, runs, what in ((port, state.port, "Bolt"), (http_port, state.http_port,
                                                                "HTTP")):
            if asked is not None and asked != runs:
                raise EngineConnectionError(
                    f"Neo4j of {self.home} already runs with {what} on port {runs}, not "
                    f"{asked}: stop it first (kgdb neo4j stop --home {self.home})")
        return state

    def status(self) -> LocalNeo4jState | None:
        state = self._read_state()
        if state is None or not _pid_is_ours(state.pid, self.home) or not port_open(state.port):
            return None
        return state

    def running_memory(self, state: LocalNeo4jState) -> tuple[str, str]:
        """The heap and page cache ``state``'s server runs with (a server started before
        they were recorded: read off its command line and neo4j.conf); "" when unknown."""
        heap, pagecache = state.heap, state.pagecache
        with contextlib.suppress(OSError):
            words = Path(f"/proc/{state.pid}/cmdline").read_bytes().decode().split("\0")
            heap = heap or next((w[4:] for w in words if w.startswith("-Xmx")), "")
        with contextlib.suppress(OSError):
            conf = (self.home / "conf" / "neo4j.conf").read_text()
            found = re.search(r"^server\.memory\.pagecache\.size=(\S+)$", conf, re.M)
            pagecache = pagecache or (found.group(1) if found else "")
        return heap, pagecache

    def stop(self, timeout_s: float = 60.0) -> bool:
        """Stop the server (a clean shutdown, then SIGKILL); False when it was not running."""
        with self._locked():
            state = self._read_state()
            if state is None or not _pid_is_ours(state.pid, self.home):
                self._remove_state()
                return False
            os.kill(state.pid, signal.SIGTERM)
            wait_exit(state.pid, timeout_s)
            self._remove_state()
            return True

    def settings(self, state: LocalNeo4jState) -> dict[str, str]:
        """What a client needs: ``KGDB_URI``, ``NEO4J_USERNAME``, ``NEO4J_PASSWORD``."""
        return {"KGDB_URI": state.uri, "NEO4J_USERNAME": USERNAME,
                "NEO4J_PASSWORD": self.password()}

    def browser_url(self, state: LocalNeo4jState) -> str | None:
        """Neo4j Browser's address when its jar was resolved (it is served over HTTP)."""
        if not state.http_url:
            return None
        try:
            server_cp, _ = resolve_classpaths()
        except EngineConnectionError:
            return None
        if not any("/neo4j-browser-" in jar for jar in server_cp):
            return None
        return f"{state.http_url}/browser/"

    def password(self) -> str:
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            return self.password_file.read_text().strip()
        except FileNotFoundError:
            pass
        # a leading '-' would be read as an option by neo4j-admin set-initial-password
        secret = "k" + secrets.token_urlsafe(24)
        try:
            fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return self.password_file.read_text().strip()
        with os.fdopen(fd, "w") as f:
            f.write(secret + "\n")
        return secret

    # ------------------------------------------------------------------ offline import
    def database_dirs(self, database: str = "neo4j") -> list[Path]:
        """The folders that hold ``database``: its store and its transaction logs."""
        data = self.home / "data"
        return [data / "databases" / database, data / "transactions" / database]

    def database_bytes(self, database: str = "neo4j") -> dict[str, int]:
        """Space on disk of ``database`` (allocated blocks, as ``du`` counts them): its
        ``store`` files and its ``transaction_logs``."""
        sizes = {}
        for name, folder in zip(("store", "transaction_logs"), self.database_dirs(database),
                                strict=True):
            sizes[name] = sum(f.stat().st_blocks * 512 for f in folder.rglob("*")
                              if f.is_file()) if folder.is_dir() else 0
        return sizes

    def import_full(self, options: list[str], *, log_file: Path,
                    echo: Callable[[str], None] | None = None,
                    database: str = "neo4j") -> None:
        """Run ``neo4j-admin database import full`` (Neo4j's offline importer, class
        ``org.neo4j.cli.AdminTool`` in the neo4j-command-line jar) on this home's
        ``database`` with ``options`` (``--nodes=...``, ``--relationships=...``); the existing
        database is deleted first (``--overwrite-destination``). The server must be stopped:
        the importer writes the store files directly (it reads the home's neo4j.conf for the
        data folders; the next start writes that file anew). Its output goes to
        ``log_file`` and, line by line, to ``echo``."""
        if self.status() is not None:
            raise EngineConnectionError(f"Neo4j of {self.home} is running: an offline import "
                                        "needs it stopped (kgdb neo4j stop)")
        java = _require_tool("java", "install a Java 17+ runtime (OpenJDK) or set PATH")
        server_cp, plugin_cp = resolve_classpaths()
        with self._locked():
            self._prepare(plugin_cp, free_port(), free_port())
            command = [java, "-Xmx1g", *JVM_FLAGS, "-cp", ":".join(server_cp), ADMIN_TOOL,
                       "database", "import", "full", "--overwrite-destination=true",
                       *options, database]
            env = {**os.environ, "NEO4J_HOME": str(self.home),
                   "NEO4J_CONF": str(self.home / "conf")}
            lines: list[str] = []
            with open(log_file, "w", encoding="utf-8") as log_out:
                process = subprocess.Popen(command, env=env, cwd=self.home, text=True,
                                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, start_new_session=True)
                assert process.stdout is not None
                for line in process.stdout:
                    log_out.write(line)
                    lines.append(line.rstrip())
                    del lines[:-200]
                    if echo is not None and line.strip():
                        echo(line.rstrip())
                code = process.wait()
        if code != 0:
            errors = [ln for ln in lines if "rror" in ln or "xception" in ln
                      or "nvalid" in ln] or [ln for ln in lines if ln.strip()]
            raise EngineConnectionError(
                f"neo4j-admin database import failed (exit {code}): "
                f"{(errors[-1] if errors else 'no output').strip()[:300]} (log: {log_file})")

    # ------------------------------------------------------------------ start
    def _start(self, port: int | None, standard_ports: bool,
               http_port: int | None = None) -> LocalNeo4jState:
        java = _require_tool("java", "install a Java 17+ runtime (OpenJDK) or set PATH")
        began = time.monotonic()
        server_cp, plugin_cp = resolve_classpaths()
        if port is not None and not port_free(port):
            raise EngineConnectionError(f"Neo4j: port 127.0.0.1:{port} is already in use")
        if port is None and standard_ports and port_free(STANDARD_BOLT_PORT):
            port = STANDARD_BOLT_PORT
        port = port or free_port()
        if http_port is not None and (http_port == port or not port_free(http_port)):
            raise EngineConnectionError(f"Neo4j: HTTP port 127.0.0.1:{http_port} is already "
                                        "in use")
        http_port = http_port or (STANDARD_HTTP_PORT if standard_ports and port != STANDARD_HTTP_PORT
                                  and port_free(STANDARD_HTTP_PORT) else free_port())
        self._prepare(plugin_cp, port, http_port)
        if not (self.home / "data" / "dbms" / "auth.ini").exists() and not (
                self.home / "data" / "databases" / "system").exists():
            self._set_initial_password(java, server_cp)
        # The APOC Core jar goes first: Extended embeds older copies of some APOC classes.
        classpath = ":".join([*plugin_cp, *server_cp])
        command = [java, f"-Xms{self.heap}", f"-Xmx{self.heap}", *JVM_FLAGS,
                   f"-Dkgdb.neo4j.home={self.home}", f"-Dkgdb.vectors.copy={self.vector_copy}",
                   "-cp", classpath, ENTRY_POINT,
                   f"--home-dir={self.home}", f"--config-dir={self.home / 'conf'}",
                   "--console-mode"]
        offset = self.console_log.stat().st_size if self.console_log.exists() else 0
        with open(self.console_log, "ab") as console:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=console,
                                       stderr=subprocess.STDOUT, start_new_session=True,
                                       close_fds=True, cwd=self.home)
        state = LocalNeo4jState(process.pid, port, time.time(), http_port=http_port,
                                heap=self.heap, pagecache=self.pagecache)
        self._write_state(state)
        if not self._wait_ready(process, port, START_TIMEOUT_S):
            cause = self._console_cause(offset)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait(10)
            self._remove_state()
            raise EngineConnectionError(
                f"Neo4j failed to start on 127.0.0.1:{port}: {cause} (log: {self.console_log})")
        state = LocalNeo4jState(process.pid, port, state.started_at,
                                round(time.monotonic() - began, 1), http_port,
                                self.heap, self.pagecache)
        self._write_state(state)
        log.info("started Neo4j on 127.0.0.1:%d in %.1f s", port, state.start_seconds)
        return state

    def _prepare(self, plugin_cp: list[str], port: int, http_port: int) -> None:
        for sub in ("conf", "data", "logs", "plugins", "import", "run"):
            (self.home / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.home, 0o700)
        template = _data_file("neo4j.conf")
        conf = template.format(home=self.home, bolt_port=port, http_port=http_port,
                               pagecache=self.pagecache)
        (self.home / "conf" / "neo4j.conf").write_text(conf)
        service = self.service_file.read_text() if self.service_file.exists() else ""
        apoc_conf = self.home / "conf" / "apoc.conf"
        descriptor = os.open(apoc_conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:  # it may hold the service token
            out.write(_data_file("apoc.conf") + service)
        os.chmod(apoc_conf, 0o600)
        plugins = self.home / "plugins"
        for old in plugins.iterdir():
            old.unlink()
        for jar in plugin_cp:  # only APOC's and GDS's own jars hold procedures
            path = Path(jar)
            if "/org/neo4j/" in jar:
                (plugins / path.name).symlink_to(path)
        if environment().KGDB_NEO4J_PLUGIN:  # kgdb's own (neo4j_plugin.py)
            if (source_dir() / "pom.xml").is_file():
                # a copy, not a link: another checkout's build may prune the cache while
                # this server runs, and a restart must still find the jar it started with
                kgdb_jar = plugin_jar()
                shutil.copyfile(kgdb_jar, plugins / kgdb_jar.name)
            else:  # an installed wheel has no plugin sources: plain Cypher, said once
                log.warning("kgdb's Neo4j plugin is built from a source checkout "
                            "(neo4j-plugin/); starting Neo4j without it")

    def _set_initial_password(self, java: str, server_cp: list[str]) -> None:
        command = [java, "-cp", ":".join(server_cp), ADMIN_TOOL, "dbms",
                   "set-initial-password", self.password()]
        env = {**os.environ, "NEO4J_HOME": str(self.home),
               "NEO4J_CONF": str(self.home / "conf")}
        done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=self.home,
                              timeout=120)
        if done.returncode != 0:
            lines = [ln for ln in (done.stderr + done.stdout).splitlines() if ln.strip()]
            raise EngineConnectionError(
                "Neo4j: setting the initial password failed: "
                + (lines[-1][:300] if lines else f"exit {done.returncode}"))

    def _wait_ready(self, process: subprocess.Popen[bytes], port: int, timeout_s: float) -> bool:
        import neo4j
        from neo4j import exceptions as nx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return False
            if port_open(port):
                try:
                    with neo4j.GraphDatabase.driver(
                            f"bolt://127.0.0.1:{port}", auth=(USERNAME, self.password()),
                            connection_timeout=5) as driver:
                        driver.execute_query(housekeeping.ping().text, database_="neo4j")
                    return True
                except (nx.ServiceUnavailable, nx.SessionExpired, nx.TransientError,
                        nx.DatabaseUnavailable, OSError):
                    pass
                except nx.AuthError:
                    return False
            time.sleep(0.5)
        return False

    def _console_cause(self, offset: int) -> str:
        try:
            with open(self.console_log, "rb") as f:
                f.seek(offset)
                lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines()]
        except FileNotFoundError:
            return "no output"
        meaningful = [ln for ln in lines if "ERROR" in ln or "Exception" in ln
                      or "Error" in ln]
        return (meaningful or [ln for ln in lines if ln] or ["no output"])[0][:300]

    # ------------------------------------------------------------------ state
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Long enough for another process's start, which may download the jars first.
        with file_lock(self.lock_file, RESOLVE_TIMEOUT_S + START_TIMEOUT_S, "Neo4j"):
            yield

    def _read_state(self) -> LocalNeo4jState | None:
        try:
            return LocalNeo4jState(**json.loads(self.state_file.read_text()))
        except (FileNotFoundError, ValueError, TypeError):
            return None

    def _write_state(self, state: LocalNeo4jState) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(state)))
        os.replace(tmp, self.state_file)

    def _remove_state(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.state_file.unlink()

    def _clear_stale(self) -> None:
        state = self._read_state()
        if state and _pid_is_ours(state.pid, self.home):
            log.warning("Neo4j (pid %d) is not answering; restarting it", state.pid)
            os.kill(state.pid, signal.SIGKILL)
            reap(state.pid)
        self._remove_state()


def resolve_classpaths() -> tuple[list[str], list[str]]:
    """The server's and the plugins' jars in ``~/.m2``, resolved by Maven (cached by the pom's
    hash; the first run downloads about 260 MB)."""
    mvn = _require_tool("mvn", "install Apache Maven 3.8+ or set PATH")
    pom = _data_file("pom.xml")
    key = hashlib.sha256(pom.encode()).hexdigest()[:16]
    cache = _cache_dir() / f"classpath-{key}.json"
    with contextlib.suppress(FileNotFoundError, ValueError, KeyError):
        cached = json.loads(cache.read_text())
        if all(Path(jar).is_file() for jar in cached["server"] + cached["plugins"]):
            return cached["server"], cached["plugins"]
    cache.parent.mkdir(parents=True, exist_ok=True)
    pom_file = cache.parent / f"pom-{key}.xml"
    pom_file.write_text(pom)
    paths = {}
    for profile in ("server", "plugins"):
        out = cache.parent / f"{profile}-{key}.classpath"
        log.info("resolving Neo4j %s jars with Maven (first run downloads them)", profile)
        try:
            done = subprocess.run(
                [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(pom_file), "-P", profile,
                 "dependency:build-classpath", f"-Dmdep.outputFile={out}"],
                capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise EngineConnectionError(
                f"Neo4j: Maven did not resolve the {profile} jars within "
                f"{RESOLVE_TIMEOUT_S:.0f} s") from exc
        if done.returncode != 0:
            output = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
            errors = [ln.removeprefix("[ERROR]").strip().removesuffix("-> [Help 1]").strip()
                      for ln in output.splitlines()
                      if ln.startswith("[ERROR]") and ln.strip() != "[ERROR]"]
            raise EngineConnectionError(
                "Neo4j: Maven could not download the jars: "
                + (errors[0][:300] if errors else f"mvn exit {done.returncode}"))
        paths[profile] = [p for p in out.read_text().strip().split(":") if p]
    # APOC Core first; jars already on the server's classpath are not repeated.
    server = paths["server"]
    plugins = sorted((p for p in paths["plugins"] if p not in set(server)),
                     key=lambda p: (0 if "apoc-core" in p else 1))
    cache.write_text(json.dumps({"server": server, "plugins": plugins}))
    return server, plugins


def _data_file(name: str) -> str:
    return resources.files("kgdb").joinpath("data", "neo4j", name).read_text()


def _cache_dir() -> Path:
    from kgdb.config import cache_dir

    return cache_dir() / "neo4j"


def _require_tool(name: str, hint: str) -> str:
    path = shutil.which(name)
    if not path:
        raise EngineConnectionError(f"Neo4j: `{name}` is not on PATH: {hint}")
    return path


def _pid_is_ours(pid: int, home: Path) -> bool:
    """True when ``pid`` is alive and is the Neo4j of ``home`` (not a reused pid)."""
    return pid_runs(pid, f"-Dkgdb.neo4j.home={home}")
