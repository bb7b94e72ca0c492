"""The document pipeline's pure parts: readers, chunking, the gazetteer's matching rules and
semantic-type hierarchy (no database)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgdb.documents.align import broader_concepts, normalise
from kgdb.documents.chunking import chunk_document
from kgdb.documents.gazetteer import Gazetteer
from kgdb.documents.model import Document, Section
from kgdb.documents.readers import paragraphs, read_documents
from kgdb.errors import LoadError


def test_markdown_structure() -> None:
    title, sections = paragraphs("# T\n\nIntro.\n\n## A\n\nOne\ntwo.\n\n### B\n\nDeep.\n\n"
                                 "## C\n\n```\n# not a heading\n\ncode\n```\n", markdown=True)
    assert title == "T"
    assert [(s.headings, s.text) for s in sections] == [
        (("T",), "Intro."), (("T", "A"), "One\ntwo."), (("T", "A", "B"), "Deep."),
        (("T", "C"), "```\n# not a heading\n\ncode\n```")]
    _, plain = paragraphs("# not a heading in .txt\n\nx", markdown=False)
    assert [s.text for s in plain] == ["# not a heading in .txt", "x"]


def test_chunks_keep_structure_size_and_order() -> None:
    long = " ".join(f"Sentence number {i} is here." for i in range(40))
    doc = Document("d", "T", (Section("a" * 50, ("T",)), Section("b" * 40, ("T",)),
                              Section("c" * 30, ("T", "X")), Section(long, ("T", "X"))), "src")
    chunks = chunk_document(doc, size=120)
    assert [c.id for c in chunks][:3] == ["d#0000#000", "d#0002#000", "d#0003#000"]
    assert chunks[0].text == "a" * 50 + "\n\n" + "b" * 40  # same heading path, within size
    assert all(len(c.text) <= 120 for c in chunks)
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert [c.id for c in chunks] == sorted(c.id for c in chunks)  # adjacent ids sort adjacently
    assert " ".join(c.text for c in chunks[2:]) == long
    with pytest.raises(LoadError, match="chunk size"):
        chunk_document(doc, size=10)


def test_corpus_identity_and_collisions(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text(
        '{"title": "A", "text": "one"}\n{"id": 7, "title": "B", "text": "x"}\n'
        '{"title": "A", "text": "two"}\n', encoding="utf-8")
    docs = read_documents([tmp_path / "c.jsonl"])
    assert [(d.id, [s.text for s in d.sections]) for d in docs] == [("A", ["one", "two"]),
                                                                    ("7", ["x"])]
    (tmp_path / "A.md").write_text("# A\n\ntext", encoding="utf-8")
    with pytest.raises(LoadError, match="document id 'A' is also the id of"):
        read_documents([tmp_path / "c.jsonl", tmp_path / "A.md"])
    (tmp_path / "bad.txt").write_bytes(b"ok\n\xff\n")
    with pytest.raises(LoadError, match=r"bad.txt:2: not UTF-8"):
        read_documents([tmp_path / "bad.txt"])


def test_gazetteer_rules() -> None:
    g = Gazetteer([("e1", "Inherit the Wind", []), ("e2", "Wind", []), ("e3", "Paris", ["Lutetia"]),
                   ("e4", "Paris", []), ("e5", "It", [])])
    found = [(i, text) for i, _, s, e in
             g.find("Inherit the Wind, Windows and Wind. Lutetia is paris; It is Paris.")
             for text in ["Inherit the Wind, Windows and Wind. Lutetia is paris; It is "
                          "Paris."[s:e]]]
    assert found == [("e1", "Inherit the Wind"), ("e2", "Wind"), ("e3", "Lutetia"),
                     ("e3", "Paris"), ("e4", "Paris")]
    assert g.ambiguous == 1  # Paris names two entities
    folded = Gazetteer([("e3", "Paris", [])], ignore_case=True)
    assert [i for i, *_ in folded.find("paris, PARIS")] == ["e3", "e3"]


def test_semantic_types_and_names() -> None:
    assert normalise("  The  Wind!  ") == "the wind"
    assert broader_concepts(["director", "film director", "silent film director", "actor"]) == [
        ("SemanticType/film director", "SemanticType/director"),
        ("SemanticType/silent film director", "SemanticType/film director")]
