"""What the knowledge service does, once, for every front end of it: the HTTP API
(:mod:`kgdb.serve.app`) and the MCP tools (:mod:`kgdb.serve.mcp`). Each operation takes the
tenant's store (a request's view of it) and plain values, and returns JSON-ready values."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kgdb import errors
from kgdb.config import Settings
from kgdb.dsl.rules_ast import RuleSet
from kgdb.engine.base import GraphStore
from kgdb.graph_cache import CacheStats
from kgdb.package import version
from kgdb.retrieve.ask import AskEvent, llm_needed
from kgdb.retrieve.evidence import PASSAGE, Evidence
from kgdb.retrieve.solver import Answer, SolverOptions
from kgdb.serve.embedding import SharedModel, TenantEmbedder, remaining
from kgdb.serve.errors import ServiceError
from kgdb.serve.observe import note_llm
from kgdb.serve.tokens import ANY_GRAPH, TENANT_NAME, Token, TokenFile

MAX_TEXTS = 256
"""Texts at most in one embeddings request."""
MAX_TEXT = 64_000
"""Characters at most in one text (a program, a rule set, one text to embed)."""
MAX_EMBED_BYTES = 256 * 1024
"""UTF-8 bytes at most of all the texts of one embeddings request."""


@dataclass
class ServeConfig:
    """How the service runs (``kgdb serve`` options)."""

    settings: Settings
    tokens: TokenFile
    allow_writes: bool = False
    timeout_s: float = 30.0
    """Seconds each statement may run (the engine stops it after that)."""
    max_rows: int = 1000
    """Items at most in any list a response carries (the rest are cut, ``truncated`` says
    so)."""
    max_body: int = 1024 * 1024
    """Bytes at most of a request's body (refused with 413 before it is read)."""
    max_tenants: int = 32
    """Tenant stores open at a time (the least recently used idle one is closed)."""
    rulesets: dict[str, RuleSet] = field(default_factory=dict)
    """Rule sets by name, compiled at start (``--rules``)."""
    max_answer_chars: int = 32_000
    """Characters at most of a streamed answer (the LLM's reply is closed past them)."""
    audit_log: str | None = None
    """Where audit records go besides the logger ``kgdb.audit``: a file, ``-`` for stderr."""
    audit_questions: bool = False
    """Whether audit records carry the question's text."""
    shutdown_grace: float | None = None
    """Seconds in-flight requests get after SIGTERM (None: ``timeout_s`` + 5)."""

    @property
    def grace(self) -> float:
        return self.shutdown_grace if self.shutdown_grace is not None else self.timeout_s + 5


