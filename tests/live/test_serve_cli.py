"""``kgdb serve`` started as docs/service.md says (a subprocess, its own KGDB_HOME) answers
that page's curl commands with a token; the token commands; refusals at start."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from kgdb.engine.process import free_port

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
KGDB = [sys.executable, "-m", "kgdb"]


def _page_block() -> str:
    text = (ROOT / "docs" / "service.md").read_text()
    start = text.index("kgdb tokens add bi --graph demo")
    return text[start: text.index("```", start)]


def _run(env: dict[str, str], *args: str,
         cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KGDB, *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def home_env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "KGDB_HOME": str(tmp_path / "home")}
    for name in ("KGDB_URI", "NEO4J_URI", "KGDB_GRAPH"):
        env.pop(name, None)
    yield env
    _run(env, "db", "stop")


def test_service_page_commands_run_as_written(home_env: dict[str, str], tmp_path: Path) -> None:
    """docs/service.md's first block, command by command, in a folder outside the clone."""
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    block = _page_block()
    commands = [line.split("#")[0].strip() for line in block.splitlines()]
    add = commands[0]
    assert add == "kgdb tokens add bi --graph demo"
    token = _run(home_env, *add.split()[1:]).stdout.strip()
    assert token.startswith("kgdb_")
    listed = _run(home_env, "tokens", "list", "--json")
    assert [t["name"] for t in json.loads(listed.stdout)] == ["bi"]
    assert oct((Path(home_env["KGDB_HOME"]) / "tokens.json").stat().st_mode & 0o777) == "0o600"

    folder = tmp_path / "work"
    folder.mkdir()
    setup = [c for c in commands if c.startswith(("kgdb demo", "kgdb examples"))]
    assert len(setup) == 2, commands
    for command in setup:
        done = _run(home_env, *shlex.split(command)[1:], cwd=folder)
        assert done.returncode == 0, (command, done.stderr)
    port = free_port()
    serve = next(c for c in commands if c.startswith("kgdb serve")).rstrip("&").strip()
    serve = serve.replace("--port 8765", f"--port {port}")
    server = subprocess.Popen([*KGDB, *serve.split()[1:]], env=home_env, cwd=folder,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/livez", timeout=2) as r:
                    assert json.loads(r.read()) == {"status": "ok"}
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(server.stderr.read() if server.stderr else "") from None
                time.sleep(0.3)
        curls = [c for c in re.split(r"(?<!\\)\n", block) if c.strip().startswith("curl")]
        assert len(curls) == 2
        outputs = []
        for curl in curls:
            command = curl.split("  #")[0].replace("\\\n", " ").replace("8765", str(port))
            done = subprocess.run(["bash", "-c", command], env={**home_env, "TOKEN": token},
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            outputs.append(json.loads(done.stdout))
        assert outputs[0]["status"] == "ok" and outputs[0]["graph"] == "demo"
        assert [c["name"] for c in outputs[1]["conclusions"]] == ["Grade 2 Hypertension",
                                                                 "Hypertension"]
        anonymous = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                    f"http://127.0.0.1:{port}/health"], capture_output=True,
                                   text=True, timeout=60)
        assert anonymous.stdout == "401"
    finally:
        server.terminate()
        server.wait(30)


def test_serve_refusals_are_one_line(home_env: dict[str, str], tmp_path: Path) -> None:
    wide = _run(home_env, "serve", "--host", "0.0.0.0", "--tokens", str(tmp_path / "none.json"))
    assert wide.returncode == 1 and len(wide.stderr.strip().splitlines()) == 1
    assert "needs a token file" in wide.stderr
    tokens = tmp_path / "open.json"
    assert _run(home_env, "tokens", "add", "x", "--graph", "kgdb", "--tokens",
                str(tokens)).returncode == 0
    tokens.chmod(0o644)
    loose = _run(home_env, "serve", "--tokens", str(tokens))
    assert loose.returncode == 1 and "readable by others" in loose.stderr
    assert len(loose.stderr.strip().splitlines()) == 1
    tokens.chmod(0o600)
    twice = _run(home_env, "tokens", "add", "x", "--graph", "kgdb", "--tokens", str(tokens))
    assert twice.returncode == 1 and "exists" in twice.stderr
    bad = _run(home_env, "tokens", "add", "y", "--graph", "a b", "--tokens", str(tokens))
    assert bad.returncode == 1 and "invalid graph name" in bad.stderr
    assert _run(home_env, "tokens", "remove", "x", "--tokens", str(tokens)).returncode == 0
    spec = _run(home_env, "serve", "--print-openapi")
    assert spec.returncode == 0 and "/relay/ask" in json.loads(spec.stdout)["paths"]
