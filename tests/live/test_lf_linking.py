"""Linking on the embedded FalkorDB: names ignoring case, relation spelling, and type hints
through the EntityType catalog widened by isA / contains."""

from __future__ import annotations

from typing import Any

from kgdb.solve.lf_compile import store_linker
from kgdb.solve.lf_run import Executor


def test_types_names_and_relations_are_linked(store: Any) -> None:
    store.run("""
        CREATE (:EntityType {name: 'Organization'}), (:EntityType {name: 'Political Party'}),
               (:EntityType {name: 'Political Faction'}), (:EntityType {name: 'Person'})
        WITH 1 AS one
        MATCH (p:EntityType {name: 'Political Party'}), (f:EntityType {name: 'Political Faction'}),
              (o:EntityType {name: 'Organization'})
        CREATE (p)-[:contains]->(f), (p)-[:isA]->(o)
        WITH 1 AS one
        CREATE (a:Entity:Person {id: 'p1', name: 'Ada Lovelace'}),
               (x:Entity:`Political Faction` {id: 'f1', name: 'The Whigs'}),
               (y:Entity:Person {id: 'p2', name: 'Not A Party'}),
               (a)-[:memberOf]->(x), (a)-[:memberOf]->(y)
    """, write=True)
    plan = ("Retrieval(s=s1:Person[ada lovelace], p=p1:membreOf, o=o1:`Political Party`)\n"
            "Output(o1)")
    result = Executor(store, linker=store_linker(store)).run_text(plan)
    # 'ada lovelace' found ignoring case, 'membreOf' by spelling, and Political Party
    # reaches Political Faction through contains; the Person y is not a party.
    assert [v.text for v in result.outputs["o1"]] == ["The Whigs"]
    text = result.trace[0].cypher or ""
    # only labels that some entity carries become conditions
    assert "AND (n1:`Political Faction`)" in text and "(n0:`Person`)" in text
    assert result.compiled.linked
    assert result.compiled.statements()[0].linked.node("o1").labels == ("Political Faction",)
    # without a type catalog entry the hint is ignored, with a note
    result = Executor(store, linker=store_linker(store)).run_text(
        "Retrieval(s=s1:Human[Ada Lovelace], p=p1:memberOf, o=o1)")
    assert {v.text for v in result.outputs["o1"]} == {"The Whigs", "Not A Party"}
    assert any("'Human' labels no entity in this graph" in n for n in result.compiled.notes)
