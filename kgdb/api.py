"""The Python API: one object, :class:`KnowledgeBase`, opened by :func:`connect`.

    import kgdb

    with kgdb.connect() as kb:                      # the embedded FalkorDB (or KGDB_URI)
        kb.load_documents(["docs/"])                # files and folders of documents
        kb.index()                                  # every index a solver needs
        found = kb.retrieve("Who founded Acme?", solver="ppr", passages=5)
        for p in found.passages:
            print(p.score, p.document, p.source, p.text[:80])

Everything a command of the ``kgdb`` CLI does is one method here: loading documents, facts
and schemas, building indexes, retrieving evidence (every solver, with its options model's
options; none needs an LLM when given what it would write), asking (with an LLM:
``OPENAI_BASE_URL``...), logical forms, rules, Cypher. Methods raise :class:`kgdb.KgdbError`
subclasses with one-line messages; a file argument that does not exist raises
:class:`kgdb.MissingFileError`, which is also a :class:`FileNotFoundError`. The names
exported from :mod:`kgdb` are the stable API; modules and names beginning with ``_`` are not
(docs/python.md).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from kgdb.config import Settings
from kgdb.errors import ConfigError, MissingFileError, did_you_mean

if TYPE_CHECKING:
    from kgdb.documents.indexing import IndexStep
    from kgdb.documents.pipeline import DocumentReport
    from kgdb.embed.base import Embedder
    from kgdb.engine.base import GraphStore
    from kgdb.llm import ChatClient
    from kgdb.load.triples import LoadReport
    from kgdb.retrieve.evidence import Evidence
    from kgdb.retrieve.readiness import SolverReadiness
    from kgdb.retrieve.solver import Answer
    from kgdb.schema.apply import SchemaReport
    from kgdb.solve.lf_run import RunResult
    from kgdb.solve.rules import Conclusion
    from kgdb.solve.rules_apply import RulesReport

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

    def __init__(self, uri: str | None = None, *, user: str | None = None,
                 password: str | None = None, database: str | None = None,
                 graph: str | None = None, embed_model: str | None = None,
                 keep_server: bool = False) -> None:
        """``uri``: ``bolt://``/``neo4j://`` for Neo4j, default ``KGDB_URI``/``NEO4J_URI``,
        else the embedded FalkorDB. ``user``, ``password``, ``database``: Neo4j's (default
        ``NEO4J_USERNAME``, ``NEO4J_PASSWORD``, ``NEO4J_DATABASE``). ``graph``: the FalkorDB
        graph name (default ``KGDB_GRAPH`` or ``kgdb``). ``embed_model``: ``minilm``
        (default), ``minilm-torch`` or ``openai:<model>``. ``keep_server``: leave the
        embedded FalkorDB running after :meth:`close` even when this object started it (a
        server found running is always left running)."""
        settings = Settings.from_env(uri=uri, graph=graph)
        given: dict[str, Any] = {k: v for k, v in (("username", user), ("password", password),
                                                   ("database", database)) if v is not None}
        if given and settings.embedded:
            names = ", ".join("user" if k == "username" else k for k in given)
            raise ConfigError(f"{names}: Neo4j's credentials, but no Neo4j URI is given "
                              "(connect('bolt://host:7687', user=..., password=...) or "
                              "KGDB_URI)")
        self.settings: Settings = dataclasses.replace(settings, **given)
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
    def apply_schema(self, path: str | Path) -> SchemaReport:
        """Apply a schema file (``.schema``): the type catalog, constraints and the range,
        full-text and vector indexes. Idempotent."""
        from kgdb.schema import apply_schema, parse_schema_file

        return apply_schema(self.store, parse_schema_file(_existing(path, "schema file")),
                            self.embedder)

    def load(self, path: str | Path, *, schema: str | Path | None = None,
             sep: str | None = None, fmt: str | None = None, mode: str = "incremental",
             on_error: str = "fail", progress: bool = False) -> LoadReport:
        """Load facts from a triples file (``head|relation|tail`` lines, TSV, CSV or JSON
        lines; ``sep`` and ``fmt`` as ``kgdb load triples``), applying ``schema`` first when
        given. ``mode``: ``incremental`` (MERGE, the default), ``bulk`` or ``auto``."""
        from kgdb.load.triples import load_triples

        path = _existing(path, "triples file")
        if schema is not None:
            self.apply_schema(schema)
        return load_triples(self.store, self.embedder, path, fmt=fmt, sep=sep,
                            on_error=on_error, progress=progress, mode=mode)

    def load_sample(self) -> LoadReport:
        """Load the bundled movie sample (442 MetaQA facts about the films of William
        Dieterle and Marlene Dietrich) with its schema: what ``kgdb demo`` loads."""
        from kgdb.demo import DEFAULT_SCHEMA, DEFAULT_TRIPLES

        return self.load(DEFAULT_TRIPLES, schema=DEFAULT_SCHEMA)

    def load_documents(self, paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                       *, index: bool = False, progress: bool = False,
                       **options: Any) -> DocumentReport:
        """Load documents (files, or folders read recursively: what ``kgdb load documents``
        reads) as documents, chunks and the mutual index; a changed document replaces its
        old version, an unchanged one writes nothing. ``options``: those of ``kgdb load
        documents`` by their :class:`~kgdb.documents.pipeline.DocumentOptions` names
        (``extract="gazetteer"``, ``chunk_size=800``, ``title_entity=True``...). ``index``:
        then :meth:`index`. A path that does not exist raises :class:`MissingFileError`
        before anything is written."""
        from kgdb.documents.pipeline import DocumentOptions, load_documents

        given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
        if not given:
            raise ConfigError("load_documents: no path given")
        for path in given:
            _existing(path, "file or folder")
        fields = {f.name for f in dataclasses.fields(DocumentOptions)}
        unknown = [k for k in options if k not in fields]
        if unknown:
            raise ConfigError(f"load_documents: unknown option {unknown[0]!r}"
                              f"{did_you_mean(unknown[0], sorted(fields))}; the options are "
                              f"{', '.join(sorted(fields))}")
        chosen = DocumentOptions(**options)
        extractor = None
        if chosen.extract == "llm":
            from kgdb.documents.extract_llm import LlmExtractor
            from kgdb.documents.pipeline import schema_types

            entity_types, relation_types = schema_types(self.store)
            extractor = LlmExtractor(entity_types=entity_types, relation_types=relation_types)
        report = load_documents(self.store, self.embedder, [Path(p) for p in given],
                                options=chosen, extractor=extractor, progress=progress)
        if index:
            self.index(progress=progress)
        return report

    def index(self, *names: str, progress: bool = False) -> list[IndexStep]:
        """Build or refresh the indexes the solvers need (``kgdb index``): every one a
        registered solver needs, or those ``names`` (``"knn"``, ``"triples"``, ``"ppr"``),
        each incrementally with the options it was last built with; an index whose data is
        missing (no documents yet) is skipped with the reason. A second call writes
        nothing."""
        from kgdb.documents.indexing import BUILDERS, build_indexes

        unknown = [n for n in names if n not in BUILDERS]
        if unknown:
            raise ConfigError(f"unknown index {unknown[0]!r}{did_you_mean(unknown[0], BUILDERS)};"
                              f" choose from {', '.join(BUILDERS)}")
        return build_indexes(self.store, self.embedder, names or None, progress=progress)

    def readiness(self) -> list[SolverReadiness]:
        """Whether each solver is ready, with each index it needs (``kgdb stats``)."""
        from kgdb.retrieve.readiness import readiness

        return readiness(self.store)

    # ------------------------------------------------------------------ questions
    def retrieve(self, question: str, *, pattern: Iterable[PatternSpec] | None = None,
                 solver: str = "pattern", llm: ChatClient | None = None,
                 **options: Any) -> Evidence:
        """The evidence for ``question``, without an answer. ``solver``: a name of
        :data:`kgdb.SOLVERS` (``pattern``: top-k subgraphs for a pattern graph, give
        ``pattern``, else an LLM writes one; ``ppr``, ``vector``, ``hybrid``,
        ``document-graph``, ``triple-context``...). ``options``: those of the solver's
        options model (``passages``, ``k``, ``kn``...), validated by it: an unknown option
        or a value out of range is a :class:`ConfigError` naming it. The
        :class:`~kgdb.retrieve.evidence.Evidence` holds facts, groups, passages (each with
        its document and source) and documents with scores (``score_kind`` says what they
        mean: a GSD for ``pattern``, lower is closer), the Cypher that ran (``statements``)
        and ``timings_ms``. A solver whose index is missing raises
        :class:`~kgdb.retrieve.readiness.NotReadyError` naming the command that builds it."""
        from kgdb.retrieve.ask import retrieve

        values: dict[str, object] = {"solver": solver, **options}
        if pattern is not None:
            values["pattern"] = [_triple(p) for p in pattern]
        return retrieve(self.store, self.embedder, question, _options(values), llm)

    def ask(self, question: str, *, solver: str = "pattern", llm: ChatClient | None = None,
            **options: Any) -> Answer:
        """``question`` answered by an LLM from the evidence ``solver`` finds (also ``lf``,
        the logical-form solver). Needs an OpenAI-compatible endpoint: ``llm``, or
        ``OPENAI_BASE_URL``/``OPENAI_API_KEY``; :meth:`retrieve` needs none."""
        from kgdb.llm import ChatClient
        from kgdb.retrieve.ask import ask

        return ask(self.store, self.embedder, llm or ChatClient(), question,
                   _options({"solver": solver, **options}))

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


def _existing(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` as a Path, or a :class:`MissingFileError` when nothing is there."""
    found = Path(path)
    if not found.exists():
        raise MissingFileError(path, what)
    return found


