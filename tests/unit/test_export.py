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
    entities = [n for n in graph.nodes if n.kind == "entity"]
    assert len(entities) == len(MARKUP) + 1
    assert sum(1 for e in graph.edges if e.relation != "in") == len(MARKUP)
    assert {e.source for e in graph.edges} >= {"entity:e0", "entity:e2"}
    # the passage and its document (a hostile name too)
    assert {(n.kind, n.name) for n in graph.nodes if n.kind != "entity"} == {
        ("passage", "1. c1"), ("document", MARKUP["img onerror"])}


def test_graphml_is_valid_xml_with_every_name() -> None:
    answer = Answer(hostile_evidence(), MARKUP["script tag"])
    root = ET.fromstring(export(answer, "graphml").encode())
    names = {d.text for d in root.iter(f"{NS}data") if d.get("key") == "name"}
    assert names == {xml_text(n) for n in MARKUP.values()} | {"Kismet", "1. c1"}
    relations = {d.text for d in root.iter(f"{NS}data") if d.get("key") == "relation"}
    assert "directed_by" in relations and MARKUP["xml entity"] in relations
    graph = root.find(f"{NS}graph")
    assert graph is not None and len(graph.findall(f"{NS}node")) == len(MARKUP) + 3
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


# ---------------------------------------------------------------------- document evidence
def ppr_evidence() -> Evidence:
    """ppr's evidence shape (kgdb/retrieve/ppr.py): seeds, PageRank paths, a bridge."""
    evidence = Evidence("Who directed Kismet?", "ppr", score_kind="pagerank")
    evidence.passages = [Passage("kismet#0", "kismet", "Kismet is a 1944 film directed by "
                                 "William Dieterle.", 0.4),
                         Passage("dieterle#0", "dieterle", "William Dieterle was a director.",
                                 0.2),
                         Passage("paprika#0", "paprika", "Paprika is a film.", 0.1)]
    evidence.detail["seeds"] = [
        {"kind": "question", "phrase": "kismet", "weight": 1.0, "source": ""},
        {"kind": "sentence", "phrase": "william dieterle", "weight": 0.25,
         "source": "Kismet is a 1944 film directed by William Dieterle."},
        {"kind": "passage", "chunk": "kismet#0", "weight": 0.3},
        {"kind": "passage", "chunk": "not-shown#3", "weight": 0.1}]
    evidence.detail["bridges"] = [{"from": "kismet#0", "phrase": "william dieterle",
                                   "chunk": "dieterle#0", "boost": 0.5}]
    evidence.detail["paths"] = {
        "kismet#0": [["kismet", "kismet#0"], ["william dieterle", "dieterle", "kismet#0"]],
        "dieterle#0": [["william dieterle", "dieterle#0"],
                       ["kismet#0", "william dieterle", "dieterle#0"]]}
    return evidence


def _edges(graph: object) -> set[tuple[str, str, str]]:
    return {(e.source, e.relation, e.target) for e in graph.edges}  # type: ignore[attr-defined]


def test_a_ppr_answer_draws_seeds_phrases_passages_and_documents() -> None:
    graph = evidence_graph(ppr_evidence())
    kinds = {n.key: n.kind for n in graph.nodes}
    assert kinds == {"question:": "question", "passage:kismet#0": "passage",
                     "passage:dieterle#0": "passage", "passage:paprika#0": "passage",
                     "document:kismet": "document", "document:dieterle": "document",
                     "document:paprika": "document", "seed:kismet": "seed",
                     "seed:william dieterle": "seed", "phrase:dieterle": "phrase"}
    assert _edges(graph) == {
        ("question:", "names", "seed:kismet"),
        ("question:", "near sentence names", "seed:william dieterle"),
        ("question:", "similar", "passage:kismet#0"),  # a dense seed that is shown
        ("seed:kismet", "in", "passage:kismet#0"),
        ("seed:william dieterle", "synonym", "phrase:dieterle"),
        ("phrase:dieterle", "in", "passage:kismet#0"),
        ("seed:william dieterle", "in", "passage:dieterle#0"),
        ("passage:kismet#0", "names", "seed:william dieterle"),  # the bridge
        ("seed:william dieterle", "title of", "passage:dieterle#0"),
        ("passage:kismet#0", "in", "document:kismet"),
        ("passage:dieterle#0", "in", "document:dieterle"),
        ("passage:paprika#0", "in", "document:paprika")}
    by_key = {n.key: n for n in graph.nodes}
    assert by_key["passage:kismet#0"].name == "1. kismet#0"
    assert "William Dieterle" in by_key["passage:kismet#0"].detail
    assert by_key["seed:william dieterle"].detail.startswith("named by: Kismet is")
    # the mutual index's mentions are not drawn for ppr: its phrases are
    assert evidence_graph(ppr_evidence(), {"kismet#0": ["Kismet"]}).nodes == graph.nodes


