"""A BI user's path on the Maven-started Neo4j: ``kgdb procedures install``, then plain Bolt
sessions and Neo4j's HTTP Query API call ``custom.kgdb.*``; ``ask`` goes through the live
relay to ``kgdb serve`` (on the port the server's apoc.conf names) and the scripted LLM;
status, drop, hostile arguments, and the service surviving Neo4j restarting under it."""

from __future__ import annotations

import base64
import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from kgdb.cli import cli
from kgdb.cli.rules import read_rules
from kgdb.config import Settings
from kgdb.procedures import neo4j as procedures
from kgdb.serve.app import ServeConfig, create_app
from kgdb.serve.tokens import TokenFile
from kgdb.text import text_problem
from tests.conftest import engine_env, neo4j_home, neo4j_service
from tests.live.test_serve import FILMS, PATTERN, _load
from tests.support.hostile import CORPUS
from tests.support.live_server import LiveServer

pytestmark = [pytest.mark.live, pytest.mark.neo4j]

ROOT = Path(__file__).resolve().parents[2]
RULES = {"hypertension": read_rules(ROOT / "dsl" / "examples" / "hypertension.rules")}


@pytest.fixture
def relay(neo4j_store: Any, embedder: Any, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Films in Neo4j, kgdb serve on the session's configured port, procedures installed."""
    service = neo4j_service()
    if service is None:
        pytest.skip("this Neo4j was not started by kgdb: its apoc.conf names no kgdb service")
    for name, value in engine_env(neo4j_store).items():
        monkeypatch.setenv(name, value)
    _load(neo4j_store, embedder, FILMS, tmp_path, "films")
    tokens = TokenFile(tmp_path / "tokens.json", [])
    tokens.add("neo4j-relay", ("read",), ("neo4j",), secret=service["token"])
    config = ServeConfig(Settings.from_env(), tokens, timeout_s=30, rulesets=RULES)
    with LiveServer(create_app(config, embedder=embedder), port=service["port"]):
        procedures.install(neo4j_store, RULES)
        yield neo4j_store
    procedures.drop(neo4j_store)


_DRIVERS: dict[str, Any] = {}


def _bolt(store: Any, text: str, **params: Any) -> list[dict[str, Any]]:
    """As a BI tool would: its own driver, a plain session, the Cypher text."""
    import neo4j

    driver = _DRIVERS.get(store.uri)
    if driver is None:
        driver = _DRIVERS[store.uri] = neo4j.GraphDatabase.driver(
            store.uri, auth=(store.username, store.password))
    with driver.session(database="neo4j") as session:
        return [r.data() for r in session.run(text, params)]


def test_bi_calls_over_bolt(relay: Any, embedder: Any, scripted_llm: Any) -> None:
    rows = _bolt(relay, "CALL custom.kgdb.entities('Kismit', 3) YIELD rank, id, name, score "
                        "RETURN rank, id, name, score")
    assert rows[0]["rank"] == 1 and rows[0]["name"] == "Kismet"
    judged = _bolt(relay, "CALL custom.kgdb.rules.hypertension({SystolicPressure: 160, "
                          "DiastolicPressure: 95}) YIELD name, type RETURN name, type")
    assert [r["name"] for r in judged] == ["Grade 2 Hypertension", "Hypertension"]

    vector = _bolt(relay, "RETURN custom.kgdb.embed('Kismet') AS v")[0]["v"]
    assert np.allclose(vector, embedder.embed(["Kismet"])[0], atol=1e-6)
    nearest = _bolt(relay, "CALL custom.kgdb.nearestEntities($v, 2)", v=vector)
    assert nearest[0]["name"] == "Kismet" and nearest[0]["distance"] < 1e-3
    relations = _bolt(relay, "CALL custom.kgdb.relations('directed by', 3)")
    assert relations[0]["relation"] == "directed_by"

    scripted_llm.push(json.dumps(PATTERN), "William Dieterle.")
    started = time.perf_counter()
    answered = _bolt(relay, "CALL custom.kgdb.ask('Who directed Kismet?') "
                            "YIELD rank, answer, evidence, llm_requests, tokens_in, tokens_out "
                            "RETURN rank, answer, evidence, llm_requests, tokens_in, tokens_out")
    elapsed = time.perf_counter() - started
    assert len(answered) == 1 and answered[0]["answer"] == "William Dieterle.", answered
    assert answered[0]["evidence"].startswith("Kismet directed_by William Dieterle; ")
    assert (answered[0]["llm_requests"], answered[0]["tokens_in"],
            answered[0]["tokens_out"]) == (2, 2, 2)  # the scripted server's usage: 1 and 1
    assert elapsed < 30
    evidence = _bolt(relay, "CALL custom.kgdb.askEvidence('Who directed Kismet?', "
                            "{pattern: [['Kismet', 'directed_by', 'UNKNOWN director 1']]})")
    assert evidence[0]["head"] == "Kismet" and evidence[0]["tail"] == "William Dieterle"
    bad = None
    try:
        _bolt(relay, "CALL custom.kgdb.askEvidence('q', {solver: 'nope'})")
    except Exception as exc:  # the service's 422, relayed as a procedure failure
        bad = str(exc)
    assert bad is not None and "422" in bad


def test_query_api(relay: Any) -> None:
    from kgdb.engine.neo4j_local import LocalNeo4j

    state = LocalNeo4j(neo4j_home()).status()
    assert state is not None and state.http_url
    credentials = base64.b64encode(f"{relay.username}:{relay.password}".encode()).decode()
    request = urllib.request.Request(
        f"{state.http_url}/db/neo4j/query/v2", method="POST",
        data=json.dumps({"statement": "CALL custom.kgdb.rules.hypertension($facts) "
                                      "YIELD name RETURN name",
                         "parameters": {"facts": {"SystolicPressure": 160,
                                                  "DiastolicPressure": 95}}}).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json",
                 "Authorization": f"Basic {credentials}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    assert body["data"]["fields"] == ["name"]
    assert body["data"]["values"] == [["Grade 2 Hypertension"], ["Hypertension"]]


def test_status_catalog_and_drop(relay: Any) -> None:
    report = procedures.status(relay, RULES)
    assert report["up_to_date"] and not report["missing"] and not report["changed"]
    names = {r["name"] for r in relay.run(
        "MATCH (m:KgdbMeta) WHERE m.key STARTS WITH 'procedure/' RETURN m.name AS name"
    ).records()}
    assert "custom.kgdb.rules.hypertension" in names and "custom.kgdb.ask" in names
    other = {"hypertension": read_rules(ROOT / "dsl" / "examples" / "cardio_risk.rules")}
    changed = procedures.status(relay, other)
    assert changed["changed"] == ["custom.kgdb.rules.hypertension"] and not changed["up_to_date"]
    more = procedures.status(relay, {**RULES, "cardio": other["hypertension"]})
    assert more["missing"] == ["custom.kgdb.rules.cardio"]
    out = CliRunner().invoke(cli, ["procedures", "status", "--json", "--rules",
                                   f"hypertension={ROOT / 'dsl/examples/hypertension.rules'}"])
    assert out.exit_code == 0 and json.loads(out.output)["up_to_date"], out.output
    # right after `install --rules`, a status without --rules is up to date too (the
    # installed rule sets are listed, not compared), and one that differs exits 1
    plain = CliRunner().invoke(cli, ["procedures", "status"])
    assert plain.exit_code == 0, plain.output
    assert "rule sets: hypertension" in plain.output and "up to date" in plain.output
    differs = CliRunner().invoke(cli, ["procedures", "status", "--rules",
                                       f"hypertension={ROOT / 'dsl/examples/cardio_risk.rules'}"])
    assert differs.exit_code == 1 and "differs: run kgdb procedures install" in differs.output
    dropped = procedures.drop(relay)
    assert "custom.kgdb.ask" in dropped["dropped"]
    assert procedures.status(relay)["installed"] == []
    assert not relay.run("MATCH (m:KgdbMeta) WHERE m.key STARTS WITH 'procedure/' "
                         "RETURN m").records()


def test_hostile_arguments_are_values(relay: Any, scripted_llm: Any) -> None:
    before = relay.run("MATCH (n) RETURN count(n) AS n").value(0)
    for text in CORPUS.values():
        text = text[:2000]
        if "\x00" in text or any(0xD800 <= ord(c) <= 0xDFFF for c in text):
            continue  # Bolt refuses these strings before Neo4j sees them
        if len(text) > 1000:
            with pytest.raises(Exception, match="at most 1000 characters"):
                _bolt(relay, "CALL custom.kgdb.entities($t, 3)", t=text)
        else:
            rows = _bolt(relay, "CALL custom.kgdb.entities($t, 3)", t=text)
            assert all(r["rank"] >= 1 for r in rows)
        rows = _bolt(relay, "CALL custom.kgdb.rules.hypertension($f)",
                     f={text or "k": text, "SystolicPressure": 120})
        assert rows == []
        if not text.strip() or len(text) >= 1000:
            continue
        options = {"pattern": [[text, "directed_by", "UNKNOWN 1"]]}
        if text_problem(text):  # the text contract: refused in one line, by the procedure
            with pytest.raises(Exception, match=r"kgdb: .*status 422"):
                _bolt(relay, "CALL custom.kgdb.askEvidence($q, $o)", q=text, o=options)
            continue
        evidence = _bolt(relay, "CALL custom.kgdb.askEvidence($q, $o)", q=text, o=options)
        assert all("rank" in r for r in evidence)
    assert relay.run("MATCH (n) RETURN count(n) AS n").value(0) == before


def test_install_errors_are_one_line(relay: Any) -> None:
    relay.run("CALL apoc.static.set('kgdb.url', '')", write=True)  # as if apoc.conf had none
    try:
        with pytest.raises(procedures.ProcedureError, match="not configured"):
            procedures.install(relay, RULES)
        with pytest.raises(Exception, match="knowledge service is not configured"):
            _bolt(relay, "CALL custom.kgdb.ask('Who directed Kismet?')")
    finally:
        service = neo4j_service()
        assert service is not None
        relay.run("CALL apoc.static.set('kgdb.url', $u)", {"u": f"http://127.0.0.1:"
                                                                f"{service['port']}"},
                  write=True)
    with pytest.raises(Exception, match="cannot name a procedure"):
        procedures.install(relay, {"a b": RULES["hypertension"]})


def test_transaction_metadata_names_kgdb(neo4j_store: Any) -> None:
    view = neo4j_store.view(metadata={"app": "kgdb", "endpoint": "/ask"})
    row = view.run("CALL tx.getMetaData() YIELD metadata RETURN metadata").value(0)
    assert row == {"app": "kgdb", "endpoint": "/ask"}
    refused = neo4j_store.view(read_only=True)
    from kgdb.errors import ReadOnlyViolationError

    with pytest.raises(ReadOnlyViolationError):
        refused.run("CREATE (:X)", write=True)


def test_service_survives_neo4j_restarting(relay: Any) -> None:
    """Stop and start the session's Neo4j (same port, same data) under the running service:
    the relay answers again, and so does a service request."""
    from kgdb.engine.neo4j_local import LocalNeo4j

    server = LocalNeo4j(neo4j_home())
    state = server.status()
    assert state is not None
    server.stop()
    server.ensure_started(state.port)
    deadline = time.monotonic() + 60
    while True:
        try:
            rows = _bolt(relay, "CALL custom.kgdb.entities('Kismet', 1)")
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    assert rows[0]["name"] == "Kismet"
    evidence = _bolt(relay, "CALL custom.kgdb.askEvidence('Who directed Kismet?', "
                            "{pattern: [['Kismet', 'directed_by', 'UNKNOWN director 1']]})")
    assert evidence[0]["tail"] == "William Dieterle"


def test_bench_procedures_reports_both_paths(relay: Any, scripted_llm: Any,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    scripted_llm.default = "William Dieterle."
    options = json.dumps({"pattern": PATTERN["triples"]})
    for extra in ([], ["--evidence-only"]):
        out = CliRunner().invoke(cli, ["bench", "procedures", "Who directed Kismet?",
                                       "--options", options, "--runs", "2", "--json", *extra])
        assert out.exit_code == 0, out.output
        report = json.loads(out.output)
        assert report["cypher_procedure"]["p50_ms"] > 0
        assert report["kgdb_ask_in_process"]["p50_ms"] > 0


def test_bi_examples_run_as_written(relay: Any, scripted_llm: Any) -> None:
    """docs/procedures.md's Cypher for BI users, and its Query API curl, exactly as printed."""
    import re
    import shutil
    import subprocess

    from kgdb.engine.neo4j_local import LocalNeo4j

    page = (ROOT / "docs" / "procedures.md").read_text()
    section = page[page.index("**A BI user's path.**"):]
    cypher = section[section.index("```cypher") + 9: section.index("```", section.index(
        "```cypher") + 9)]
    statements = [s.strip() for s in cypher.split(";") if s.strip()]
    assert len(statements) == 3
    scripted_llm.push(json.dumps(PATTERN), "William Dieterle.")
    answered, judged, found = (_bolt(relay, s) for s in statements)
    assert answered[0]["answer"] == "William Dieterle."
    assert [r["name"] for r in judged] == ["Grade 2 Hypertension", "Hypertension"]
    assert found[0]["name"] == "Kismet"
    if shutil.which("curl") is None:
        return
    block = section[section.index("```sh") + 5: section.index("```", section.index("```sh") + 5)]
    command = re.sub(r"\\\n\s*", " ", block.strip())
    state = LocalNeo4j(neo4j_home()).status()
    assert state is not None and state.http_url
    command = command.replace("http://127.0.0.1:7474", state.http_url)
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "NEO4J_PASSWORD": relay.password})
    assert done.returncode == 0, done.stderr
    values = json.loads(done.stdout)["data"]["values"]
    assert values[0] == [1, "Kismet"]


def test_bench_bi_times_every_bi_path(relay: Any) -> None:
    """kgdb bench bi: the plugin's kgdb.entities, APOC's custom.kgdb.entities and the rule
    set's ask-time both ways, each with its rows and p50/p90; and a path not installed is its
    one-line error, not a failure of the whole benchmark."""
    rules = str(ROOT / "dsl" / "examples" / "hypertension.rules")
    args = ["bench", "bi", "--rules", f"hypertension={rules}", "--facts",
            '{"SystolicPressure": 160, "DiastolicPressure": 95}', "--runs", "3", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["native"] and len(report["machine"]["load_average_at_end"]) == 3
    for name in ("kgdb.entities", "custom.kgdb.entities", "rules hypertension: ask statement",
                 "custom.kgdb.rules.hypertension"):
        assert report[name]["rows"] > 0 and 0 < report[name]["p50_ms"] <= report[name]["p90_ms"]
    assert report["kgdb.entities"]["rows"] == report["custom.kgdb.entities"]["rows"]
    procedures.drop(relay)
    deadline = time.monotonic() + 30  # APOC unregisters a dropped custom procedure lazily
    while True:
        gone = json.loads(CliRunner().invoke(cli, args).output)
        if "error" in gone["custom.kgdb.entities"] or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert "custom.kgdb.entities" in gone["custom.kgdb.entities"]["error"]
    assert gone["kgdb.entities"]["rows"] > 0
    bad = CliRunner().invoke(cli, ["bench", "bi", "--facts", "[1]"])
    assert bad.exit_code == 1 and "--facts must be a JSON object" in bad.output
