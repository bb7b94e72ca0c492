"""What the knowledge service does, once, for every front end of it: the HTTP API
(:mod:`kgdb.serve.app`) and the MCP tools (:mod:`kgdb.serve.mcp`). Each operation takes the
tenant's store (a request's view of it) and plain values, and returns JSON-ready values."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

from kgdb import errors
from kgdb.config import Settings
from kgdb.dsl.rules_ast import RuleSet
from kgdb.engine.base import GraphStore
from kgdb.retrieve.ask import llm_needed
from kgdb.retrieve.evidence import PASSAGE, Evidence
from kgdb.retrieve.solver import Answer, SolverOptions
from kgdb.serve.tenants import LockedEmbedder
from kgdb.serve.tokens import TokenFile

MAX_TEXTS = 256
MAX_TEXT = 64_000


@dataclass
class ServeConfig:
    """How the service runs (``kgdb serve`` options)."""

    settings: Settings
    tokens: TokenFile
    allow_writes: bool = False
    timeout_s: float = 30.0
    """Seconds each statement may run (the engine stops it after that)."""
    max_rows: int = 1000
    """Rows at most in any tabular result (the rest are cut, ``truncated`` says so)."""
    rulesets: dict[str, RuleSet] = field(default_factory=dict)
    """Rule sets by name, compiled at start (``--rules``)."""


class ServiceError(errors.KgdbError):
    """A request the service refuses: ``status`` is its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Operations:
    """The service's operations over one configuration, one embedder and one LLM client
    (both loaded at first use unless given)."""

    def __init__(self, config: ServeConfig, *, embedder: Any = None, llm: Any = None) -> None:
        self.config = config
        self._embedder = LockedEmbedder(embedder) if embedder is not None else None
        self._llm = llm
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ models
    def embedder(self) -> LockedEmbedder:
        with self._lock:
            if self._embedder is None:
                from kgdb.embed import default_embedder

                self._embedder = LockedEmbedder(default_embedder())
            return self._embedder

    def llm(self) -> Any:
        with self._lock:
            if self._llm is None:
                from kgdb.llm.client import ChatClient, LlmSettings

                settings = LlmSettings.from_env()
                if not settings.api_key and not settings.base_url:
                    raise ServiceError(503, "no LLM is configured on this server "
                                            "(OPENAI_BASE_URL / OPENAI_API_KEY)")
                self._llm = ChatClient(settings)
            return self._llm

    def _llm_for_retrieval(self, options: SolverOptions) -> Any:
        return self.llm() if llm_needed(options, answer=False) else None

    # ------------------------------------------------------------------ operations
    def health(self, store: GraphStore, graph: str) -> dict[str, Any]:
        from kgdb.procedures import procedure_status

        indexes = [{"kind": i.kind, "entity": i.entity, "label": i.label,
                    "properties": list(i.properties), "state": i.state, "name": i.name}
                   for i in store.indexes()]
        return {"status": "ok", "kgdb": version("kgdb"), "graph": graph,
                "engine": store.server_info(), "plugins": store.plugins(),
                "indexes": indexes, "procedures": procedure_status(store),
                "writes": self.config.allow_writes, "rulesets": sorted(self.config.rulesets)}

    def ask(self, store: GraphStore, question: str, options: SolverOptions) -> Answer:
        from kgdb.retrieve.ask import ask

        return ask(store, self.embedder(), self.llm(), question, options)

    def retrieve(self, store: GraphStore, question: str, options: SolverOptions) -> Evidence:
        from kgdb.retrieve.ask import retrieve

        return retrieve(store, self.embedder(), question, options,
                        self._llm_for_retrieval(options))

    def relay_ask(self, store: GraphStore, question: str, options: SolverOptions
                  ) -> list[dict[str, Any]]:
        """One flat row per answer: rank, answer, solver, evidence (verbalised)."""
        answer = self.ask(store, question, options)
        evidence = "; ".join(f"{r.head} {r.relation} {r.tail}" if r.relation != PASSAGE
                             else f"[{r.head}] {r.tail[:200]}"
                             for r in answer.evidence.rows()[: self.config.max_rows])
        return [{"rank": 1, "answer": answer.text, "solver": answer.evidence.solver,
                 "evidence": evidence}]

    def relay_evidence(self, store: GraphStore, question: str, options: SolverOptions
                       ) -> list[dict[str, Any]]:
        evidence = self.retrieve(store, question, options)
        return [row.to_json() for row in evidence.rows()[: self.config.max_rows]]

    def lf_run(self, store: GraphStore, program: str, link: bool) -> dict[str, Any]:
        """Run a logical form: its result with the outputs as ``rows``."""
        from kgdb.dsl.logical_form import parse_plan
        from kgdb.solve.lf_compile import store_linker
        from kgdb.solve.lf_run import Executor

        plan = parse_plan(program, "<request>")
        embedder = self.embedder()
        executor = Executor(store, embedder=embedder,
                            linker=store_linker(store, embedder) if link else None)
        result = executor.run(plan)
        rows = [{"output": alias, "rank": i, "value": text}
                for alias, texts in result.output_texts().items()
                for i, text in enumerate(texts, 1)]
        return {**result.to_json(), "rows": rows}

    def rules_eval(self, store: GraphStore, ruleset: str | None, rules: str | None,
                   facts: dict[str, Any]) -> dict[str, Any]:
        from kgdb.solve.rules_apply import ask

        conclusions = ask(store, self.ruleset(ruleset, rules), facts)
        rows = [{"concept": c.concept.id, "type": c.concept.type, "name": c.concept.name,
                 "predicate": c.predicate, "rule": c.rule.text, "location": c.rule.location}
                for c in conclusions]
        return {"facts": facts, "conclusions": rows}

    def rules_apply(self, store: GraphStore, ruleset: str, label: str | None
                    ) -> dict[str, Any]:
        from kgdb.solve.rules_apply import apply_rules

        rules = self.ruleset(ruleset, None)
        report = apply_rules(store, rules, label=label, ruleset=ruleset)
        return {"ruleset": report.ruleset, "evaluated_at": report.evaluated_at,
                "steps": [{"step": d, "rows": n} for d, n in report.steps],
                "counts": report.counts}

    def embeddings(self, texts: list[str]) -> dict[str, Any]:
        """OpenAI's embeddings response for ``texts``."""
        if not texts or len(texts) > MAX_TEXTS:
            raise ServiceError(400, f"give 1 to {MAX_TEXTS} texts")
        if any(len(t) > MAX_TEXT for t in texts):
            raise ServiceError(400, f"a text is longer than {MAX_TEXT} characters")
        embedder = self.embedder()
        vectors = embedder.embed(texts)
        words = sum(len(t.split()) for t in texts)
        return {"object": "list", "model": embedder.model_id,
                "data": [{"object": "embedding", "index": i,
                          "embedding": [float(x) for x in v]} for i, v in enumerate(vectors)],
                "usage": {"prompt_tokens": words, "total_tokens": words}}

    def passages_and_facts(self, store: GraphStore, query: str, top_k: int,
                           threshold: float) -> list[dict[str, Any]]:
        """Dify's records: the nearest chunks and triple texts by cosine similarity."""
        from kgdb import vocabulary
        from kgdb.link.triples import indexed_types
        from kgdb.retrieve.cqr import nearest_facts
        from kgdb.retrieve.passages import nearest_passages

        top_k = min(top_k, self.config.max_rows)
        if top_k < 1 or not query.strip():
            return []
        vector = self.embedder().embed([query])[0]
        records: list[dict[str, Any]] = []
        if any(i.kind == "vector" and i.label == vocabulary.CHUNK for i in store.indexes()):
            records += [{"content": p.text, "score": p.score, "title": p.document,
                         "metadata": {"chunk": p.id, "kind": "passage"}}
                        for p in nearest_passages(store, vector, top_k)]
        types = indexed_types(store)
        for triple in nearest_facts(store, vector, top_k, types) if types else []:
            records.append({"content": triple.text, "score": triple.score,
                            "title": f"{triple.head} {triple.relation} {triple.tail}",
                            "metadata": {"head": triple.head_id, "relation": triple.relation,
                                         "tail": triple.tail_id, "kind": "fact"}})
        kept = [r for r in records if r["score"] >= threshold]
        kept.sort(key=lambda r: (-r["score"], r["title"], r["content"]))
        for r in kept:
            r["score"] = round(max(0.0, min(1.0, r["score"])), 6)
        return kept[:top_k]

    def procedures(self, store: GraphStore) -> dict[str, Any]:
        from kgdb.procedures import procedure_status

        return procedure_status(store)

    def ruleset(self, name: str | None, text: str | None) -> RuleSet:
        """A loaded rule set by name, or rules given as text (checked like a rule file)."""
        if (name is None) == (text is None):
            raise ServiceError(400, "give either ruleset (a name) or rules (the text)")
        if name is not None:
            if name not in self.config.rulesets:
                raise ServiceError(404, f"no rule set {name[:80]!r} on this server"
                                        f"{errors.did_you_mean(name, self.config.rulesets)}")
            return self.config.rulesets[name]
        from kgdb.dsl.rules_check import load_rules

        assert text is not None
        if len(text) > MAX_TEXT:
            raise ServiceError(400, f"the rules are longer than {MAX_TEXT} characters")
        return load_rules(text, "<request>")
