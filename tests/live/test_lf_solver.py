"""The logical-form solver against the scripted OpenAI-compatible server: realistic plans,
malformed plans fed back through bounded retries, 429s, and re-planning over rounds."""

from __future__ import annotations

from typing import Any

import pytest

from kgdb.errors import LlmError
from kgdb.llm.client import ChatClient
from kgdb.solve.lf_solver import solve_lf
from tests.conftest import shared_data
from tests.live.test_lf_metaqa import KB, other_movies_of_director

PLAN = """```
Step1: Who directed Kismet?
Action1: Retrieval(s=s1:Movie[`Kismet`], p=p1:director, o=o1:Person)
Step2: Which other films did this director make?
Action2: Retrieval(s=s2:Movie, p=p2:director, o=o1)
Step3: Output the films.
Action3: Output(s2)
```"""


@pytest.fixture(scope="module")
def kb() -> KB:
    return KB(shared_data("metaqa", "kb.txt"))


def test_plan_execute_judge(metaqa_store: Any, kb: KB, scripted_llm: Any) -> None:
    expected = other_movies_of_director(kb, "Kismet")
    scripted_llm.push(PLAN, "ANSWER: " + " | ".join(sorted(expected)))
    result = solve_lf("Which movies share the director of Kismet?", metaqa_store, None,
                      ChatClient())
    assert result.answered and len(result.rounds) == 1
    run = result.rounds[0].run
    assert run is not None
    assert {v.text for v in run.outputs["s2"]} == expected
    # "director" was linked to the graph's directed_by
    assert "`directed_by`" in (run.trace[0].cypher or "")
    planner_request = scripted_llm.requests[0]["messages"]
    assert "directed_by" in planner_request[0]["content"]  # the graph's relations are shown
    judge_request = scripted_llm.requests[1]["messages"][1]["content"]
    assert sorted(expected)[0] in judge_request
    assert result.to_json()["solver"] == "logical-form"
    assert "Cypher" not in result.render() or "MATCH" in result.render()


def test_malformed_plan_is_fed_back(metaqa_store: Any, scripted_llm: Any) -> None:
    scripted_llm.push(
        "Action1: Retrieval(s=s1:Movie[Kismet] p=p1:directed_by, o=o1)",   # missing comma
        "Action1: Retrieval(s=s1:Movie[Kismet], p=p1:directed_by, o=o1)\nOutput(o2)",  # unbound
        "Action1: Retrieval(s=s1:Movie[Kismet], p=p1:directed_by, o=o1)\nAction2: Output(o1)",
        "ANSWER: William Dieterle")
    result = solve_lf("Who directed Kismet?", metaqa_store, None, ChatClient())
    assert result.answer == "William Dieterle"
    second = scripted_llm.requests[1]["messages"][-1]["content"]
    assert "the plan is not valid: plan:1:" in second and "unexpected" in second
    third = scripted_llm.requests[2]["messages"][-1]["content"]
    assert "alias 'o2' is used before it is bound" in third
    run = result.rounds[0].run
    assert run is not None and [v.text for v in run.outputs["o1"]] == ["William Dieterle"]


def test_rate_limited_then_answers(metaqa_store: Any, scripted_llm: Any) -> None:
    scripted_llm.push({"status": 429},
                      "Retrieval(s=s1:Movie[Kismet], p=p1:release_year, o=o1)\nOutput(o1)",
                      {"status": 429}, "ANSWER: 1944")
    result = solve_lf("When was Kismet released?", metaqa_store, None, ChatClient())
    assert result.answer == "1944" and result.answered
    assert len(scripted_llm.requests) == 4


def test_replans_when_memory_is_not_enough(metaqa_store: Any, scripted_llm: Any) -> None:
    scripted_llm.push(
        "Step1: How often did the plague occur in Kismet's setting?\n"
        "Action1: Retrieval(s=s1:Movie[Kismet], p=p1:plagueOccurrence, o=o1)\nOutput(o1)",
        "MISSING: Who directed Kismet?",
        "Step1: Who directed Kismet?\n"
        "Action1: Retrieval(s=s1:Movie[Kismet], p=p1:directed_by, o=o1)\nAction2: Output(o1)",
        "ANSWER: William Dieterle")
    result = solve_lf("Who directed Kismet?", metaqa_store, None, ChatClient(), rounds=3)
    assert result.answered and len(result.rounds) == 2
    first = result.rounds[0].run
    assert first is not None and first.trace[0].rows == 0
    assert any("no relation like 'plagueOccurrence'" in n for n in first.compiled.notes)
    assert result.rounds[1].question == "Who directed Kismet?"
    replan = scripted_llm.requests[2]["messages"][1]["content"]
    assert "Known so far" in replan and "nothing found" in replan


def test_rounds_run_out(metaqa_store: Any, scripted_llm: Any) -> None:
    plan = "Retrieval(s=s1:Movie[Kismet], p=p1:has_genre, o=o1)\nOutput(o1)"
    scripted_llm.push(plan, "MISSING: what else?", plan, "MISSING: still?",
                      "The genre of Kismet is not recorded.")
    result = solve_lf("What genre is Kismet?", metaqa_store, None, ChatClient(), rounds=2)
    assert not result.answered and len(result.rounds) == 2
    assert result.answer == "The genre of Kismet is not recorded."


def test_plan_never_parses(metaqa_store: Any, scripted_llm: Any) -> None:
    scripted_llm.push("I think the answer is 42.", "Sure! Retrieval(", "Retrieve it please")
    with pytest.raises(LlmError, match="could not be parsed after 3 attempts"):
        solve_lf("Who directed Kismet?", metaqa_store, None, ChatClient())
