"""Evidence exports (kgdb/retrieve/export.py) from the one evidence shape, with the hostile
markup corpus as entity names, relations, passages and the answer: GraphML parses as XML and
carries every name back, Mermaid labels never end early, the HTML holds no script, escapes
every text and loads nothing from elsewhere."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from kgdb.retrieve.evidence import Evidence, Fact, Group, Passage
from kgdb.retrieve.export import FORMATS, evidence_graph, export, mermaid_label, xml_text
from kgdb.retrieve.solver import Answer
from kgdb.statement import Statement
from tests.support.hostile import MARKUP

NS = "{http://graphml.graphdrawing.org/xmlns}"


def hostile_evidence() -> Evidence:
    names = list(MARKUP.values())
    evidence = Evidence("who directed <b>Kismet</b>?", "pattern", score_kind="gsd",
                        statements=[Statement("MATCH (n) WHERE n.name = $name RETURN n",
                                              {"name": names[0]})])
    evidence.groups.append(Group(1, "subgraph", 0.25, (("UNKNOWN director 1", "e1", names[0]),
                                                      ("Kismet", "e0", "Kismet"))))
    evidence.facts.append(Fact("Kismet", "directed_by", names[0], "e0", "e1", score=0.25,
                               group=1))
    for i, name in enumerate(names[1:], 2):
        evidence.facts.append(Fact(name, names[(i + 1) % len(names)], "Kismet", f"e{i}", "e0",
                                   score=0.5))
    evidence.passages.append(Passage("c1", names[1], names[2] + " " + names[0], 0.9))
    evidence.timings_ms["embed"] = 1.5
    return evidence


def test_graph_marks_pattern_variables_and_groups() -> None:
    graph = evidence_graph(hostile_evidence())
    by_id = {n.id: n for n in graph.nodes}
    assert by_id["e1"].variables == ["UNKNOWN director 1"] and by_id["e1"].groups == [1]
    assert by_id["e0"].variables == ["Kismet"]
    assert len(graph.nodes) == len(MARKUP) + 1 and len(graph.edges) == len(MARKUP)
    assert {e.source for e in graph.edges} >= {"e0", "e2"}


def test_graphml_is_valid_xml_with_every_name() -> None:
    answer = Answer(hostile_evidence(), MARKUP["script tag"])
    root = ET.fromstring(export(answer, "graphml").encode())
    names = {d.text for d in root.iter(f"{NS}data") if d.get("key") == "name"}
    assert names == {xml_text(n) for n in MARKUP.values()} | {"Kismet"}
    relations = {d.text for d in root.iter(f"{NS}data") if d.get("key") == "relation"}
    assert "directed_by" in relations and MARKUP["xml entity"] in relations
    graph = root.find(f"{NS}graph")
    assert graph is not None and len(graph.findall(f"{NS}node")) == len(MARKUP) + 1
    answer_data = [d.text for d in graph.findall(f"{NS}data") if d.get("key") == "answer"]
    assert answer_data == [MARKUP["script tag"]]
    # characters XML cannot carry (the text contract lets U+FFFE through) become U+FFFD
    odd = hostile_evidence()
    odd.facts.append(Fact("a\ufffeb", "r", "c"))
    ET.fromstring(export(odd, "graphml").encode())


def test_mermaid_labels_cannot_break_out() -> None:
    text = export(hostile_evidence(), "mermaid")
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    for line in lines[1:]:
        for label in re.findall(r'"([^"]*)"', line):
            assert not set(label) & set('<>|[]{}"`\u202e'), line
        assert line.count('"') in (0, 2), line
    assert mermaid_label('a"b') == '"a#34;b"'
    assert re.search(r"^    class n0,n1 variable$", text, re.M)  # e0 and e1 matched variables


def test_html_is_self_contained_and_shows_hostile_text_as_text() -> None:
    page = export(Answer(hostile_evidence(), MARKUP["img onerror"]), "html")

    class Tags(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tags: list[tuple[str, dict[str, str | None]]] = []
            self.text: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.tags.append((tag, dict(attrs)))

        def handle_data(self, data: str) -> None:
            self.text.append(data)

    parser = Tags()
    parser.feed(page)
    tags = {t for t, _ in parser.tags}
    assert "script" not in tags and "img" not in tags and "iframe" not in tags
    assert all(not k.startswith("on") for _, attrs in parser.tags for k in attrs)
    assert all(not str(v).lower().startswith("javascript:") for _, attrs in parser.tags
               for v in attrs.values())
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing from elsewhere
    text = "".join(parser.text)
    for value in MARKUP.values():
        assert value[:30] in text, value  # shown as text
    assert "<svg" in page and "Content-Security-Policy" in page
    assert "MATCH (n) WHERE n.name = $name" in text and "UNKNOWN director 1" in text


@pytest.mark.parametrize("format", FORMATS)
def test_every_format_of_an_empty_evidence(format: str) -> None:
    out = export(Evidence("q", "vector"), format)
    assert out
    if format == "json":
        assert json.loads(out)["facts"] == [] and json.loads(out)["llm"]["requests"] == 0


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        export(Evidence("q", "vector"), "pdf")
