"""Linking by meaning through the database's own vector indexes (kgdb.link): a plan that
misspells a title or names a relation in its own words still finds the graph's names. The
graph is loaded with kgdb's triple loader, so indexes and RelationType nodes are the real ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgdb.load.triples import load_triples
from kgdb.solve.lf_compile import store_linker
from kgdb.solve.lf_run import Executor
from tests.conftest import shared_data
from tests.support.metaqa import read_kb

MOVIES = ("Kismet", "Forrest Gump", "Juarez", "Cast Away")


def test_misspelt_names_and_paraphrased_relations(store: Any, embedder: Any,
                                                  tmp_path: Path) -> None:
    triples = [t for t in read_kb(shared_data("metaqa", "kb.txt")) if t[0] in MOVIES]
    kb = tmp_path / "kb.txt"
    kb.write_text("".join(f"{s}|{p}|{o}\n" for s, p, o in triples), encoding="utf-8")
    load_triples(store, embedder, kb, sep="|", progress=False)
    plan = """\
Step1: Who directed Kismat?
Action1: Retrieval(s=s1:Movie[Kismat], p=p1:film director, o=o1:Person)
Step2: What else did they direct?
Action2: Retrieval(s=s2:Movie, p=p2:who directed it, o=o1)
Action3: Output(o1, s2)
"""
    result = Executor(store, linker=store_linker(store, embedder), embedder=embedder).run_text(plan)
    assert result.compiled.linked
    linked = result.compiled.statements()[0].linked
    assert [c.id for c in linked.node("s1").candidates or ()] == ["Kismet"]
    assert linked.node("s1").candidates[0].distance > 0  # by meaning, not by name
    assert linked.edge("p1").type_names == ("directed_by",)
    assert linked.edge("p2").type_names == ("directed_by",)
    assert [v.text for v in result.outputs["o1"]] == ["William Dieterle"]
    expected = {s for s, p, o in triples if p == "directed_by" and o == "William Dieterle"
                and s != "Kismet"}
    assert {v.text for v in result.outputs["s2"]} == expected == {"Juarez"}
