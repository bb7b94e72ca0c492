"""``kgdb serve --mcp``: an agent host starts it over stdio, lists the tools (read-only unless
--allow-writes) and calls them on the graph it was started for."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.live.test_serve import FILMS, PATTERN, _load

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "dsl" / "examples" / "hypertension.rules"


async def _session(env: dict[str, str], *extra: str) -> tuple[list[Any], list[Any]]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "kgdb", "serve", "--mcp", "--rules", f"hypertension={RULES}", *extra],
        env=env, cwd=str(ROOT))
    async with Client(params, read_timeout_seconds=120) as client:
        tools = (await client.list_tools()).tools
        calls = [
            await client.call_tool("evaluate_rules", {
                "ruleset": "hypertension",
                "facts": {"SystolicPressure": 160, "DiastolicPressure": 95}}),
            await client.call_tool("retrieve", {"question": "Who directed Kismet?",
                                                "options": {"pattern": PATTERN["triples"]}}),
            await client.call_tool("retrieve", {"question": "q", "options": {"solver": "x"}}),
            await client.call_tool("run_logical_form", {"program": (
                "Step1: x\nAction1: Retrieval(s=s1:Entity[Kismet], p=p1:directed_by, o=o1)\n"
                "Output(o1)")}),
            await client.call_tool("ask", {"question": "Who directed Kismet?",
                                           "options": {"pattern": PATTERN["triples"]}}),
        ]
        return tools, calls


def test_mcp_tools_over_stdio(falkordb_store: Any, embedder: Any, tmp_path: Path,
                              scripted_llm: Any) -> None:
    _load(falkordb_store, embedder, FILMS, tmp_path, "films")
    scripted_llm.push({"content": "William Dieterle directed Kismet.", "prompt_tokens": 90,
                       "completion_tokens": 6})
    env = {**os.environ, "KGDB_GRAPH": falkordb_store.graph_name}
    env.pop("KGDB_URI", None)
    tools, calls = asyncio.run(_session(env))
    names = {t.name for t in tools}
    assert names == {"health", "retrieve", "ask", "run_logical_form", "evaluate_rules"}
    assert all(t.annotations.read_only_hint for t in tools)
    judged, retrieved, bad, run, asked = calls
    assert [c["name"] for c in json.loads(judged.content[0].text)["conclusions"]] == [
        "Grade 2 Hypertension", "Hypertension"]
    assert json.loads(retrieved.content[0].text)["evidence"][0]["tail"] == "William Dieterle"
    assert bad.is_error and "solver" in bad.content[0].text
    assert [r["value"] for r in json.loads(run.content[0].text)["rows"]] == ["William Dieterle"]
    answer = json.loads(asked.content[0].text)
    assert answer["answer"] == "William Dieterle directed Kismet."
    assert answer["llm"] == {"requests": 1, "tokens_in": 90, "tokens_out": 6, "http_retries": 0}
    writable, _ = asyncio.run(_session(env, "--allow-writes"))
    assert "apply_rules" in {t.name for t in writable}
