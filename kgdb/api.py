"""The Python API: one object, :class:`KnowledgeBase`, opened by :func:`connect`.

    import kgdb

    with kgdb.connect() as kb:                      # the embedded FalkorDB (or KGDB_URI)
        kb.load_sample()                            # or kb.load("facts.txt", schema=...)
        found = kb.retrieve("Who directed Kismet?",
                            pattern=["Kismet|directed_by|UNKNOWN director 1"])
        for row in found.evidence:
            print(row.rank, row.head, row.relation, row.tail, row.score)

Everything a command of the ``kgdb`` CLI does is one method here: loading facts and schemas,
retrieving evidence (every solver; none needs an LLM when given what it would write),
asking (with an LLM: ``OPENAI_BASE_URL``...), logical forms, rules, Cypher. Methods raise
:class:`kgdb.KgdbError` subclasses with one-line messages. The names exported from
:mod:`kgdb` are the stable API; modules and names beginning with ``_`` are not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from kgdb.config import Settings
from kgdb.errors import ConfigError

if TYPE_CHECKING:
    from kgdb.embed.base import Embedder
    from kgdb.engine.base import GraphStore
    from kgdb.llm import ChatClient
    from kgdb.load.triples import LoadReport
    from kgdb.retrieve.evidence import Evidence
    from kgdb.retrieve.solver import Answer
    from kgdb.schema.apply import ApplyReport
    from kgdb.solve.lf_run import RunResult
    from kgdb.solve.rules import Conclusion
    from kgdb.solve.rules_apply import ApplyReport as RulesReport

PatternSpec = str | Sequence[str]
"""One fact of a pattern graph: ``"head|relation|tail"`` or ``(head, relation, tail)``."""


def _triple(spec: PatternSpec) -> tuple[str, str, str]:
    parts = spec.split("|") if isinstance(spec, str) else list(spec)
    if len(parts) != 3 or not all(isinstance(p, str) and p.strip() for p in parts):
        raise ConfigError(f"pattern fact {spec!r}: expected 'head|relation|tail' (three "
                          "non-empty parts)")
    return (parts[0].strip(), parts[1].strip(), parts[2].strip())


class KnowledgeBase:
    """A graph to load and question: the embedded FalkorDB (default) or a Neo4j.

    Open it with :func:`connect` (or the constructor, same arguments) and close it with
    :meth:`close` or a ``with`` block. The store and the embedding model open on first use.
    """

    def __init__(self, uri: str | None = None, *, graph: str | None = None,
                 embed_model: str | None = None, keep_server: bool = False) -> None:
        """``uri``: ``bolt://``/``neo4j://`` for Neo4j (credentials from ``NEO4J_USERNAME``
        and ``NEO4J_PASSWORD``), default ``KGDB_URI``/``NEO4J_URI``, else the embedded
        FalkorDB. ``graph``: the FalkorDB graph name (default ``KGDB_GRAPH`` or ``kgdb``).
        ``embed_model``: ``minilm`` (default), ``minilm-torch`` or ``openai:<model>``.
        ``keep_server``: leave the embedded FalkorDB running after :meth:`close` even when
        this object started it (a server found running is always left running)."""
        self.settings: Settings = Settings.from_env(uri=uri, graph=graph)
        self._embed_model = embed_model
        self._keep_server = keep_server
        self._store: GraphStore | None = None
        self._embedder: Embedder | None = None
        self._started_server: Any = None
        self._closed = False

    # ------------------------------------------------------------------ plumbing
    @property
    def store(self) -> GraphStore:
        """The open graph store (:class:`kgdb.engine.GraphStore`), connected on first use."""
        if self._closed:
            raise ConfigError("this KnowledgeBase is closed")
        if self._store is None:
            from kgdb.engine import EmbeddedServer, connect

            server = EmbeddedServer(self.settings.home) if self.settings.embedded else None
            was_running = server is None or server.status() is not None
            self._store = connect(self.settings)
            if server is not None and not was_running:
                self._started_server = server
        return self._store

    @property
    def embedder(self) -> Embedder:
        """The embedding model (cached in ``$KGDB_HOME/cache``), loaded on first use."""
        if self._embedder is None:
            from kgdb.embed import default_embedder

            self._embedder = default_embedder(self._embed_model)
        return self._embedder

    @property
    def database(self) -> str:
        """Which database this is (``Neo4j at bolt://...`` or ``embedded FalkorDB at ...,
        graph 'kgdb'``)."""
        return self.store.address

    @property
    def engine(self) -> str:
        """``neo4j`` or ``falkordb``."""
        return self.store.dialect.NAME

    def close(self) -> None:
        """Close the connection; stop the embedded FalkorDB if this object started it (and
        ``keep_server`` is false). Closing twice is harmless."""
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._started_server is not None and not self._keep_server:
            self._started_server.stop()
        self._started_server = None
        self._closed = True

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------------ loading
    def apply_schema(self, path: str | Path) -> ApplyReport:
        """Apply a schema file (``.schema``): the type catalog, constraints and the range,
        full-text and vector indexes. Idempotent."""
        from kgdb.schema import apply_schema, parse_schema_file

        return apply_schema(self.store, parse_schema_file(path), self.embedder)

    def load(self, path: str | Path, *, schema: str | Path | None = None,
             sep: str | None = None, fmt: str | None = None, mode: str = "incremental",
             on_error: str = "fail", progress: bool = False) -> LoadReport:
        """Load facts from a triples file (``head|relation|tail`` lines, TSV, CSV or JSON
        lines; ``sep`` and ``fmt`` as ``kgdb load triples``), applying ``schema`` first when
        given. ``mode``: ``incremental`` (MERGE, the default), ``bulk`` or ``auto``."""
        from kgdb.load.triples import load_triples

        if schema is not None:
            self.apply_schema(schema)
        return load_triples(self.store, self.embedder, path, fmt=fmt, sep=sep,
                            on_error=on_error, progress=progress, mode=mode)

    def load_sample(self) -> LoadReport:
        """Load the bundled movie sample (442 MetaQA facts about the films of William
        Dieterle and Marlene Dietrich) with its schema: what ``kgdb demo`` loads."""
        from kgdb.demo import DEFAULT_SCHEMA, DEFAULT_TRIPLES

        return self.load(DEFAULT_TRIPLES, schema=DEFAULT_SCHEMA)

    # ------------------------------------------------------------------ questions
    def retrieve(self, question: str, *, pattern: Iterable[PatternSpec] | None = None,
                 solver: str = "pattern", llm: ChatClient | None = None,
                 **options: Any) -> Evidence:
        """The evidence for ``question``, without an answer. ``solver``: a name of
        :data:`kgdb.SOLVERS` (``pattern``: top-k subgraphs for a pattern graph, give
        ``pattern``, else an LLM writes one; ``document-graph``, ``triple-context``,
        ``vector``...). ``options``: those of the solver's options model (``k``, ``kn``...).
        The :class:`~kgdb.retrieve.evidence.Evidence` holds facts, groups, passages and
        documents with scores (``score_kind`` says what they mean: a GSD for ``pattern``,
        lower is closer), the Cypher that ran (``statements``) and ``timings_ms``."""
        from kgdb.retrieve.ask import retrieve
        from kgdb.retrieve.registry import parse_options

        values: dict[str, object] = {"solver": solver, **options}
        if pattern is not None:
            values["pattern"] = [_triple(p) for p in pattern]
        return retrieve(self.store, self.embedder, question, parse_options(values), llm)

    def ask(self, question: str, *, solver: str = "pattern", llm: ChatClient | None = None,
            **options: Any) -> Answer:
        """``question`` answered by an LLM from the evidence ``solver`` finds (also ``lf``,
        the logical-form solver). Needs an OpenAI-compatible endpoint: ``llm``, or
        ``OPENAI_BASE_URL``/``OPENAI_API_KEY``; :meth:`retrieve` needs none."""
        from kgdb.llm import ChatClient
        from kgdb.retrieve.ask import ask
        from kgdb.retrieve.registry import parse_options

        return ask(self.store, self.embedder, llm or ChatClient(), question,
                   parse_options({"solver": solver, **options}))

    def logical_form(self, plan: str | Path) -> RunResult:
        """Run a logical-form plan (its text, or a ``.lf`` file): names linked by spelling,
        then by meaning within the documented thresholds (:mod:`kgdb.link`), no LLM unless
        the plan has free-text targets. ``result.outputs`` maps each output variable to its
        values; ``result.render()`` is what ``kgdb lf run`` prints."""
        from kgdb.solve.lf_compile import store_linker
        from kgdb.solve.lf_run import Executor

        text, name = _program(plan, "logical form")
        executor = Executor(self.store, linker=store_linker(self.store, self.embedder),
                            embedder=self.embedder)
        return executor.run_text(text, name)

    # ------------------------------------------------------------------ rules
    def apply_rules(self, rules: str | Path, *, label: str | None = None,
                    ruleset: str | None = None) -> RulesReport:
        """Materialise rules (text, or a ``.rules`` file) on the stored nodes (of ``label``
        when given) as ``belongTo`` relationships; idempotent. ``ruleset`` names them
        (default: the file's stem, or ``rules``)."""
        from kgdb.dsl.rules_check import load_rules
        from kgdb.solve.rules_apply import apply_rules

        text, name = _program(rules, "rule file")
        default = Path(name).stem if name != "<rules>" else "rules"
        return apply_rules(self.store, load_rules(text, name), label=label,
                           ruleset=ruleset or default)

    def judge(self, rules: str | Path, facts: Mapping[str, Any]) -> list[Conclusion]:
        """The concepts ``facts`` belong to under ``rules`` (text or file), evaluated inside
        the database without writing (``kgdb rules eval``)."""
        from kgdb.dsl.rules_check import load_rules
        from kgdb.solve.rules_apply import ask

        text, name = _program(rules, "rule file")
        return ask(self.store, load_rules(text, name), facts)

    # ------------------------------------------------------------------ Cypher
    def cypher(self, query: str, params: Mapping[str, Any] | None = None, *,
               write: bool = False) -> list[dict[str, Any]]:
        """Run a Cypher query (read-only unless ``write``); its rows as dicts."""
        return self.store.run(query, dict(params or {}), write=write).records()


def _program(source: str | Path, what: str) -> tuple[str, str]:
    """The text and name of a program given as text or as a file path."""
    from kgdb.text import read_text_file

    if isinstance(source, Path) or ("\n" not in source and Path(source).suffix in
                                    (".lf", ".rules") and Path(source).exists()):
        return read_text_file(Path(source), what=what), str(source)
    return str(source), "<rules>" if what == "rule file" else "<plan>"


def connect(uri: str | None = None, *, graph: str | None = None,
            embed_model: str | None = None, keep_server: bool = False) -> KnowledgeBase:
    """Open a :class:`KnowledgeBase` (the same arguments as its constructor)."""
    return KnowledgeBase(uri, graph=graph, embed_model=embed_model, keep_server=keep_server)


__all__ = ["KnowledgeBase", "PatternSpec", "connect"]
