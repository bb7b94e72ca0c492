"""Hybrid retrieval (KAG Algorithm 2): when the graph has no such fact, the executor reads the
chunks that support the step's entities and the nearest chunks, and the LLM answers from them.
Also the LLM-decided Deduce ops and free-text Math targets."""

from __future__ import annotations

from typing import Any

import pytest

from kgdb.llm.client import ChatClient
from kgdb.solve.lf_compile import store_linker
from kgdb.solve.lf_math import MathError
from kgdb.solve.lf_run import Executor

CHUNKS = {
    "c1": "Antonio Lucio Vivaldi was an Italian composer and violinist, born in Venice.",
    "c2": "The Black Death reached Venice in 1348; plague occurred in Venice 22 times "
          "between 1361 and 1528.",
    "c3": "Concerto in C major Op. 3 No. 6 is a violin concerto by Antonio Vivaldi.",
}

PLAN = """\
Step1: Who composed Concerto in C Major Op 3 6?
Action1: Retrieval(s=s1:Work[Concerto in C Major Op 3 6], p=p1:composer, o=o1:Person)
Step2: Where was this composer born?
Action2: Retrieval(s=o1, p=p2:brithPlace, o=o2:Place)
Action3: Output(o2)
"""


@pytest.fixture
def graph(store: Any, embedder: Any) -> Any:
    d = store.dialect
    for op in d.create_vector_index("Chunk", "embedding", embedder.dimension):
        store.execute(op)
    vectors = embedder.embed(list(CHUNKS.values()))
    rows = [{"id": k, "text": t, "vec": [float(x) for x in v]}
            for (k, t), v in zip(CHUNKS.items(), vectors, strict=True)]
    store.run(f"UNWIND $rows AS row CREATE (c:Chunk {{id: row.id, text: row.text}}) "
              f"SET c.embedding = {d.vector_value('row.vec')}", {"rows": rows}, write=True)
    store.run("CREATE (w:Entity {id: 'Concerto in C Major Op 3 6', name: 'Concerto in C Major Op 3 6'})"
              "-[:composer]->(p:Entity {id: 'Antonio Vivaldi', name: 'Antonio Vivaldi'}) "
              "WITH p MATCH (c:Chunk) WHERE c.id IN ['c1', 'c3'] "
              "CREATE (p)-[:supporting_chunks]->(c)", write=True)
    return store


def test_graph_first_then_chunks(graph: Any, embedder: Any, scripted_llm: Any) -> None:
    scripted_llm.push("Venice")
    executor = Executor(graph, linker=store_linker(graph), embedder=embedder, llm=ChatClient())
    result = executor.run_text(PLAN)
    joint, first, second = result.trace[0], result.trace[1], result.trace[2]
    # The joint pattern found nothing, so the steps ran one by one: step 1 came from the
    # graph; step 2 found nothing there and read the chunks.
    assert joint.rows == 0 and joint.steps == [0, 1]
    assert first.where == "cypher" and first.rows == 1 and first.steps == [0]
    assert second.rows == 0 and second.where == "cypher+chunks"
    chunk_ids = [c["id"] for c in second.result["chunks"]]
    assert {"c1", "c3"} <= set(chunk_ids)  # through supporting_chunks of Antonio Vivaldi
    assert "c2" in chunk_ids  # and through the chunk vector index
    assert [v.text for v in result.outputs["o2"]] == ["Venice"]
    prompt = scripted_llm.requests[0]["messages"][1]["content"]
    assert "Where was this composer born?" in prompt and "born in Venice" in prompt


def test_without_llm_the_chunks_are_evidence_only(graph: Any, embedder: Any) -> None:
    result = Executor(graph, linker=store_linker(graph), embedder=embedder).run_text(PLAN)
    assert result.outputs["o2"] == []
    assert result.trace[2].result["chunks"]


def test_deduce_entailment_and_free_text_math_by_llm(graph: Any, scripted_llm: Any) -> None:
    scripted_llm.push("Yes.", "one composer")
    plan = """\
Retrieval(s=s1[Concerto in C Major Op 3 6], p=p1:composer, o=o1)
Deduce(left=o1, right=an Italian composer, op=entailment)->ok
Math(content=[o1], target=describe the composers in words)->m
Deduce(left=o1, right=o1, op=equal)->same
Output(ok, m, same)
"""
    result = Executor(graph, llm=ChatClient()).run_text(plan)
    assert [v.text for v in result.outputs["ok"]] == ["true"]
    assert [v.text for v in result.outputs["m"]] == ["one composer"]
    assert [v.text for v in result.outputs["same"]] == ["true"]
    assert len(scripted_llm.requests) == 2  # equal was decided without the LLM


def test_llm_ops_without_llm_fail_clearly(graph: Any) -> None:
    plan = ("Retrieval(s=s1[Concerto in C Major Op 3 6], p=p1:composer, o=o1)\n"
            "Deduce(left=o1, right=an Italian composer, op=entailment)")
    with pytest.raises(Exception) as info:
        Executor(graph).run_text(plan, "d.lf")
    assert "needs an LLM" in str(info.value) and "d.lf:2:1" in str(info.value)
    assert not isinstance(info.value, MathError)
