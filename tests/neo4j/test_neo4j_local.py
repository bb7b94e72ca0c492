"""`make neo4j` / `kgdb neo4j start|stop|status`: a Neo4j 5.26 started from Maven Central.
Each command runs as a real process; failures must be one `kgdb: error:` line, exit 1."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from kgdb.engine.process import port_free
from tests.conftest import ROOT

pytestmark = pytest.mark.neo4j

needs_java_and_maven = pytest.mark.skipif(
    not (shutil.which("java") and shutil.which("mvn")),
    reason="Neo4j from Maven Central needs `java` and `mvn` on PATH")


def kgdb(*args: str, env: dict[str, str] | None = None,
         timeout: float = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kgdb", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    progress = [line for line in lines[:-1] if line.endswith("...")]  # "starting Neo4j ..."
    assert lines[-1].startswith("kgdb: error: ") and len(progress) == len(lines) - 1, \
        done.stderr
    assert "Traceback" not in done.stderr
    return lines[-1]


def test_without_java_says_so(tmp_path: Path) -> None:
    # PATH holds only the interpreter's folder: no java, no mvn.
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python").symlink_to(sys.executable)
    done = kgdb("neo4j", "start", "--home", str(tmp_path / "n"), env={"PATH": str(bare)})
    assert "`java` is not on PATH" in one_error_line(done)


@needs_java_and_maven
def test_port_taken_says_so(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = kgdb("neo4j", "start", "--home", str(tmp_path / "n"), "--port", str(port))
    assert f"port 127.0.0.1:{port} is already in use" in one_error_line(done)


@needs_java_and_maven
def test_download_refused_says_so(tmp_path: Path) -> None:
    """Maven with an empty local repository and a mirror that refuses connections."""
    home = tmp_path / "home"
    (home / ".m2").mkdir(parents=True)
    (home / ".m2" / "settings.xml").write_text(
        "<settings><mirrors><mirror><id>refused</id><mirrorOf>*</mirrorOf>"
        "<url>http://127.0.0.1:9/maven2</url></mirror></mirrors></settings>")
    done = kgdb("neo4j", "start", "--home", str(tmp_path / "n"),
                env={"MAVEN_OPTS": f"-Duser.home={home}", "XDG_CACHE_HOME": str(tmp_path / "c")})
    line = one_error_line(done)
    assert "Maven could not download the jars" in line and "127.0.0.1:9" in line, line


@needs_java_and_maven
def test_start_again_stop_status(tmp_path: Path) -> None:
    """Start prints `export NAME=value` lines that a shell evaluates (and a comment with the
    HTTP and Browser URLs); it takes 7687/7474 when they are free; a second start finds it
    running and prints the same; the password file is the owner's only; stop stops it;
    status says so."""
    home = tmp_path / "n"
    standard_free = port_free(7687) and port_free(7474)
    first = kgdb("neo4j", "start", "--home", str(home))
    assert first.returncode == 0, first.stderr
    lines = first.stdout.strip().splitlines()
    assert all(line.startswith(("export ", "# ")) for line in lines), lines
    evaluated = subprocess.run(["sh", "-c", first.stdout + "\nenv"], capture_output=True,
                               text=True, check=True).stdout
    exported = dict(line.split("=", 1) for line in evaluated.splitlines() if "=" in line)
    settings = {name: exported[name] for name in ("KGDB_URI", "NEO4J_USERNAME",
                                                  "NEO4J_PASSWORD")}
    assert settings["KGDB_URI"].startswith("bolt://127.0.0.1:")
    assert "Neo4j runs on bolt://127.0.0.1:" in first.stderr
    if standard_free:
        assert settings["KGDB_URI"] == "bolt://127.0.0.1:7687"
    as_json = json.loads(kgdb("neo4j", "start", "--home", str(home), "--json").stdout)
    assert as_json["KGDB_URI"] == settings["KGDB_URI"]
    http = as_json["http_url"]
    assert http.startswith("http://127.0.0.1:") and f"HTTP {http}" in lines[-1]
    if standard_free:
        assert http == "http://127.0.0.1:7474"
    # Neo4j Browser (org.neo4j.client:neo4j-browser from Maven Central) is served
    assert as_json["browser_url"] == f"{http}/browser/"
    with urllib.request.urlopen(as_json["browser_url"], timeout=30) as page:
        assert page.status == 200 and b"Neo4j Browser" in page.read()
    try:
        pid = json.loads((home / "server.json").read_text())["pid"]
        assert stat.S_IMODE((home / "password").stat().st_mode) == 0o600
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
        again = kgdb("neo4j", "start", "--home", str(home), timeout=60)
        assert again.returncode == 0 and again.stdout == first.stdout
        assert json.loads((home / "server.json").read_text())["pid"] == pid
        status = json.loads(kgdb("neo4j", "status", "--home", str(home), "--json").stdout)
        assert status["running"] and status["uri"] == settings["KGDB_URI"]
        # kgdb itself talks to it with those settings (authentication on).
        stats = kgdb("stats", "--json", env=settings)
        assert stats.returncode == 0, stats.stderr
        assert json.loads(stats.stdout)["engine"]["engine"] == "neo4j"
        said = kgdb("stats", "--verbose", env=settings)
        assert f"kgdb: database: Neo4j at {settings['KGDB_URI']}" in said.stderr
        assert said.stdout.startswith(f"database: Neo4j at {settings['KGDB_URI']}")
        # the settings printed but not exported: kgdb says it is not using Neo4j
        unexported = {k: v for k, v in os.environ.items()
                      if k not in ("KGDB_URI", "NEO4J_URI")}
        fallback = subprocess.run(
            [sys.executable, "-m", "kgdb", "stats"], capture_output=True, text=True,
            timeout=120, cwd=ROOT, env={**unexported, "PYTHONPATH": str(ROOT),
                                        "NEO4J_PASSWORD": settings["NEO4J_PASSWORD"],
                                        "KGDB_HOME": str(tmp_path / "kgdb-home")})
        assert "NEO4J_PASSWORD is set but KGDB_URI/NEO4J_URI is not: using the embedded " \
               "FalkorDB" in fallback.stderr
        assert fallback.stdout.startswith("database: embedded FalkorDB")
        kgdb("db", "stop", env={"KGDB_HOME": str(tmp_path / "kgdb-home")})
        wrong = kgdb("stats", env={**settings, "NEO4J_PASSWORD": "not-it"})
        assert "authentication failed" in one_error_line(wrong)
    finally:
        stopped = kgdb("neo4j", "stop", "--home", str(home), timeout=120)
    assert stopped.returncode == 0 and stopped.stdout.strip() == "stopped"
    assert kgdb("neo4j", "status", "--home", str(home)).stdout.startswith("not running")
    assert kgdb("neo4j", "stop", "--home", str(home)).stdout.strip() == "not running"


@needs_java_and_maven
def test_http_port_taken_says_so(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = kgdb("neo4j", "start", "--home", str(tmp_path / "n"), "--http-port", str(port))
    assert f"HTTP port 127.0.0.1:{port} is already in use" in one_error_line(done)


@needs_java_and_maven
def test_every_port_is_the_operators(tmp_path: Path) -> None:
    """--port and --http-port are the ports it runs on (not 7687/7474 because they are
    free); the command the start prints reaches this same server; asking a running server
    for other ports is one error line, never a second server."""
    import shlex

    from kgdb.engine.process import free_port

    home = tmp_path / "ops neo4j"
    bolt, http = free_port(), free_port()
    while http == bolt:
        http = free_port()
    first = kgdb("neo4j", "start", "--home", str(home), "--port", str(bolt), "--http-port",
                 str(http))
    assert first.returncode == 0, first.stderr
    try:
        assert f"export KGDB_URI=bolt://127.0.0.1:{bolt}" in first.stdout
        assert f"HTTP http://127.0.0.1:{http}" in first.stdout
        with urllib.request.urlopen(f"http://127.0.0.1:{http}/", timeout=30) as page:
            assert page.status == 200
        pid = json.loads((home / "server.json").read_text())["pid"]
        hint = first.stderr.split('eval "$(', 1)[1].split(')"', 1)[0]
        words = shlex.split(hint)
        assert words[:3] == ["kgdb", "neo4j", "start"] and "--home" in words
        again = kgdb(*words[1:], timeout=60)
        assert again.returncode == 0 and again.stdout == first.stdout
        assert json.loads((home / "server.json").read_text())["pid"] == pid
        other = kgdb("neo4j", "start", "--home", str(home), "--port", str(free_port()),
                     timeout=60)
        assert f"already runs with Bolt on port {bolt}" in one_error_line(other)
    finally:
        kgdb("neo4j", "stop", "--home", str(home), timeout=120)
