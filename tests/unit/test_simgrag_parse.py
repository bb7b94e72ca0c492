"""Parsing what models really return for SimGRAG's query-to-pattern step; the MetaQA oracle."""

from __future__ import annotations

import pytest

from kgdb.dsl.pattern import parse_unknown, pattern_from_triples, pattern_triples
from kgdb.ir import PatternError
from kgdb.llm import OutputParseError
from kgdb.retrieve.metaqa import MetaqaQuestion, answer_matches, answer_var, oracle_pattern
from kgdb.retrieve.pattern_llm import (
    answer_prompt,
    load_examples,
    parse_pattern,
    parse_pattern_reply,
    parse_verdict,
    pattern_prompt,
)

EXPECTED = [("Tokyo Godfathers", "directed by", "UNKNOWN director 1")]

REPLIES = {
    "json": '{"divided": ["the director of Tokyo Godfathers"], "triples": '
            '[["Tokyo Godfathers", "directed by", "UNKNOWN director 1"]]}',
    "paper style tuples, trailing commas": '''{
        "divided": [
            "the director of Tokyo Godfathers",
        ],
        "triples": [
            ("Tokyo Godfathers", "directed by", "UNKNOWN director 1"),
        ]
    }''',
    "single quotes": "{'divided': ['the director'], 'triples': [('Tokyo Godfathers', "
                     "'directed by', 'UNKNOWN director 1')]}",
    "code fence and prose": "Here is the extracted knowledge graph structure:\n```json\n"
                            '{"divided": ["x"], "triples": [["Tokyo Godfathers", "directed by", '
                            '"UNKNOWN director 1"]]}\n```\nHope this helps!',
    "prose around": 'Sure! {"triples": [("Tokyo Godfathers", "directed by", '
                    '"UNKNOWN director 1")], "divided": []} -- done.',
    "paper typo in a key": '''{
        'divided": ["the director of Tokyo Godfathers"],
        "triples": [("Tokyo Godfathers", "directed by", "UNKNOWN director 1"),]
    }''',
    "json literals": '{"divided": null, "ok": true, "triples": [["Tokyo Godfathers", '
                     '"directed by", "UNKNOWN director 1"]]}',
    "extra whitespace": '{"triples": [["  Tokyo   Godfathers ", "directed  by", '
                        '"UNKNOWN director 1"]]}',
}


@pytest.mark.parametrize("reply", list(REPLIES.values()), ids=list(REPLIES))
def test_tolerant_parser_reads_realistic_replies(reply):
    _, triples = parse_pattern_reply(reply)
    assert triples == EXPECTED


def test_an_unclosed_object_still_yields_its_triples():
    _, triples = parse_pattern_reply('{"triples": [("a", "b", "c"), ]')
    assert triples == [("a", "b", "c")]


def test_apostrophes_inside_double_quotes():
    _, triples = parse_pattern_reply(
        '{"triples": [("Schindler\'s List", "directed by", "UNKNOWN director 1")]}')
    assert triples[0][0] == "Schindler's List"


@pytest.mark.parametrize("reply, message", [
    ("I cannot help with that.", "no {"),
    ('{"divided": ["a"]}', 'no "triples"'),
    ('{"triples": []}', "empty"),
    ('{"triples": [("a", "b")]}', "triple 1 has 2 item(s)"),
    ('{"triples": [("a", "", "c")]}', "empty text"),
    ('{"triples": [("Kismet", "sequel of", "Kismet")]}', "to itself"),
    ('{"triples": "none"}', "must be a list"),
    ("{'triples': [('a', 'b', __import__('os').system('true'))]}", "neither JSON nor"),
])
def test_unusable_replies_say_why(reply, message):
    with pytest.raises(OutputParseError) as info:
        parse_pattern_reply(reply)
    assert message in str(info.value)


def test_never_evaluates_code():
    with pytest.raises(OutputParseError):
        parse_pattern_reply("{'triples': [(open('/etc/passwd').read(), 'r', 't')]}")


