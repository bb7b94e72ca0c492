"""The Cypher of kgdb's stored procedures on Neo4j (APOC Extended custom procedures, named
``custom.kgdb.*`` when called) and the statements that install, list and drop them.

A procedure is a thin shim: its body is Cypher from kgdb's builders with constants written
as literals (:mod:`kgdb.cypher.literals`), its inputs are the body's only parameters, and its
outputs are flat scalar columns (BI tools and JDBC read those). What a database cannot do
(embedding with kgdb's model, the LLM, multi-round solving) is relayed to ``kgdb serve``,
whose URL and token APOC reads from apoc.conf (``apoc.static.get('kgdb.url')``,
``'kgdb.token'``): never written into a body.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kgdb.cypher import rules as cy_rules
from kgdb.cypher.literals import inline_params, literal
from kgdb.dialects.base import Dialect
from kgdb.dsl.rules_ast import RuleSet
from kgdb.errors import KgdbError
from kgdb.statement import Statement
from kgdb.vocabulary import CHUNK, ENTITY, RELATION_TYPE

NAMESPACE = "kgdb"
"""Procedures are installed as ``kgdb.<name>``; APOC prefixes ``custom.`` when called."""
META_LABEL = "KgdbMeta"
META_PREFIX = "procedure/"
"""Catalog nodes ``(:KgdbMeta {key: 'procedure/<name>'})`` record what is installed."""
MAX_TOP_K = 1000
MAX_TEXT = 1000
"""Longest text ``custom.kgdb.entities`` takes (each word becomes a fuzzy term)."""
RULESET_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{1,62}$")
"""A rule set's procedure name part: ``custom.kgdb.rules.<name>`` (APOC wants at least two
characters per name part)."""
LUCENE_SPECIAL = r'([+\-&|!(){}\[\]^"~*?:\\/])'
"""Lucene's special characters (classic query parser), escaped in user words before ``~``."""


class ProcedureDefinitionError(KgdbError):
    """A procedure kgdb cannot define (a rule set name that is not a valid name part)."""


@dataclass(frozen=True)
class Procedure:
    """One custom procedure or function as APOC stores it."""

    kind: str
    """``procedure`` or ``function``."""
    name: str
    """``kgdb.entities``: what ``apoc.custom.list()`` shows (called as ``custom.`` + name)."""
    signature: str
    body: str
    mode: str = "read"
    description: str = ""

    @property
    def digest(self) -> str:
        """SHA-256 of what decides its behaviour: kind, signature, body and mode."""
        return hashlib.sha256("\x00".join((self.kind, self.signature, self.body, self.mode))
                              .encode("utf-8")).hexdigest()

    @property
    def called_as(self) -> str:
        return f"custom.{self.name}"


# ---------------------------------------------------------------------- bodies
_RANKED = (
    "WITH collect(row) AS rows\n"
    "UNWIND range(0, size(rows) - 1) AS i\n"
    "WITH i + 1 AS rank, rows[i] AS row\n")
"""Numbers ``row`` maps in order: rank 1 is the best."""


def _check_top_k() -> str:
    return (f"CALL apoc.util.validate($topK IS NULL OR $topK < 1 OR $topK > {MAX_TOP_K}, "
            f"{literal(f'kgdb: topK must be between 1 and {MAX_TOP_K}')}, [])\n")


def _service(path: str) -> str:
    """The URL of ``path`` on the kgdb service, and its token, from apoc.conf; a clear error
    when they are not set."""
    missing = ("kgdb: the knowledge service is not configured: set apoc.static.kgdb.url and "
               "apoc.static.kgdb.token in apoc.conf and restart Neo4j")
    return ("WITH apoc.static.get('kgdb.url') AS url, apoc.static.get('kgdb.token') AS token\n"
            f"CALL apoc.util.validate(coalesce(url, '') = '' OR coalesce(token, '') = '', "
            f"{literal(missing)}, [])\n"
            f"WITH url + {literal(path)} AS url, token\n")


