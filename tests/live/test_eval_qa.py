"""kgdb eval qa end to end on both engines against the scripted OpenAI-compatible server:
each question asked as kgdb ask does (the LLM sees the passages retrieved), the answers scored
with the official normalisation, the requests and tokens the server reported counted per
question; an unreachable endpoint is one line naming the question."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kgdb.cli import cli, main

pytestmark = pytest.mark.live

DOCS = [
    {"id": "kismet", "title": "Kismet", "text": "Kismet is a 1944 film directed by William "
                                                "Dieterle. It stars Ronald Colman."},
    {"id": "juarez", "title": "Juarez", "text": "Juarez is a 1939 film directed by William "
                                                "Dieterle. It stars Paul Muni."},
    {"id": "tides", "title": "Tides", "text": "The spring tide rose by forty centimetres."},
]
QUESTIONS = [
    {"id": "q1", "question": "Who directed Kismet?", "answer": "William Dieterle"},
    {"id": "q2", "question": "Who stars in Juarez?", "answer": "Paul Muni",
     "answer_aliases": ["Muni"]},
    {"id": "q3", "question": "When did the tide rise?", "answer": "at dawn"},
]
REPLIES = {"Kismet": "William Dieterle.", "Juarez": "Muni, Paul",
           "tide": "The knowledge does not say."}


def test_eval_qa_scores_answers_and_counts_tokens(cli_store: Any, scripted_llm: Any,
                                                  tmp_path: Path) -> None:
    docs = tmp_path / "films.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    out = CliRunner().invoke(cli, ["load", "documents", str(docs), "--no-progress", "--json"])
    assert out.exit_code == 0, out.output
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    seen: list[str] = []

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        user = body["messages"][-1]["content"]
        seen.append(user)
        key = next(k for k in REPLIES if k in user.split("Question:")[-1])
        return {"content": REPLIES[key], "prompt_tokens": 100, "completion_tokens": 7}

    scripted_llm.default = reply
    out = CliRunner().invoke(cli, ["eval", "qa", "--questions", str(questions), "--mode",
                                   "vector", "--answers", "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["questions"] == 3 and report["kind"] == "open"
    scores = report["scores"]["vector"]
    # q1 exact; q2 "Muni, Paul" vs "Paul Muni": EM 0, F1 1 (same tokens); q3 0
    assert scores["em"] == pytest.approx(1 / 3, abs=1e-4)
    assert scores["f1"] == pytest.approx(2 / 3, abs=1e-4)
    assert scores["llm_per_question"] == {"requests": 1.0, "tokens_in": 100.0, "tokens_out": 7.0}
    assert scores["failed"] == 0
    answers = report["answers"]["vector"]
    assert [a["answer"] for a in answers] == ["William Dieterle.", "Muni, Paul",
                                             "The knowledge does not say."]
    # the LLM answered from the passages the solver retrieved
    assert "Ronald Colman" in seen[0] and "Paul Muni" in seen[1]


def test_eval_qa_without_an_endpoint_is_one_line(cli_store: Any, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps(QUESTIONS[0]) + "\n", encoding="utf-8")
    docs = tmp_path / "films.jsonl"
    docs.write_text(json.dumps(DOCS[0]) + "\n", encoding="utf-8")
    assert CliRunner().invoke(cli, ["load", "documents", str(docs), "--no-progress"]).exit_code == 0
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SystemExit) as info:
        main(["eval", "qa", "--questions", str(questions)])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("kgdb: error: kgdb eval qa asks an LLM: set OPENAI_BASE_URL")
    # an endpoint nobody answers at: the error names the question, no traceback
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("KGDB_LLM_RETRIES", "0")
    with pytest.raises(SystemExit) as info:
        main(["eval", "qa", "--questions", str(questions)])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("kgdb: error: question q1: cannot reach the LLM at"), err
    assert "Traceback" not in err


def test_eval_qa_on_a_solver_not_ready_stops_at_once(cli_store: Any, scripted_llm: Any,
                                                     tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["eval", "qa", "--questions", str(questions), "--mode", "vector"])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("kgdb: error: the vector solver needs documents"), err
    assert scripted_llm.requests == []