class Operations:
    """The service's operations over one configuration, one embedder and one LLM client
    (both loaded at first use unless given)."""

    def __init__(self, config: ServeConfig, *, embedder: Any = None, llm: Any = None) -> None:
        self.config = config
        self._model = SharedModel(embedder) if embedder is not None else None
        self._llm = llm
        self._lock = threading.Lock()
        self.ready = False
        """Whether the embedding model is loaded (:meth:`warm`)."""

    # ------------------------------------------------------------------ models
    def model(self) -> SharedModel:
        with self._lock:
            if self._model is None:
                from kgdb.embed import default_embedder

                self._model = SharedModel(default_embedder())
            return self._model

    def warm(self) -> None:
        """Load the embedding model now (its first use otherwise waits for it): the service
        is ready (``/readyz``) once this returns."""
        self.model().compute(["kgdb"])
        self.ready = True

    def embedder(self, store: GraphStore) -> TenantEmbedder:
        """The embedding model with the cache of ``store``'s tenant only."""
        tenant = getattr(store, "graph_name", None) or getattr(store, "database", None)
        return self.model().for_tenant(str(tenant or ""))

    def embedding_stats(self) -> CacheStats:
        """The tenants' embedding caches counted together."""
        return self._model.stats() if self._model is not None else CacheStats("embeddings")

    def forget(self, tenant: str) -> None:
        if self._model is not None:
            self._model.forget(tenant)

    def llm(self) -> Any:
        """The LLM client, bounded by the current request's deadline (``--timeout`` holds
        for the LLM's part of a request too, a streamed answer's included)."""
        with self._lock:
            if self._llm is None:
                from kgdb.llm.client import ChatClient, LlmSettings

                settings = LlmSettings.from_env()
                if not settings.api_key and not settings.base_url:
                    raise ServiceError(503, "no LLM is configured on this server "
                                            "(OPENAI_BASE_URL / OPENAI_API_KEY)")
                self._llm = ChatClient(settings)
            llm = self._llm
        bounded = getattr(llm, "bounded", None)
        return bounded(remaining) if bounded is not None else llm

    def has_llm(self) -> bool:
        """Whether an LLM is configured (given, or by OPENAI_BASE_URL / OPENAI_API_KEY): the
        web page offers a streamed answer only then."""
        if self._llm is not None:
            return True
        from kgdb.llm.client import LlmSettings

        settings = LlmSettings.from_env()
        return bool(settings.api_key or settings.base_url)

    def _llm_for_retrieval(self, options: SolverOptions) -> Any:
        return self.llm() if llm_needed(options, answer=False) else None

    # ------------------------------------------------------------------ operations
    def health(self, store: GraphStore, graph: str) -> dict[str, Any]:

        indexes = [{"kind": i.kind, "entity": i.entity, "label": i.label,
                    "properties": list(i.properties), "state": i.state, "name": i.name}
                   for i in store.indexes()]
        engine = {k: v for k, v in store.server_info().items() if k != "address"}
        return {"status": "ok", "kgdb": version(), "graph": graph,
                "engine": engine, "plugins": store.plugins(),
                "indexes": indexes, "procedures": self.procedures(store),
                "writes": self.config.allow_writes, "rulesets": sorted(self.config.rulesets)}

    def ask(self, store: GraphStore, question: str, options: SolverOptions) -> Answer:
        from kgdb.retrieve.ask import ask

        answer = ask(store, self.embedder(store), self.llm(), question, options)
        note_llm(answer.evidence.usage)
        return answer

    def ask_stream(self, store: GraphStore, question: str, options: SolverOptions
                   ) -> Iterator[AskEvent]:
        """:meth:`ask` as events (:func:`kgdb.retrieve.ask.ask_stream`)."""
        from kgdb.retrieve.ask import ask_stream

        return ask_stream(store, self.embedder(store), self.llm(), question, options,
                          max_chars=self.config.max_answer_chars)

    def retrieve(self, store: GraphStore, question: str, options: SolverOptions) -> Evidence:
        from kgdb.retrieve.ask import retrieve

        evidence = retrieve(store, self.embedder(store), question, options,
                            self._llm_for_retrieval(options))
        note_llm(evidence.usage)
        return evidence

    def relay_ask(self, store: GraphStore, question: str, options: SolverOptions
                  ) -> list[dict[str, Any]]:
        """One flat row per answer: rank, answer, solver, evidence (verbalised)."""
        answer = self.ask(store, question, options)
        evidence = "; ".join(f"{r.head} {r.relation} {r.tail}" if r.relation != PASSAGE
                             else f"[{r.head}] {r.tail[:200]}"
                             for r in answer.evidence.rows()[: self.config.max_rows])
        usage = answer.evidence.usage
        return [{"rank": 1, "answer": answer.text, "solver": answer.evidence.solver,
                 "evidence": evidence, "llm_requests": usage.requests,
                 "tokens_in": usage.tokens_in, "tokens_out": usage.tokens_out}]

    def relay_evidence(self, store: GraphStore, question: str, options: SolverOptions
                       ) -> list[dict[str, Any]]:
        evidence = self.retrieve(store, question, options)
        return [row.to_json() for row in evidence.rows()[: self.config.max_rows]]

    def graphs(self, store: GraphStore, token: Token, default: str) -> list[str]:
        """The graphs ``token`` may read: those it names, or for a token of every graph
        (``*``) the engine's graphs (FalkorDB) or databases (Neo4j) and the default."""
        if ANY_GRAPH not in token.graphs:
            return sorted(token.graphs)
        names = {default}  # every graph: the engine's
        from kgdb.dialects.neo4j import Neo4jDialect

        try:
            if isinstance(store.dialect, Neo4jDialect):
                rows = store.run(store.dialect.list_databases()).records()
                names.update(str(r["name"]) for r in rows if r.get("type") != "system")
            else:
                names.update(getattr(store, "graphs", list)())
        except errors.EngineError:  # a user without the privilege to list: the default only
            pass
        return sorted(n for n in names if TENANT_NAME.match(n))

    def solvers(self) -> list[dict[str, Any]]:
        """Each solver with its summary, whether it needs an LLM to retrieve, and its options'
        JSON schema (the web page's form is generated from it)."""
        from kgdb.retrieve.registry import SOLVERS

        out = []
        for solver in SOLVERS.values():
            defaults = solver.options(solver=solver.name) if _defaults_ok(solver.options) \
                else None
            out.append({"name": solver.name, "summary": solver.summary,
                        "retrieval_llm": None if defaults is None else
                        solver.llm_needed(defaults, answer=False),
                        "schema": solver.options.model_json_schema()})
        return out

    def explore(self, store: GraphStore, entity_id: str, limit: int) -> dict[str, Any]:
        """The entity ``entity_id`` (labels, properties without vectors) and at most
        ``limit`` of its neighbours; ``capped`` says there were more."""
        from kgdb.cypher.explore import entity_node, neighbours

        limit = max(1, min(limit, self.config.max_rows))
        node = store.run(entity_node(entity_id)).single()
        if node is None:
            raise ServiceError(404, f"no entity with id {entity_id[:80]!r} in this graph")
        rows = store.run(neighbours(entity_id, limit + 1)).records()
        return {"node": _shown_node(node), "limit": limit, "capped": len(rows) > limit,
                "neighbours": [{**_shown_node(r), "relation": r["relation"],
                                "outgoing": bool(r["outgoing"])} for r in rows[:limit]]}

    def mentions(self, store: GraphStore, chunks: list[str]) -> dict[str, Any]:
        """The entities each chunk mentions (the names the mutual index links to it)."""
        from kgdb.cypher.explore import chunk_mentions

        rows = store.run(chunk_mentions(chunks[: self.config.max_rows],
                                        self.config.max_rows)).records()
        return {"mentions": {str(r["chunk"]): [str(n) for n in r["names"] or []]
                             for r in rows}}

    def lf_run(self, store: GraphStore, program: str, link: bool) -> dict[str, Any]:
        """Run a logical form: its result with the outputs as ``rows``."""
        from kgdb.dsl.logical_form import parse_plan
        from kgdb.solve.lf_compile import store_linker
        from kgdb.solve.lf_run import Executor

        plan = parse_plan(program, "<request>")
        embedder = self.embedder(store)
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
        # a loaded rule set's place is its name and line, not the server's path to its file
        rows = [{"concept": c.concept.id, "type": c.concept.type, "name": c.concept.name,
                 "predicate": c.predicate, "rule": c.rule.text,
                 "location": c.rule.location if ruleset is None else
                 f"{ruleset}:{c.rule.location.rpartition(':')[2]}"}
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

    def embeddings(self, store: GraphStore, texts: list[str]) -> dict[str, Any]:
        """OpenAI's embeddings response for ``texts`` (the tenant's cache)."""
        if not texts or len(texts) > MAX_TEXTS:
            raise ServiceError(400, f"give 1 to {MAX_TEXTS} texts")
        if any(len(t) > MAX_TEXT for t in texts):
            raise ServiceError(400, f"a text is longer than {MAX_TEXT} characters")
        size = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
        if size > MAX_EMBED_BYTES:
            raise ServiceError(413, f"the texts are {size} bytes; one request may embed at "
                                    f"most {MAX_EMBED_BYTES}")
        embedder = self.embedder(store)
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
        from kgdb.retrieve.passages import nearest_passages
        from kgdb.retrieve.triple_context import nearest_facts
        from kgdb.stored.triples import indexed_types

        top_k = min(top_k, self.config.max_rows)
        if top_k < 1 or not query.strip():
            return []
        vector = self.embedder(store).embed([query])[0]
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
        from kgdb.serve.errors import scrub

        status = procedure_status(store)
        if "error" in status:  # the engine's words: procedure names, addresses
            status["error"] = scrub(str(status["error"]))
        return status

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


def _defaults_ok(model: Any) -> bool:
    """Whether ``model`` has a default for every field but ``solver``."""
    return all(not f.is_required() for n, f in model.model_fields.items() if n != "solver")


MAX_SHOWN = 500
"""Characters at most of one property value the web page is sent."""


def _shown_node(row: dict[str, Any]) -> dict[str, Any]:
    """A node for the web page: id, name, labels and its properties without vectors (an
    embedding is hundreds of floats of nothing a reader can use) and long texts cut."""
    properties = {}
    for key, value in dict(row.get("properties") or {}).items():
        if key == "embedding" or (isinstance(value, list) and len(value) >= 16 and all(
                isinstance(v, int | float) for v in value)):
            continue
        if hasattr(value, "tolist"):
            continue  # an engine's vector type
        if isinstance(value, str) and len(value) > MAX_SHOWN:
            value = value[:MAX_SHOWN] + "\u2026"
        properties[str(key)] = value if isinstance(value, str | int | float | bool) or \
            value is None else str(value)[:MAX_SHOWN]
    return {"id": str(row["id"]), "name": str(row.get("name") or row["id"]),
            "labels": [str(x) for x in row.get("labels") or []], "properties": properties}


def cap_lists(payload: Any, most: int, depth: int = 0) -> bool:
    """Cut every list in ``payload`` (a JSON value, changed in place) to ``most`` items:
    rows, outputs, trace steps and their results, subgraphs; and the parameters of each
    statement shown (``statements: [{cypher, params}]``) to ``most`` values in all, since a
    statement's lists of candidates (one list per pattern node, k names each) would otherwise
    show more names than the rows cut. True when something was cut."""
    cut = False
    if depth > 16:
        return cut
    items: list[Any] = []
    if isinstance(payload, dict):
        statements = payload.get("statements")
        if isinstance(statements, list):
            for statement in statements:
                if isinstance(statement, dict) and isinstance(statement.get("params"), dict):
                    cut = _cap_values(statement["params"], [most]) or cut
        for key, value in payload.items():
            if isinstance(value, list) and len(value) > most:
                payload[key] = value[:most]
                cut = True
        items = list(payload.values())
    elif isinstance(payload, list):
        if len(payload) > most:
            del payload[most:]
            cut = True
        items = payload
    for item in items:
        if isinstance(item, dict | list):
            cut = cap_lists(item, most, depth + 1) or cut
    return cut


def _cap_values(value: Any, budget: list[int]) -> bool:
    """Keep the first ``budget[0]`` scalar values of ``value`` (a JSON value, changed in place,
    in order), cutting the lists and dropping the keys past them. True when something was cut."""
    cut = False
    if isinstance(value, dict):
        for key in list(value):
            if budget[0] <= 0:
                del value[key]
                cut = True
            elif isinstance(value[key], dict | list):
                cut = _cap_values(value[key], budget) or cut
            else:
                budget[0] -= 1
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if budget[0] <= 0:
                del value[i:]
                return True
            if isinstance(item, dict | list):
                cut = _cap_values(item, budget) or cut
            else:
                budget[0] -= 1
    return cut


MAX_DEPTH = 32
"""Nesting at most of a request's JSON (options, facts)."""


def text_contract(value: Any, where: str = "body") -> str | None:
    """Why a request's JSON value breaks the text contract (README, "Text"), naming the place:
    a string or key with a NUL, another control character (TAB, LF and CR are text) or a
    lone surrogate, a NaN or an infinity, or nesting deeper than :data:`MAX_DEPTH`. None when it keeps it."""
    from kgdb.text import text_problem

    todo: list[tuple[Any, str, int]] = [(value, where, 0)]
    while todo:
        item, place, depth = todo.pop()
        if depth > MAX_DEPTH:
            return f"{place}: nested deeper than {MAX_DEPTH} levels"
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return f"{place} {problem}"
        elif isinstance(item, float) and not math.isfinite(item):
            return f"{place} is not a finite number (NaN and Infinity are not JSON numbers)"
        elif isinstance(item, dict):
            for key, inner in item.items():
                key_problem = text_problem(str(key))
                if key_problem:
                    return f"{place}: a key {key_problem}"
                todo.append((inner, f"{place}.{str(key)[:40]}", depth + 1))
        elif isinstance(item, list | tuple):
            todo.extend((inner, f"{place}[{i}]", depth + 1) for i, inner in enumerate(item))
    return None