def test_passages_draw_their_documents_and_the_entities_they_mention() -> None:
    evidence = Evidence("Who directed Kismet?", "vector")
    evidence.passages = [Passage("kismet#0", "kismet", "Kismet ... William Dieterle.", 0.8),
                         Passage("kismet#1", "kismet", "Marlene Dietrich starred.", 0.5)]
    mentions = {"kismet#0": ["Kismet", "William Dieterle"],
                "kismet#1": [f"name {i:02d}" for i in range(20)]}
    graph = evidence_graph(evidence, mentions)
    assert ("passage:kismet#0", "in", "document:kismet") in _edges(graph)
    assert ("passage:kismet#0", "mentions", "entity:William Dieterle") in _edges(graph)
    from kgdb.retrieve.export import MENTIONS_DRAWN

    assert sum(1 for e in graph.edges if e.source == "passage:kismet#1") == MENTIONS_DRAWN + 1
    # a fact's chunks mention its ends (document-graph, triple-context), with their ids
    evidence.facts.append(Fact("Kismet", "directed_by", "William Dieterle", "e0", "e1",
                               chunks=("kismet#0",)))
    graph = evidence_graph(evidence, {})
    assert {("passage:kismet#0", "mentions", "entity:e0"),
            ("passage:kismet#0", "mentions", "entity:e1"),
            ("entity:e0", "directed_by", "entity:e1")} <= _edges(graph)
    assert graph.documents and not evidence_graph(hostile_evidence_facts_only()).documents


def hostile_evidence_facts_only() -> Evidence:
    evidence = hostile_evidence()
    evidence.passages = []
    return evidence


def test_a_label_does_not_repeat_the_name() -> None:
    graph = evidence_graph(hostile_evidence())
    labels = {n.id: n.label for n in graph.nodes}
    assert labels["e0"] == "Kismet"  # matched the variable "Kismet": not "Kismet (Kismet)"
    assert labels["e1"] == MARKUP["script tag"] + " (UNKNOWN director 1)"


def test_passage_source_when_the_reader_gave_one() -> None:
    from dataclasses import dataclass

    from kgdb.retrieve.export import passage_source

    @dataclass(frozen=True)
    class Sourced(Passage):
        source: object = None

    assert passage_source(Passage("c", "d", "t")) == ""
    assert passage_source(Sourced("c", "d", "t", source="libtasn1.pdf p. 12")) == \
        "libtasn1.pdf p. 12"
    assert passage_source(Sourced("c", "d", "t", source={"file": "a.pdf", "page": 3})) == \
        "a.pdf p. 3"
    assert passage_source(Sourced("c", "d", "t", source={"file": "b.html",
                                                         "section": "Install"})) == \
        "b.html \u00a7 Install"
    evidence = Evidence("q", "vector", passages=[Sourced("c", "d", "text", 0.5,
                                                         source="a.pdf p. 2")])
    assert evidence_graph(evidence).nodes[0].name == "1. a.pdf p. 2"
    assert "<td>a.pdf p. 2</td>" in export(evidence, "html")


def mermaid_reads(text: str) -> str:
    """What Mermaid makes of a line: mermaidAPI's ``encodeEntities`` (its first two
    replacements cut the last ``;`` of a line matching ``style.*:\\S*#.*;`` or
    ``classDef.*:\\S*#.*;``), then the entity codes ``#NNN;`` decoded."""
    text = re.sub(r"style.*:\S*#.*;", lambda m: m.group(0)[:-1], text)
    text = re.sub(r"classDef.*:\S*#.*;", lambda m: m.group(0)[:-1], text)
    return re.sub(r"#(\d+);", lambda m: chr(int(m.group(1))), text)