def _options(values: dict[str, object]) -> Any:
    """The solver's options model from keyword arguments; a bad one is one ConfigError
    (``retrieve: passages: Input should be less than or equal to 1000``)."""
    from pydantic import ValidationError

    from kgdb.retrieve.registry import parse_options, solver_named

    solver = solver_named(str(values.get("solver")))  # an unknown name says did-you-mean
    try:
        return parse_options({**values, "solver": solver.name})
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][-1]) if error["loc"] else "options"
        if error["type"] == "extra_forbidden":
            known = [n for n in solver.options.model_fields if n != "solver"]
            raise ConfigError(f"{field} is not an option of the {solver.name} solver"
                              f"{did_you_mean(field, known)}; its options: "
                              f"{', '.join(known) or 'none'}") from exc
        raise ConfigError(f"{solver.name} solver: {field}: {error['msg']}") from exc


PROGRAM_SUFFIXES = {"logical form": ".lf", "rule file": ".rules"}


def looks_like_path(source: str, what: str) -> bool:
    """Whether a program argument given as a string names a file (docs/python.md, "Files or
    text"): one line (program text may be one line too) that ends in the program's suffix
    (``.lf``, ``.rules``) or has no ``(`` (every logical-form and rule statement has one)."""
    line = source.strip()
    if not line or "\n" in line:
        return False
    return line.endswith(PROGRAM_SUFFIXES.get(what, "\0")) or "(" not in line


