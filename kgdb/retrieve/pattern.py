"""SimGRAG (Cai et al., "SimGRAG: Leveraging Similar Subgraphs for Knowledge Graphs Driven
Retrieval-Augmented Generation"), the ``pattern`` solver: the question as a pattern graph of
triples (written by the LLM, or given), its top-k isomorphic subgraphs by Graph Semantic
Distance (:mod:`kgdb.retrieve.pattern_search`), and the answer written from them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kgdb.dsl.pattern import pattern_from_triples, pattern_triples
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.llm import ChatClient
from kgdb.measure import Timings
from kgdb.retrieve.evidence import Evidence, Fact, Group
from kgdb.retrieve.pattern_llm import (
    Dataset,
    answer_messages,
    generate_answer,
    load_examples,
    query_to_pattern,
)
from kgdb.retrieve.pattern_search import Distinctness, EngineName, Retrieval, search
from kgdb.retrieve.solver import Answer, LlmRequiredError, Solver, SolverOptions

Triple = tuple[str, str, str]


class PatternOptions(SolverOptions):
    solver: Literal["pattern"] = "pattern"
    k: int = Field(3, ge=1, le=1000, description=(
        "pattern: subgraphs returned (top-k by Graph Semantic Distance)"))
    kn: int = Field(16, ge=1, le=100000, description="pattern: candidate entities per known node")
    kr: int = Field(16, ge=1, le=100000, description=(
        "pattern: candidate relation types per known relation"))
    kt: int = Field(16, ge=1, le=100000, description=(
        "pattern: candidate entity types per typed unknown node"))
    engine: EngineName = Field("cypher", description=(
        "pattern: cypher: one generated statement per component (on a Neo4j with kgdb's "
        "plugin: kgdb.simgrag.match, or the whole retrieval in one kgdb.simgrag.search call); "
        "optimized: the paper's pruned greedy search, "
        "one Cypher step per expansion; native: the plugin's procedure, required"))
    distinct: Distinctness = Field("all", description=(
        "pattern: all: isomorphic subgraphs (the paper); known: unknown nodes that are not "
        "neighbours may be the same entity"))
    examples: Dataset = Field("metaqa", description=(
        "pattern: few-shot examples for the LLM's pattern and answer"))
    verify: bool = Field(False, description=(
        "pattern: fact verification: judge the question as a statement, True or False"))
    pattern: list[Triple] | None = Field(None, max_length=64, description=(
        "pattern: the pattern graph as (head, relation, tail) triples, unknowns as "
        "'UNKNOWN <type> <n>'; without it an LLM writes one"))


class PatternSolver(Solver[PatternOptions]):
    """SimGRAG: pattern graph, top-k subgraphs by GSD, answer citing them."""

    name = "pattern"
    aliases = ("simgrag",)
    summary = ("SimGRAG: the question as a pattern graph, its top-k subgraphs by Graph "
               "Semantic Distance")
    options = PatternOptions
    indexes = ("entities",)

    def llm_needed(self, options: PatternOptions, *, answer: bool) -> str | None:
        if answer:
            return "the answer is written by an LLM"
        if options.pattern is None:
            return ("an LLM writes the pattern graph: give one (--pattern 'head|relation|tail', "
                    "or options.pattern)")
        return None

    def retrieve(self, store: GraphStore, embedder: Embedder, question: str,
                 options: PatternOptions, llm: ChatClient | None = None) -> Evidence:
        timings = Timings()
        if options.pattern is not None:
            pattern = pattern_from_triples([(h, r, t) for h, r, t in options.pattern])
        elif llm is None:
            raise LlmRequiredError("SimGRAG retrieval needs a pattern graph: give one, or "
                                   "configure an LLM (OPENAI_BASE_URL) to write it")
        else:
            with timings.phase("pattern"):
                pattern = query_to_pattern(llm, question, load_examples(options.examples))
        result = search(store, embedder, pattern, k=options.k, k_nodes=options.kn,
                        k_relations=options.kr, k_types=options.kt, engine=options.engine,
                        distinct=options.distinct)
        timings.update(result.timings_ms)
        return evidence_of(question, self.name, result, timings)

    def answer(self, llm: ChatClient, evidence: Evidence, options: PatternOptions) -> Answer:
        generated = generate_answer(llm, evidence.question, _graphs(evidence),
                                    load_examples(options.examples), verify=options.verify)
        return Answer(evidence, generated.text, generated.verdict)

    def answer_messages(self, evidence: Evidence, options: PatternOptions
                        ) -> list[dict[str, str]] | None:
        if options.verify:  # a verdict is parsed from the reply: it arrives whole
            return None
        return answer_messages(evidence.question, _graphs(evidence),
                               load_examples(options.examples))


def _graphs(evidence: Evidence) -> list[list[tuple[str, str, str]]]:
    return [[(f.head, f.relation, f.tail) for f in facts] for facts in evidence.group_facts()]


def evidence_of(question: str, solver: str, result: Retrieval, timings: Timings) -> Evidence:
    """A SimGRAG retrieval as evidence: one group per subgraph (its GSD, the entity each
    pattern node matched, the node named as the pattern wrote it: ``UNKNOWN director 1``),
    its facts with names and ids."""
    evidence = Evidence(question, solver, score_kind="gsd", statements=result.statements,
                        timings_ms=timings)
    written = {n.var: n.display for n in result.pattern.nodes}
    for rank, sub in enumerate(result.subgraphs, 1):
        evidence.groups.append(Group(rank, "subgraph", sub.gsd, tuple(
            (written.get(v, v), i, n)
            for v, i, n in zip(sub.pattern_vars, sub.node_ids, sub.node_names, strict=True))))
        evidence.facts += [Fact(sub.name_of(h), r, sub.name_of(t), h, t, score=sub.gsd,
                                group=rank) for h, r, t in sub.triples]
    evidence.detail.update({"pattern": [list(t) for t in pattern_triples(result.pattern)],
                            "engine": result.engine,
                            "subgraphs": [s.to_json() for s in result.subgraphs]})
    return evidence