def entities_by_text(dialect: Dialect) -> Procedure:
    """Entities whose name (or description) matches ``text`` by the full-text index, each word
    allowing two edits (``Kismit`` finds ``Kismet``); an exact name (any case) first."""
    index = dialect.string_literal(dialect.index_name(ENTITY, "text", "fulltext"))
    body = (
        _check_top_k()
        + f"CALL apoc.util.validate($text IS NULL OR size($text) > {MAX_TEXT}, "
        f"{literal(f'kgdb: text must be given, at most {MAX_TEXT} characters')}, [])\n"
        + f"WITH [w IN split(trim($text), ' ') WHERE w <> '' | "
        f"apoc.text.regreplace(w, {literal(LUCENE_SPECIAL)}, {literal(chr(92) * 2 + '$1')}) "
        "+ '~'] AS words\n"
        "WHERE size(words) > 0\n"
        f"CALL db.index.fulltext.queryNodes({index}, apoc.text.join(words, ' OR ')) "
        "YIELD node, score\n"
        f"WITH node, score WHERE node:{dialect.ident(ENTITY)}\n"
        "WITH node, score ORDER BY CASE WHEN toLower(node.name) = toLower(trim($text)) "
        "THEN 0 ELSE 1 END, score DESC, node.id ASC\n"
        "LIMIT $topK\n"
        f"WITH {{id: node.id, name: node.name, type: head([l IN labels(node) WHERE l <> "
        f"{literal(ENTITY)}] + [{literal(ENTITY)}]), score: score}} AS row\n"
        + _RANKED
        + "RETURN rank, row.id AS id, row.name AS name, row.type AS type, row.score AS score")
    return Procedure("procedure", "kgdb.entities",
                     "kgdb.entities(text :: STRING, topK = 10 :: INTEGER) :: (rank :: INTEGER, "
                     "id :: STRING, name :: STRING, type :: STRING, score :: FLOAT)", body,
                     description="Entities by name, typo-tolerant (full-text index).")


def _nearest(dialect: Dialect, label: str, vector: str, columns: Sequence[tuple[str, str]]) -> str:
    call = dialect.vector_search_call(label, "embedding", "$topK", vector)
    fields = ", ".join(f"{name}: {expression}" for name, expression in columns)
    return (
        _check_top_k()
        + f"{call}\n"
        f"WITH node, {dialect.score_to_l2('score')} AS distance\n"
        f"ORDER BY distance ASC, node.{dialect.ident(columns[0][1].split('.')[-1])} ASC\n"
        "LIMIT $topK\n"
        f"WITH {{{fields}, distance: distance}} AS row\n"
        + _RANKED
        + "RETURN rank, " + ", ".join(f"row.{name} AS {name}" for name, _ in columns)
        + ", row.distance AS distance")


_ENTITY_COLUMNS = (("id", "node.id"), ("name", "node.name"))
_RELATION_COLUMNS = (("relation", "node.name"),)
_CHUNK_COLUMNS = (("chunk", "node.id"), ("document", "node.document"), ("text", "node.text"))