def _program(source: str | os.PathLike[str], what: str) -> tuple[str, str]:
    """The text and name of a program given as text or as a file path (a path that does not
    exist is a :class:`MissingFileError`, never parsed as program text)."""
    from kgdb.text import read_text_file

    if isinstance(source, os.PathLike) or looks_like_path(source, what):
        path = Path(os.fspath(source).strip() if isinstance(source, str) else source)
        if not path.exists():
            raise MissingFileError(source, f"{what} file" if what == "logical form" else what)
        return read_text_file(path, what=what), str(source)
    return str(source), "<rules>" if what == "rule file" else "<plan>"


def connect(uri: str | None = None, *, user: str | None = None, password: str | None = None,
            database: str | None = None, graph: str | None = None,
            embed_model: str | None = None, keep_server: bool = False) -> KnowledgeBase:
    """Open a :class:`KnowledgeBase` (the same arguments as its constructor):
    ``kgdb.connect()`` for the embedded FalkorDB (or ``KGDB_URI``), ``kgdb.connect(
    "bolt://localhost:7687", user="neo4j", password=...)`` for a Neo4j."""
    return KnowledgeBase(uri, user=user, password=password, database=database, graph=graph,
                         embed_model=embed_model, keep_server=keep_server)


__all__ = ["KnowledgeBase", "PatternSpec", "connect", "looks_like_path"]
