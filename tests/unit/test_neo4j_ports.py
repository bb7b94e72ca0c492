"""Every port of `kgdb neo4j start` is the operator's (issue 35, item 3): --port, --http-port
and --service-port reach the server's lifecycle, a server already running on other ports is
an error rather than a silent other port, and the line printed names a command that reaches
this same server (its --home), not one under $KGDB_HOME/neo4j."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from kgdb.cli import main
from kgdb.engine.neo4j_local import LocalNeo4j, LocalNeo4jState
from kgdb.errors import ConfigError, EngineConnectionError


def run_main(args: list[str], capsys: Any) -> tuple[int, str, str]:
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def _fake_state(port: int, http_port: int) -> LocalNeo4jState:
    return LocalNeo4jState(4242, port, 0.0, http_port=http_port)


def test_start_takes_bolt_and_http_ports_and_names_its_home(capsys: Any, monkeypatch: Any,
                                                            tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def ensure_started(self: LocalNeo4j, port: int | None = None, *,
                       http_port: int | None = None, standard_ports: bool = False
                       ) -> LocalNeo4jState:
        seen.update(port=port, http_port=http_port, home=self.home)
        return _fake_state(port or 7687, http_port or 7474)

    monkeypatch.setattr(LocalNeo4j, "status", lambda self: None)
    monkeypatch.setattr(LocalNeo4j, "ensure_started", ensure_started)
    monkeypatch.setattr(LocalNeo4j, "password", lambda self: "pw")
    monkeypatch.setattr(LocalNeo4j, "browser_url", lambda self, state: None)
    home = tmp_path / "my neo4j"
    code, out, err = run_main(["neo4j", "start", "--home", str(home), "--port", "17687",
                               "--http-port", "17474"], capsys)
    assert code == 0, err
    assert seen == {"port": 17687, "http_port": 17474, "home": home}
    assert "export KGDB_URI=bolt://127.0.0.1:17687" in out
    assert "HTTP http://127.0.0.1:17474" in out
    assert f"kgdb neo4j start --home '{home.resolve()}'" in err
    code, _, err = run_main(["neo4j", "start", "--home", str(home), "--service-port", "9999"],
                            capsys)
    assert code == 2 and "--service-port goes with --with-service" in err


def test_with_service_takes_every_port(capsys: Any, monkeypatch: Any, tmp_path: Path) -> None:
    import kgdb.serve.wiring as wiring

    seen: dict[str, Any] = {}

    def wire(server: Any, kgdb_home: Path, rules: Any, **ports: Any) -> Any:
        seen.update(ports)
        raise ConfigError("stand-in: not wired")

    monkeypatch.setattr(wiring, "wire", wire)
    code, _, err = run_main(["neo4j", "start", "--home", str(tmp_path), "--with-service",
                             "--port", "17688", "--http-port", "17475", "--service-port",
                             "18765"], capsys)
    assert code == 1 and "stand-in: not wired" in err
    assert seen == {"port": 18765, "bolt_port": 17688, "http_port": 17475}


def test_a_running_server_on_other_ports_is_an_error(monkeypatch: Any, tmp_path: Path) -> None:
    server = LocalNeo4j(tmp_path)
    monkeypatch.setattr(LocalNeo4j, "status", lambda self: _fake_state(7687, 7474))
    assert server.ensure_started().port == 7687
    assert server.ensure_started(7687, http_port=7474).http_port == 7474
    with pytest.raises(EngineConnectionError, match="already runs with Bolt on port 7687, "
                                                    "not 17687"):
        server.ensure_started(17687)
    with pytest.raises(EngineConnectionError, match="HTTP on port 7474, not 17474"):
        server.ensure_started(http_port=17474)


def test_a_taken_service_port_is_an_error(tmp_path: Path) -> None:
    from kgdb.serve.wiring import wire

    class Server:
        home = tmp_path / "neo4j"

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"--service-port: 127.0.0.1:{port} is already "
                                              "in use"):
            wire(Server(), tmp_path / "kgdb", {}, port=port)
