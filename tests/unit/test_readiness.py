"""What the solvers declare they need, the evidence's text rendering, progress lines for a
pipe, and the Python API's "looks like a path" rule: no database needed."""

from __future__ import annotations

import io

import pytest

from kgdb.api import looks_like_path
from kgdb.documents.indexing import BUILDERS, needed_indexes
from kgdb.progress import LineProgress, progress_bar
from kgdb.retrieve.evidence import Evidence, Passage, RankedDocument, cut_text
from kgdb.retrieve.readiness import INDEXES, IndexStatus, SolverReadiness
from kgdb.retrieve.registry import SOLVERS
from kgdb.statement import Statement


def test_every_declared_index_exists_and_is_built_or_loaded() -> None:
    for solver in SOLVERS.values():
        assert set(solver.indexes) <= set(INDEXES), solver.name
    for name, kind in INDEXES.items():
        assert (name in BUILDERS) == kind.built_by_index, name
        assert kind.command.startswith("kgdb index " if kind.built_by_index else "kgdb load ")
        assert set(kind.needs) <= set(INDEXES)
    assert needed_indexes() == ["knn", "triples", "ppr", "fulltext"]
    assert SOLVERS["ppr"].indexes == ("chunks", "ppr")
    assert SOLVERS["document-graph"].indexes == ("chunks", "knn")
    assert SOLVERS["triple-context"].indexes == ("chunks", "triples")


def test_the_message_names_the_first_missing_index() -> None:
    ready = IndexStatus("chunks", "ready", "3 chunks", "kgdb load documents PATH")
    missing = IndexStatus("knn", "missing", "not built", "kgdb index knn")
    stale = IndexStatus("knn", "stale", "1 of 4 documents new", "kgdb index knn")
    r = SolverReadiness("document-graph", [ready, missing])
    assert r.state == "missing"
    assert r.message() == ("the document-graph solver needs the document layer (not built): "
                           "run kgdb index knn, or kgdb index for every solver")
    assert SolverReadiness("document-graph", [ready, stale]).state == "stale"
    assert SolverReadiness("document-graph", [ready, stale]).message() == ""
    loaded = SolverReadiness("vector", [IndexStatus("chunks", "missing", "none loaded",
                                                    "kgdb load documents PATH")])
    assert loaded.message() == ("the vector solver needs documents (none loaded): run kgdb "
                                "load documents PATH")


LONG = ("Acme Corporation was founded in 1947 by Wile Coyote. " * 8 +
        "It never made a profit (so its books say).  The end")


def test_cut_text_stops_at_a_sentence_end() -> None:
    assert cut_text("Short  text.\n\nTwo lines.") == "Short text. Two lines."
    cut = cut_text(LONG, 200)
    assert cut.endswith("Wile Coyote. \u2026") and len(cut) <= 202
    assert cut_text(LONG, 1000) == " ".join(LONG.split())
    words = "word " * 100
    assert cut_text(words, 50).endswith("word \u2026")  # no sentence end: a whole word
    quoted = 'He said "it works." Then he left, and the rest is a long story ' + "x" * 80
    assert cut_text(quoted, 60) == 'He said "it works." \u2026'


def test_render_fits_80_columns_and_hides_cypher_unless_asked() -> None:
    evidence = Evidence("q", "vector", passages=[
        Passage("acme#0", "acme", LONG, 0.81234, "acme.pdf p. 3"),
        Passage("zenith#0", "zenith", "Zenith Radio is a maker of radios.", None)],
        documents=[RankedDocument("acme", 0.81), RankedDocument("zenith", None)],
        statements=[Statement("MATCH (c:Chunk) RETURN c", {"vector": [0.5] * 384})])
    lines = evidence.render()
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[0] == "passages (2):"
    assert lines[1] == " 1. 0.8123  acme \u00b7 acme.pdf p. 3"
    assert lines[2].startswith("      Acme Corporation was founded")
    assert lines[lines.index(" 2. zenith") + 1] == "      Zenith Radio is a maker of radios."
    assert "documents: acme (0.810), zenith" in lines
    assert not any("Cypher" in line for line in lines)
    shown = evidence.render(cypher=True)
    assert "Cypher that ran:" in shown and "MATCH (c:Chunk) RETURN c" in shown
    assert evidence.to_json()["passages"][0]["text"] == LONG  # whole
    assert evidence.to_json()["passages"][0]["source"] == "acme.pdf p. 3"


def test_progress_on_a_pipe_is_lines() -> None:
    out = io.StringIO()
    bar = progress_bar(total=10, unit="docs", desc="documents", file=out)
    assert isinstance(bar, LineProgress)
    bar.interval_s = 0.0
    for _ in range(3):
        bar.update(1)
    bar.set_postfix(chunks=7)
    bar.update(7)
    bar.close()
    bar.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert len(lines) == 5  # four updates, one closing line
    assert lines[0].startswith("documents: 1/10 (10%), ") and "ETA" in lines[0]
    assert lines[-1].startswith("documents: 10/10 (100%), ") and lines[-1].endswith("chunks=7")
    quiet = io.StringIO()
    silent = progress_bar(total=5, desc="x", file=quiet, disable=True)
    silent.update(5)
    silent.close()
    assert quiet.getvalue() == ""
    counted = io.StringIO()
    assert list(progress_bar(range(3), desc="q", file=counted, interval_s=0.0)) == [0, 1, 2]
    assert counted.getvalue().splitlines()[-1].startswith("q: 3/3 (100%)")


@pytest.mark.parametrize(("source", "what", "expected"), [
    ("dsl/examples/one_hop_director.lf", "logical form", True),
    ("one_hop_director.lf", "logical form", True),
    ("plans/director", "logical form", True),
    ("Retrieval(s=s1:Movie[Kismet], p=p1:release_year, o=o1)", "logical form", False),
    ("Retrieval(s=s1:Movie[Kismet], p=p1:release_year, o=o1)\nOutput(o1)\n", "logical form",
     False),
    ("grades.rules", "rule file", True),
    ("Define (Disease/'Hypertension') { SystolicPressure >= 140 }", "rule file", False),
    ("", "logical form", False),
])
def test_looks_like_path(source: str, what: str, expected: bool) -> None:
    assert looks_like_path(source, what) is expected