def _outputs(columns: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{name} :: STRING" for name, _ in columns)


def nearest_procedures(dialect: Dialect, *, chunks: bool) -> list[Procedure]:
    """Candidate search by vector (``nearest*``) and by text through the service's embedding
    (``relations``, ``chunks``), rows ranked by exact L2 distance."""
    specs = [("Entities", ENTITY, _ENTITY_COLUMNS), ("Relations", RELATION_TYPE,
                                                     _RELATION_COLUMNS)]
    if chunks:
        specs.append(("Chunks", CHUNK, _CHUNK_COLUMNS))
    out = []
    for suffix, label, columns in specs:
        outputs = f"(rank :: INTEGER, {_outputs(columns)}, distance :: FLOAT)"
        out.append(Procedure(
            "procedure", f"kgdb.nearest{suffix}",
            f"kgdb.nearest{suffix}(vector :: LIST OF FLOAT, topK = 10 :: INTEGER) :: {outputs}",
            _nearest(dialect, label, "$vector", columns),
            description=f"{label} nodes nearest a vector (exact L2 distance)."))
        if suffix != "Entities":
            by_text = suffix.lower()
            out.append(Procedure(
                "procedure", f"kgdb.{by_text}",
                f"kgdb.{by_text}(text :: STRING, topK = 10 :: INTEGER) :: {outputs}",
                "WITH custom.kgdb.embed($text) AS vector\n"
                + _nearest(dialect, label, "vector", columns),
                description=f"{label} nodes nearest a text, embedded by the kgdb service."))
    return out


def embed_function() -> Procedure:
    """``custom.kgdb.embed(text)``: the text's vector from the service's OpenAI-shaped
    ``/v1/embeddings`` (kgdb's own model), through APOC's OpenAI client."""
    body = (_service("/v1")
            + "CALL apoc.ml.openai.embedding([$text], token, {endpoint: url, model: 'kgdb'}) "
            "YIELD embedding\nRETURN embedding")
    return Procedure("function", "kgdb.embed", "kgdb.embed(text :: STRING) :: LIST OF FLOAT",
                     body, mode="", description="The text's embedding by kgdb's model "
                                                "(the kgdb service).")


def _relay(path: str, columns: Sequence[tuple[str, str]]) -> str:
    return (_service(path)
            + "CALL db.info() YIELD name AS database\n"
            "CALL apoc.load.jsonParams(url, {Authorization: 'Bearer ' + token, "
            "`Content-Type`: 'application/json', `X-Kgdb-Graph`: database}, "
            "apoc.convert.toJson({question: $question, options: coalesce($options, {})})) "
            "YIELD value\n"
            # a refused question comes back as one row {error} (serve/app.py, _relayed)
            "CALL apoc.util.validate(value.error IS NOT NULL, 'kgdb: %s', [value.error])\n"
            "RETURN " + ", ".join(f"value.{name} AS {name}" for name, _ in columns))


ASK_COLUMNS = (("rank", "INTEGER"), ("answer", "STRING"), ("solver", "STRING"),
               ("evidence", "STRING"), ("llm_requests", "INTEGER"), ("tokens_in", "INTEGER"),
               ("tokens_out", "INTEGER"))
EVIDENCE_COLUMNS = (("rank", "INTEGER"), ("head", "STRING"), ("relation", "STRING"),
                    ("tail", "STRING"), ("score", "FLOAT"), ("source", "STRING"))


def relay_procedures() -> list[Procedure]:
    """``ask`` and ``askEvidence``: the question goes to ``kgdb serve`` (its ``/relay/*``
    endpoints) with the calling database as the tenant; one row per answer or evidence row."""
    out = []
    for name, path, columns, what in (
            ("ask", "/relay/ask", ASK_COLUMNS, "The answer, its solver and evidence."),
            ("askEvidence", "/relay/ask-evidence", EVIDENCE_COLUMNS,
             "The evidence rows a solver finds, without an answer.")):
        outputs = ", ".join(f"{c} :: {t}" for c, t in columns)
        out.append(Procedure(
            "procedure", f"kgdb.{name}",
            f"kgdb.{name}(question :: STRING, options = {{}} :: MAP) :: ({outputs})",
            _relay(path, columns), description=f"{what} (relayed to the kgdb service)."))
    return out


def ruleset_procedure(dialect: Dialect, name: str, rules: RuleSet) -> Procedure:
    """``custom.kgdb.rules.<name>(facts)``: the rule set's ask-time statement, its constants as
    literals; one row per conclusion."""
    if not RULESET_NAME.match(name):
        raise ProcedureDefinitionError(
            f"rule set name {name[:80]!r} cannot name a procedure: use a letter then letters, "
            "digits or '_' (2 to 63 characters), e.g. --rules hypertension=FILE")
    statement = cy_rules.evaluate_facts(dialect, rules, detail=True)
    return Procedure(
        "procedure", f"kgdb.rules.{name}",
        f"kgdb.rules.{name}(facts :: MAP) :: (concept :: STRING, type :: STRING, "
        "name :: STRING, predicate :: STRING, rule :: STRING)",
        inline_params(statement, keep={"facts"}),
        description=f"Rule set {name}: the concepts the facts belong to.")


def catalogue(dialect: Dialect, rulesets: dict[str, RuleSet], *, chunks: bool) -> list[Procedure]:
    """Everything ``kgdb procedures install`` installs, by name."""
    procedures = [entities_by_text(dialect), *nearest_procedures(dialect, chunks=chunks), embed_function(),
                  *relay_procedures()]
    procedures += [ruleset_procedure(dialect, name, rules) for name, rules in sorted(rulesets.items())]
    return procedures


# ---------------------------------------------------------------------- administration
def installed_description(procedure: Procedure, stamp: str) -> str:
    """The description an install gives ``procedure``: its text, digest and the install's
    ``stamp``, so that SHOW PROCEDURES tells this install's registration from a stale one
    (a dropped procedure stays listed until restart, and fails when called)."""
    return f"{procedure.description} [kgdb {procedure.digest[:12]} {stamp}]"


def install(procedure: Procedure, database: str, stamp: str) -> Statement:
    """Install (or replace) ``procedure`` for ``database``; run it on the system database."""
    if procedure.kind == "function":
        # forceSingle: the first row's one column is the value (a list result would be
        # wrapped in a list of rows otherwise, as APOC Extended 5.26.0 does)
        return Statement("CALL apoc.custom.installFunction($signature, $body, $database, true, "
                         "$description)",
                         {"signature": procedure.signature, "body": procedure.body,
                          "database": database,
                          "description": installed_description(procedure, stamp)},
                         write=True, idempotent=True)
    return Statement("CALL apoc.custom.installProcedure($signature, $body, $database, $mode, "
                     "$description)",
                     {"signature": procedure.signature, "body": procedure.body,
                      "database": database, "mode": procedure.mode,
                      "description": installed_description(procedure, stamp)},
                     write=True, idempotent=True)


def drop(kind: str, name: str, database: str) -> Statement:
    """Drop one installed procedure or function; run it on the system database."""
    call = "apoc.custom.dropFunction" if kind == "function" else "apoc.custom.dropProcedure"
    return Statement(f"CALL {call}($name, $database)", {"name": name, "database": database},
                     write=True, idempotent=True)


def installed() -> Statement:
    """The custom procedures and functions of the current database: rows ``kind, name,
    body, mode``."""
    return Statement("CALL apoc.custom.list() YIELD type, name, statement, mode\n"
                     "RETURN type AS kind, name, statement AS body, mode\n"
                     "ORDER BY name")


def callable_names() -> list[Statement]:
    """``custom.kgdb.*`` procedures, then functions, as the database has registered them:
    rows ``name, description`` (two statements: SHOW commands do not combine with UNION)."""
    return [Statement(f"SHOW {kind} YIELD name, description "
                      "WHERE name STARTS WITH 'custom.kgdb.'\nRETURN name, description")
            for kind in ("PROCEDURES", "FUNCTIONS")]


def service_settings() -> Statement:
    """The kgdb service's URL and token as APOC reads them from apoc.conf: rows ``url,
    token``."""
    return Statement("RETURN apoc.static.get('kgdb.url') AS url, "
                     "apoc.static.get('kgdb.token') AS token")


def current_database() -> Statement:
    return Statement("CALL db.info() YIELD name RETURN name")


def record(procedures: Sequence[Procedure], version: str, at: str) -> Statement:
    """Replace the catalog nodes with one per installed procedure (what a DBA queries)."""
    rows: list[dict[str, Any]] = [
        {"key": META_PREFIX + p.name, "name": p.called_as, "kind": p.kind,
         "signature": "custom." + p.signature, "sha256": p.digest, "description": p.description}
        for p in procedures]
    meta = f"(m:{META_LABEL})"
    return Statement(
        f"MATCH {meta} WHERE m.key STARTS WITH $prefix AND NOT m.key IN $keys\n"
        "DETACH DELETE m\n"
        "WITH count(*) AS removed\n"
        f"UNWIND $rows AS row\nMERGE (m:{META_LABEL} {{key: row.key}})\n"
        "SET m.name = row.name, m.kind = row.kind, m.signature = row.signature, "
        "m.sha256 = row.sha256, m.description = row.description, m.kgdb_version = $version, "
        "m.installed_at = $at",
        {"prefix": META_PREFIX, "keys": [r["key"] for r in rows], "rows": rows,
         "version": version, "at": at}, write=True, idempotent=True)


def recorded() -> Statement:
    """The catalog nodes: rows ``name, kind, signature, sha256, kgdb_version, installed_at``."""
    return Statement(
        f"MATCH (m:{META_LABEL}) WHERE m.key STARTS WITH $prefix\n"
        "RETURN m.name AS name, m.kind AS kind, m.signature AS signature, m.sha256 AS sha256, "
        "m.kgdb_version AS kgdb_version, m.installed_at AS installed_at\nORDER BY name",
        {"prefix": META_PREFIX})


def forget() -> Statement:
    return Statement(f"MATCH (m:{META_LABEL}) WHERE m.key STARTS WITH $prefix DETACH DELETE m",
                     {"prefix": META_PREFIX}, write=True, idempotent=True)


def call_relay(name: str, question: str, options: dict[str, Any]) -> Statement:
    """``CALL custom.kgdb.ask`` or ``askEvidence`` as a client sends it (kgdb bench
    procedures)."""
    if name not in ("ask", "askEvidence"):
        raise ProcedureDefinitionError(f"no relayed procedure {name!r}")
    return Statement(f"CALL custom.kgdb.{name}($question, $options)",
                     {"question": question, "options": options})


def call_entities(text: str, top_k: int, *, native: bool) -> Statement:
    """``CALL kgdb.entities`` (the plugin's, ``native``) or ``custom.kgdb.entities`` (APOC
    Extended's) as a BI tool sends it (kgdb bench bi)."""
    name = "kgdb.entities" if native else "custom.kgdb.entities"
    return Statement(f"CALL {name}($text, $topK) YIELD rank, id, name RETURN rank, id, name",
                     {"text": text, "topK": int(top_k)})


def call_ruleset(name: str, facts: dict[str, Any]) -> Statement:
    """``CALL custom.kgdb.rules.<name>($facts)`` as a BI tool sends it (kgdb bench bi)."""
    if not RULESET_NAME.match(name):
        raise ProcedureDefinitionError(f"rule set name {name[:80]!r} cannot name a procedure")
    return Statement(f"CALL custom.kgdb.rules.{name}($facts) YIELD concept RETURN concept",
                     {"facts": facts})
