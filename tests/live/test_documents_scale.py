"""Document loading stays linear in the graph's size: what a batch runs does not depend on
how much the graph already holds (counted, not timed), and ``kgdb bench documents`` reports
each part of a load against the graph's size before it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kgdb.cli import cli
from kgdb.cypher import documents as cy
from kgdb.documents.pipeline import DocumentOptions, load_documents

pytestmark = pytest.mark.live


def corpus(path: Path, start: int, count: int) -> Path:
    """``count`` documents, each naming the titles of two earlier ones (so the gazetteer links
    them and the mutual index grows with the graph)."""
    records = [{"title": f"Person {i}",
                "text": f"Person {i} was born in Town {i % 7}. They worked with Person "
                        f"{max(i - 1, 0)} and Person {i // 2}."} for i in range(start, start + count)]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_statements_per_batch_do_not_grow_with_the_graph(store: Any, embedder: Any,
                                                         tmp_path: Path) -> None:
    names = cy.entity_names(store.dialect).text
    seen: list[str] = []
    watched = store.view(observer=lambda s: seen.append(s.text))
    options = DocumentOptions(extract="gazetteer", title_entity=True, mention_facts=True,
                              batch=8)
    reports = []
    for part in range(3):
        seen.clear()
        report = load_documents(watched, embedder, [corpus(tmp_path / f"{part}.json",
                                                           part * 24, 24)],
                                options=options, progress=False)
        assert report.written == 24 and report.batches == 3
        assert seen.count(names) == 1  # the gazetteer is read once per load, not per batch
        reports.append(report)
    # every batch runs the same statements whether the graph holds 0 or 48 documents
    assert {r.statements for r in reports} == {3 * reports[0].most_statements_per_batch}
    assert len({r.most_statements_per_batch for r in reports}) == 1
    assert store.run("MATCH (:Entity)-[m:supporting_chunks]->(:Chunk) RETURN count(m)"
                     ).value() > 72  # the titles' own chunks and the earlier ones named


def test_bench_documents_reports_each_part(cli_store: Any, tmp_path: Path) -> None:
    path = corpus(tmp_path / "c.json", 0, 30)
    result = CliRunner().invoke(cli, ["bench", "documents", str(path), "--parts", "3",
                                      "--batch", "4", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["documents"] == 30 and out["extract"] == "gazetteer" and out["title_entity"]
    assert [p["documents_before"] for p in out["parts"]] == [0, 10, 20]
    assert all(p["batches"] == 3 and p["documents_per_s"] > 0 for p in out["parts"])
    assert len({p["most_statements_per_batch"] for p in out["parts"]}) == 1
    # the benchmark's graph is gone (embedded) or it refused a graph with data (Neo4j)
    assert cli_store.run("MATCH (n:Document) RETURN count(n)").value() in (0, 30)