@pytest.mark.parametrize("name", ["style: a:<b>", "classDef x:<z>", "a style:#; b",
                                  "Style:<x>", "styles:[1]; classDef:{2};"])
def test_a_mermaid_label_with_style_or_classdef_keeps_every_character(name: str) -> None:
    evidence = Evidence("q", "pattern", facts=[Fact(name, "rel", "Kismet", "e1", "e0")])
    text = export(evidence, "mermaid")
    node = next(line for line in text.splitlines() if line.startswith("    n0["))
    assert mermaid_reads(node) == f'    n0["{name}"]'
    edge = export(Evidence("q", "pattern", facts=[Fact("a", name, "b")]), "mermaid")
    line = next(x for x in edge.splitlines() if "-->" in x)
    assert mermaid_reads(line) == f'    n0 -->|"{name}"| n1'


def test_mermaid_of_a_ppr_answer_draws_it() -> None:
    text = export(ppr_evidence(), "mermaid")
    lines = text.splitlines()
    assert lines[0] == "flowchart LR" and len(lines) > 20
    assert any(x.startswith("    %% legend: cylinder, document") for x in lines)
    assert re.search(r'^    n\d+\[\["1. kismet#35;0"\]\]$', text, re.M)
    assert re.search(r'^    n\d+\{"Who directed Kismet\?"\}$', mermaid_reads(text), re.M)
    assert re.search(r'^    n\d+\(\["william dieterle"\]\)$', mermaid_reads(text), re.M)
    assert re.search(r'^    n\d+\[\("kismet"\)\]$', mermaid_reads(text), re.M)
    assert re.search(r"^    classDef passage fill:#\w+,stroke:#\w+$", text, re.M)
    assert re.search(r"^    class n\d+(,n\d+){2} passage$", text, re.M)
    for line in lines[1:]:  # nothing for Mermaid to cut (see mermaid_reads)
        assert not re.search(r"(style|classDef).*:\S*#.*;", line), line


def test_graphml_keeps_a_carriage_return() -> None:
    evidence = Evidence("q\r\nr", "pattern", facts=[Fact("a\rb", "r\r", "c\r\n")])
    text = export(evidence, "graphml")
    assert "\r" not in text and "&#13;" in text
    root = ET.fromstring(text.encode())
    names = {d.text for d in root.iter(f"{NS}data") if d.get("key") == "name"}
    assert names == {"a\rb", "c\r\n"}
    assert {d.text for d in root.iter(f"{NS}data") if d.get("key") == "relation"} == {"r\r"}
    assert [d.text for d in root.iter(f"{NS}data") if d.get("key") == "question"] == ["q\r\nr"]


def test_graphml_of_a_ppr_answer_carries_the_kinds() -> None:
    root = ET.fromstring(export(ppr_evidence(), "graphml").encode())
    kinds = [str(d.text) for d in root.iter(f"{NS}data") if d.get("key") == "kind"]
    assert sorted(set(kinds)) == ["document", "passage", "phrase", "question", "seed"]
    assert len(root.findall(f"{NS}graph/{NS}edge")) == len(_edges(evidence_graph(
        ppr_evidence())))


def test_html_of_a_ppr_answer_draws_it_in_columns_with_a_legend() -> None:
    from kgdb.retrieve.export import columns

    graph = evidence_graph(ppr_evidence())
    pos, width, height = columns(graph)
    xs = {n.kind: pos[n.key][0] for n in graph.nodes}
    assert xs["question"] < xs["seed"] < xs["phrase"] < xs["passage"] < xs["document"]
    assert [pos[f"passage:{p}"][1] for p in ("kismet#0", "dieterle#0", "paprika#0")] == \
        sorted(pos[f"passage:{p}"][1] for p in ("kismet#0", "dieterle#0", "paprika#0"))
    assert len(set(pos.values())) == len(pos) and width > 0 and height > 0
    page = export(ppr_evidence(), "html")
    assert page.count('<g class="legend">') == 5 and "seed phrase: the question" in page
    assert page.count('<g class="node passage">') == 3
