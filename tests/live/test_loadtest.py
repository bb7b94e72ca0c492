"""The shipped load test (benchmarks/loadtest.py) at a small size on both engines: real
``kgdb serve`` processes, tenants, clients, writers and the scripted LLM, for a few seconds.
What is asserted is what the load test checks (every answer equal to one it got alone, none
naming another tenant's data, no server error), never its timings.

The replica setup (two ``kgdb serve`` behind nginx, one of them killed under load) runs on
the embedded FalkorDB and on Neo4j; it is skipped when nginx is not installed (``make test``
installs it with apt-get when run as root)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import loadtest

pytestmark = pytest.mark.live

NOT_OK = ("wrong", "cross_tenant", "server_error", "transport_error", "unexpected_4xx")


def _plan(engine: str, store: Any, **kw: Any) -> loadtest.Plan:
    neo4j = None
    if engine == "neo4j":
        from tests.conftest import neo4j_home

        neo4j = {"uri": store.uri, "username": store.username, "password": store.password,
                 "home": str(neo4j_home())}
    defaults: dict[str, Any] = {"engine": engine, "tenants": 2, "clients": 2,
                                "duration_s": 6.0, "questions": 1, "films": 3,
                                "min_rounds": 1, "disconnects": 4,
                                "warmup_s": 2.0, "progress": False, "neo4j": neo4j}
    return loadtest.Plan(**{**defaults, **kw})


def _assert_checks(result: dict[str, Any], *, errors_allowed: tuple[str, ...] = ()) -> None:
    checks = result["checks"]
    # the examples whole (pytest would cut a dict's repr): what was asked, got and accepted
    examples = json.dumps(checks["examples"], indent=1)
    assert checks["baseline_problems"] == []
    assert checks.get("wrong", 0) == 0, examples
    assert checks.get("cross_tenant", 0) == 0, examples
    for verdict in NOT_OK:
        if verdict not in errors_allowed:
            assert checks.get(verdict, 0) == 0, f"{verdict}: {examples}"
    assert checks["answers_checked"] > 0
    endpoints = result["endpoints"]
    # every solver that needs no LLM, the logical form and the streamed ask were answered
    # and checked under load
    for key in ("retrieve:vector", "retrieve:hybrid", "retrieve:entities", "retrieve:ppr",
                "retrieve:document-graph", "retrieve:triple-context", "retrieve:pattern",
                "lf/run", "ask-stream:vector"):
        assert endpoints[key].get("ok", 0) > 0, (key, endpoints.get(key))
    for tenant, w in (result["writers"] or {}).items():
        assert w["error_count"] == 0, (tenant, w["errors"])
        assert w["loads"] >= 1 and w["deletes"] >= 1, (tenant, w)
    memory = result["memory"]["summary"]
    assert memory and all(m["last_mb"] > 0 for m in memory.values())


def test_small_load_on_each_engine(store: Any, embedded_home: Path) -> None:
    engine = store.dialect.NAME  # on FalkorDB the load test makes graphs lt0, lt1 of its own
    result = loadtest.run(_plan(engine, store, think_s=0.05))
    assert result["passed"], result["checks"]
    assert result["think_s"] == 0.05
    _assert_checks(result)
    if engine == "neo4j":
        assert result["tenants"] == 1 and result["notes"]  # Community: one user database
    else:
        assert result["tenants"] == 2
    assert result["endpoints"][loadtest.DELIBERATE]["deliberate_4xx"] > 0
    # the disconnect test ran and is reported (h4's cancellation fix decides its numbers)
    disconnect = result["disconnect"]
    assert disconnect["requests"] == 4 and disconnect["service_answers_after"]
    assert {"upstream_open_after_10s", "threads_left", "fds_left"} <= set(disconnect)


def test_answers_from_another_tenant_are_caught() -> None:
    """The checker itself: an answer naming another tenant's film or document is a
    cross-tenant answer, an answer not seen alone is wrong, one seen alone is ok."""
    tenants = loadtest.deal(["a", "b"])
    checker = loadtest.Checker(tenants)
    mine = {"passages": [{"id": f"a/{tenants[0].films[0]}#0", "text": "x"}]}
    checker.accept("a", 0, mine)
    assert checker.judge("a", 0, mine) == "ok"
    assert checker.judge("a", 0, {"passages": []}) == "wrong"
    # scores within the tolerance (another process sums the embedding in another order)
    scored = {"facts": [{"head": "x", "score": 0.499258}]}
    checker.accept("a", 1, scored)
    assert checker.judge("a", 1, {"facts": [{"head": "x", "score": 0.499259}]}) == "ok"
    assert checker.judge("a", 1, {"facts": [{"head": "x", "score": 0.51}]}) == "wrong"
    assert checker.judge("a", 1, {"facts": [{"head": "y", "score": 0.499258}]}) == "wrong"
    assert checker.judge("a", 0, {"facts": [{"head": tenants[1].films[0]}]}) == "cross_tenant"
    assert checker.judge("a", 0, {"documents": [{"id": f"b/{tenants[1].films[0]}"}]}) == \
        "cross_tenant"
    assert not set(tenants[0].films) & set(tenants[1].films)


@pytest.mark.skipif(loadtest.nginx_binary() is None, reason=(
    "nginx is not installed (apt-get install -y nginx; make test installs it as root)"))
def test_replicas_behind_nginx_lose_only_in_flight_requests(store: Any,
                                                             embedded_home: Path) -> None:
    """Two replicas sharing one engine behind nginx: each gives the accepted answers and
    takes the same token; one killed (SIGKILL) half-way under load costs at most its
    in-flight requests, which fail (5xx from the proxy, or a broken connection), never
    answer wrongly; the other goes on answering."""
    engine = store.dialect.NAME
    result = loadtest.run(_plan(engine, store, replicas=2, kill_replica=True, duration_s=8.0,
                                disconnects=0))
    assert result["proxy"] == "nginx"
    agree = result["replicas_agree"]
    assert agree["same"], agree
    assert agree["requests"] > 0
    _assert_checks(result, errors_allowed=("server_error", "transport_error"))
    kill = result["replica_kill"]
    assert kill is not None and kill["replica"] == 0
    # the errors are at most the killed replica's in-flight requests (one per client) and
    # the requests nginx had begun to send on its idle keep-alive connections to it (at
    # most one per client too: POSTs are not re-sent)
    errors = sum(kill["errors_in_whole_run"].values())
    assert errors <= 2 * result["tenants"] * result["clients_per_tenant"], kill
    assert result["passed"], result["checks"]
    late = [e for e in result["checks"]["examples"] if e["at_s"] > kill["at_s"] + 5]
    assert not late, late  # nothing fails once the proxy has seen the replica gone