def test_pattern_from_triples_shares_nodes_and_types_unknowns():
    pattern = parse_pattern('{"triples": [("UNKNOWN actor 1", "starred", "Flashpoint"), '
                           '("UNKNOWN actor 1", "starred", "UNKNOWN film 1"), '
                           '("UNKNOWN film 1", "UNKNOWN relation 1", "Hong Kong")]}')
    assert [(n.var, n.name, n.types) for n in pattern.nodes] == [
        ("n0", None, ("actor",)), ("n1", "Flashpoint", ()), ("n2", None, ("film",)),
        ("n3", "Hong Kong", ())]
    assert [(e.source, e.target, e.relation) for e in pattern.edges] == [
        ("n0", "n1", "starred"), ("n0", "n2", "starred"), ("n2", "n3", None)]
    assert pattern_triples(pattern)[2] == ("UNKNOWN film 1", "UNKNOWN relation 1", "Hong Kong")
    assert parse_unknown("UNKNOWN 3") == ()
    assert parse_unknown("unknown movie director 2") == ("movie director",)
    assert parse_unknown("Unknown Pleasures") == ("Pleasures",)  # the keyword wins
    with pytest.raises(PatternError):
        pattern_from_triples([("UNKNOWN a 1", "r", "UNKNOWN a 1")])


def test_disconnected_components():
    pattern = pattern_from_triples([("A", "r", "B"), ("C", "r", "D")])
    assert [len(c.nodes) for c in pattern.components()] == [2, 2]


def test_verdicts():
    assert parse_verdict("Graph [1] supports it, so the answer is True.") is True
    assert parse_verdict("As graphs [1][2] say ..., the answer is False.") is False
    with pytest.raises(OutputParseError):
        parse_verdict("I am not sure.")


def test_prompts_follow_the_paper():
    shots = load_examples("metaqa")
    prompt = pattern_prompt("who directed [Kismet]", shots)
    assert prompt.startswith("You need to segment the given query")
    assert "'UNKNOWN artist 1'" in prompt and prompt.rstrip().endswith('"who directed [Kismet]"')
    assert '("Tokyo Godfathers", "directed by", "UNKNOWN director 1"),' in prompt
    answer = answer_prompt("q?", [], shots)
    assert answer.startswith("Please answer the question based on the given evidences")
    assert '"graph [1]": [' in answer  # the examples' evidences
    verify = answer_prompt("s.", [], load_examples("factkg"), verify=True)
    assert "the answer is 'True' or 'False'" in verify


def test_examples_file_errors_are_one_line(tmp_path):
    from kgdb.errors import ConfigError

    bad = tmp_path / "shots.json"
    bad.write_text('{"pattern_examples": [{"query": "q"}]}')
    with pytest.raises(ConfigError, match="pattern example 1 needs 'query' and 'triples'"):
        load_examples(str(bad))
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match="invalid JSON at line 1"):
        load_examples(str(bad))


# ---------------------------------------------------------------------- MetaQA oracle
def _q(text, qtype, answers=("x",)):
    import re

    topic = re.search(r"\[([^\]]+)\]", text).group(1)
    return MetaqaQuestion(1, text, topic, frozenset(answers), qtype)


def test_oracle_patterns_follow_the_question_direction():
    p = oracle_pattern(_q("which movies share the director of [Kismet]",
                          "movie_to_director_to_movie"))
    assert pattern_triples(p) == [("Kismet", "directed by", "UNKNOWN director 1"),
                                  ("UNKNOWN movie 2", "directed by", "UNKNOWN director 1")]
    p = oracle_pattern(_q("[Jane Seymour] acted films directed by whom",
                          "actor_to_movie_to_director"))
    assert pattern_triples(p) == [("UNKNOWN movie 1", "starred", "Jane Seymour"),
                                  ("UNKNOWN movie 1", "directed by", "UNKNOWN director 2")]
    p = oracle_pattern(_q("[Ugly] writer's films' actors' movies' genres",
                          "movie_to_actor_to_movie_to_genre"))
    assert [t[1] for t in pattern_triples(p)] == ["starred", "starred", "genre"]
    assert p.node(answer_var(_q("[Ugly] x", "movie_to_actor_to_movie_to_genre"), p)).types == (
        "genre",)
    # never the graph's own predicate names
    for t in pattern_triples(p):
        assert "_" not in t[1]


def test_answer_matching_handles_split_commas():
    assert answer_matches("Paris, Texas", frozenset({"Paris", "Texas"}))
    assert not answer_matches("Paris, Texas", frozenset({"Paris"}))
    assert answer_matches("Heat", frozenset({"Heat"}))
