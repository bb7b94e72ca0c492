"""`kgdb neo4j start --with-service`: one command from nothing to BI tools calling kgdb from
Cypher (a token, APOC's settings, kgdb serve in the background, the procedures installed);
`kgdb neo4j stop` stops both. Checked as a BI tool would: its own Bolt driver, plain Cypher."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kgdb.engine.process import pid_alive
from tests.conftest import ROOT
from tests.neo4j.test_neo4j_local import kgdb, needs_java_and_maven

pytestmark = pytest.mark.neo4j
RULES = f"hypertension={ROOT / 'dsl' / 'examples' / 'hypertension.rules'}"


@needs_java_and_maven
def test_with_service_wires_bi_tools_in_one_command(tmp_path: Path) -> None:
    import neo4j

    # the service runs without an LLM (empty counts as unset)
    home = tmp_path / "n"
    env = {"KGDB_HOME": str(tmp_path / "k"), "OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""}
    info: dict[str, Any] = {}
    try:  # whatever fails, the finally stops what the command started
        started = kgdb("neo4j", "start", "--home", str(home), "--with-service", "--rules",
                       RULES, "--json", env=env, timeout=900)
        assert started.returncode == 0, started.stderr[-2000:]
        info = json.loads(started.stdout)
        settings = {k: info[k] for k in ("KGDB_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD")}
        assert info["service_url"].startswith("http://127.0.0.1:")
        assert {"custom.kgdb.ask", "custom.kgdb.askEvidence",
                "custom.kgdb.rules.hypertension"} <= set(info["procedures"])
        demo = kgdb("demo", env={**env, **settings})
        assert demo.returncode == 0, demo.stderr[-2000:]
        with neo4j.GraphDatabase.driver(settings["KGDB_URI"], auth=(
                settings["NEO4J_USERNAME"], settings["NEO4J_PASSWORD"])) as driver:
            grades, _, _ = driver.execute_query(
                "CALL custom.kgdb.rules.hypertension($facts) YIELD name RETURN name",
                facts={"SystolicPressure": 160, "DiastolicPressure": 95})
            assert [r["name"] for r in grades] == ["Grade 2 Hypertension", "Hypertension"]
            evidence, _, _ = driver.execute_query(
                "CALL custom.kgdb.askEvidence('Who directed Kismet?', "
                "{pattern: [['Kismet', 'directed_by', 'UNKNOWN director 1']]}) "
                "YIELD rank, head, relation, tail RETURN rank, head, relation, tail")
            assert (evidence[0]["head"], evidence[0]["relation"], evidence[0]["tail"]) == \
                ("Kismet", "directed_by", "William Dieterle")
            # a relayed procedure that needs an LLM says so in one line
            with pytest.raises(neo4j.exceptions.Neo4jError) as refused:
                driver.execute_query("CALL custom.kgdb.ask('Who directed Kismet?')")
            message = refused.value.message or ""
            assert "kgdb: no LLM is configured on this server" in message, message
            assert "HTTP response code" not in message
        # the sample's schema added the chunk index: run again to install what it allows
        again = json.loads(kgdb("neo4j", "start", "--home", str(home), "--with-service",
                                "--rules", RULES, "--json", env=env).stdout)
        assert again["service_pid"] == info["service_pid"]  # found running, not started twice
        assert "custom.kgdb.chunks" in again["procedures"]
        status = kgdb("procedures", "status", env={**env, **settings})
        assert status.returncode == 0 and "up to date" in status.stdout, status.stdout
    finally:
        stopped = kgdb("neo4j", "stop", "--home", str(home), env=env, timeout=120)
    assert stopped.stdout.strip() == "stopped"
    assert not pid_alive(info["service_pid"])
