"""kgdb eval qa's measures: the official HotpotQA/SQuAD normalisation, EM, F1 and MetaQA
Hits@1, and the question files it reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgdb.errors import LoadError
from kgdb.retrieve.qa import exact_match, f1_score, hits_at_1, normalize_answer, read_questions


def test_normalisation_is_squads() -> None:
    assert normalize_answer("The  Cat, sat!") == "cat sat"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("20 March 851.") == "20 march 851"
    assert normalize_answer("theatre") == "theatre"  # articles are words, not prefixes


def test_exact_match_and_f1() -> None:
    assert exact_match("the William Dieterle.", "William Dieterle") == 1.0
    assert exact_match("Dieterle", "William Dieterle") == 0.0
    # one of two gold tokens, one predicted token: precision 1, recall 1/2
    assert f1_score("Dieterle", "William Dieterle") == pytest.approx(2 / 3)
    # two predicted tokens, one right: precision 1/2, recall 1
    assert f1_score("William Wyler", "William") == pytest.approx(2 / 3)
    assert f1_score("no", "yes") == 0.0 and f1_score("yes", "yes") == 1.0
    assert f1_score("yes it is", "yes") == 0.0  # HotpotQA: yes/no must be exact
    assert f1_score("", "anything") == 0.0


def test_hits_at_1_takes_the_first_item_named() -> None:
    assert hits_at_1("William Dieterle", ["William Dieterle", "Other"]) == 1.0
    assert hits_at_1("Kismet | Juarez", ["kismet"]) == 1.0
    assert hits_at_1("Juarez; Kismet", ["Kismet"]) == 0.0
    assert hits_at_1("Paris, Texas", ["Paris, Texas"]) == 1.0


def test_question_files(tmp_path: Path) -> None:
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text(json.dumps({"id": "a", "question": "Who?", "answer": "Ann",
                                 "answer_aliases": ["Annie"]}) + "\n\n"
                     + json.dumps({"question": "When?", "answers": ["1944", 1944]}) + "\n")
    questions, kind = read_questions(jsonl)
    assert kind == "open" and [q.answers for q in questions] == [("Ann", "Annie"),
                                                                ("1944", "1944")]
    assert questions[0].id == "a" and questions[1].id == "3"
    musique = tmp_path / "musique.json"
    musique.write_text(json.dumps([{"id": "m1", "question": "Where?", "answer": "Rome",
                                    "answer_aliases": [], "paragraphs": []}]))
    questions, kind = read_questions(musique)
    assert kind == "open" and questions[0].answers == ("Rome",)
    metaqa = tmp_path / "qa.txt"
    metaqa.write_text("who directed [Kismet]\tWilliam Dieterle|Other\t1hop\n")
    questions, kind = read_questions(metaqa)
    assert kind == "metaqa" and questions[0].question == "who directed Kismet"
    assert questions[0].answers == ("William Dieterle", "Other")


@pytest.mark.parametrize(("text", "message"), [
    ('{"question": "Who?"}\n', "q.jsonl:1: the answer must be a text"),
    ('{"question": "Who?", "answer": "A"}\n{oops\n', "q.jsonl:2: not JSON"),
    ('{"answer": "A"}\n', "q.jsonl:1: a question is {question, answer or answers}"),
    ("who [x]\n", "q.jsonl:1: a MetaQA line is question<TAB>answers[<TAB>type], found 1"),
    ("who [x]\t \n", "q.jsonl:1: the question has no answer"),
    ('[{"question": "Q", "answers": [true]}]', "q.jsonl: item 1: the answer must be a text"),
])
def test_bad_question_files_name_the_place(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(text)
    with pytest.raises(LoadError) as info:
        read_questions(path)
    assert str(info.value).startswith(f"{tmp_path}/{message}"), str(info.value)
