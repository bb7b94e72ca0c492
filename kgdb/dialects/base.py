"""What differs between engines: one :class:`Dialect` per engine (neo4j.py, falkordb.py), the
common parts here. The methods an engine must provide are abstract, so a third engine sees its
contract; statements are built in :mod:`kgdb.cypher` from these pieces (DDL, vector and
full-text calls, score conversions, subqueries, engine commands). Identifiers go through
:func:`quote_identifier`, values are always parameters.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kgdb.errors import InvalidIdentifierError, UnsupportedFeatureError
from kgdb.statement import EngineCommand, Operation, Statement

_MAX_IDENTIFIER = 256


@dataclass(frozen=True)
class VectorIndexOptions:
    """How an approximate vector index is built, where the default does not fit the data
    (``kgdb neo4j import`` of a large graph: docs/engines/neo4j-import.md). ``None`` leaves a
    setting to the engine."""

    quantization: bool = False
    """Search int8-quantized vectors (their scores are then approximations: only for an index
    whose proposals kgdb re-ranks exactly from the stored vectors)."""
    m: int | None = None
    """HNSW: neighbours per node (Neo4j 5.26's ``vector.hnsw.m``, 16 by default)."""
    ef_construction: int | None = None
    """HNSW: the beam while inserting (``vector.hnsw.ef_construction``, 100 by default)."""

    def to_json(self) -> dict[str, object]:
        return {"quantization": self.quantization, "m": self.m,
                "ef_construction": self.ef_construction}


def quote_identifier(name: str, *, allow_backtick: bool = True) -> str:
    """Quote a label, relationship type or property key for Cypher.

    This is kgdb's injection boundary for identifiers: the name is always wrapped in
    backticks, and a backtick inside it is doubled (Cypher's escape). Engines that cannot
    parse a doubled backtick (FalkorDB) pass ``allow_backtick=False`` and such names are
    rejected instead of being mangled.
    """
    if not isinstance(name, str) or not name:
        raise InvalidIdentifierError("an identifier (label, type or key) cannot be empty")
    if "\x00" in name:
        raise InvalidIdentifierError(f"identifier {name!r} contains a NUL character")
    if len(name) > _MAX_IDENTIFIER:
        raise InvalidIdentifierError(
            f"identifier {name[:40]!r}... is longer than {_MAX_IDENTIFIER} characters"
        )
    if "`" in name:
        if not allow_backtick:
            raise InvalidIdentifierError(
                f"identifier {name!r} contains a backtick, which this engine cannot quote"
            )
        name = name.replace("`", "``")
    return f"`{name}`"


@dataclass(frozen=True)
class IndexInfo:
    """An index or constraint as an engine reports it, normalised across dialects."""

    kind: str
    """One of ``range``, ``fulltext``, ``vector``, ``unique``, ``lookup``."""
    entity: str
    """``node`` or ``relationship``."""
    label: str
    properties: tuple[str, ...]
    state: str = "ONLINE"
    name: str = ""
    options: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> tuple[str, str, str, tuple[str, ...]]:
        return (self.kind, self.entity, self.label, self.properties)

    @property
    def dimension(self) -> int | None:
        dim = self.options.get("dimension")
        return int(dim) if dim is not None else None


@dataclass(frozen=True)
class Plugin:
    """A procedure library an engine may have loaded, found by one function or procedure."""

    name: str
    """Its short name in ``kgdb stats --json`` (``apoc``, ``apoc-extended``, ``gds``)."""
    title: str
    probe: str
    """The qualified name whose presence shows the library is loaded."""
    function: bool
    """True when ``probe`` is a function returning the library's version (``apoc.version``);
    False when it is a procedure that only shows presence."""


@dataclass(frozen=True)
class BulkNodes:
    """New nodes for a bulk insert (:meth:`Dialect.bulk_insert`), all with the same label and
    property keys: ``rows`` holds one tuple of strings per node (one per key of ``strings``),
    ``vectors`` one row of floats per node, stored under ``vector_key`` as a list."""

    label: str
    strings: tuple[str, ...]
    rows: Sequence[Sequence[str]]
    vector_key: str | None = None
    vectors: Any = None
    """A ``(len(rows), dimension)`` float array, or None."""


@dataclass(frozen=True)
class BulkEdges:
    """New relationships of one type for a bulk insert: ``pairs`` is an ``(m, 2)`` integer
    array of (source, target) internal node ids; no properties."""

    type: str
    pairs: Any


class Dialect(abc.ABC):
    """Turns kgdb's needs into Cypher for one engine. Subclasses set the flags below."""

    NAME: ClassVar[str] = "base"
    """The dialect's name on the command line (``--dialect``)."""

    BACKTICK_IN_IDENTIFIERS: ClassVar[bool] = True
    """Whether a doubled backtick inside a quoted identifier parses."""

    VECTOR_VALUE: ClassVar[str] = "{}"
    """How a list parameter becomes a stored vector (FalkorDB needs ``vecf32(...)``)."""

    STRING_UNICODE_ESCAPES: ClassVar[bool] = True
    """Whether string literals read ``\\uXXXX`` escapes (kgdb.cypher.literals)."""

    FULLTEXT_SPECIAL: ClassVar[str] = ""
    """Characters of the full-text query language that are escaped in user text."""

    FULLTEXT_OR: ClassVar[str] = " OR "
    """How alternatives are joined in a full-text query."""

    FULLTEXT_AND: ClassVar[str] = " AND "
    """How words that must all occur are joined in a full-text query."""

    LEXICAL_SCORER: ClassVar[str] = ""
    """What scores a match of the lexical (full-text) index over chunks: ``kgdb index
    fulltext``, the ``keyword`` solver and the lexical parts of ``hybrid`` and ``ppr``."""

    UNIQUE_NEEDS_RANGE_INDEX: ClassVar[bool] = False
    """Whether a uniqueness constraint needs its own range index created first."""

    EXISTENCE_CONSTRAINTS: ClassVar[bool] = False
    """Whether the dialect can express a property-existence (NOT NULL) constraint; an edition
    may still lack it (Neo4j Community; see GraphStore.supports_existence_constraints)."""

    PLUGINS: ClassVar[tuple[Plugin, ...]] = ()
    """Procedure libraries ``kgdb stats`` looks for."""

    PROCEDURES: ClassVar[str] = ""
    """How kgdb installs itself in the engine (``kgdb procedures``): ``apoc-custom`` (APOC
    Extended custom procedures) or ``udf`` (a JavaScript UDF library); empty: not at all."""

    BULK_INSERT: ClassVar[bool] = False
    """Whether the engine has a bulk-insert command that builds a new graph from binary rows
    (:meth:`bulk_insert`); ``kgdb load triples --mode bulk`` uses it, else CREATE batches."""

    def bulk_insert(self, *, begin: bool, nodes: BulkNodes | None = None,
                    edges: Sequence[BulkEdges] = ()) -> EngineCommand:
        """One bulk-insert command: ``begin`` creates the graph (its key must not exist);
        later ones add to it. Nodes get the next internal ids in order."""
        raise UnsupportedFeatureError("a bulk insert", self.NAME)

    def bulk_label_ok(self, name: str) -> bool:
        """Whether ``name`` can be a label or type in :meth:`bulk_insert` (else use Cypher)."""
        return False

    def bulk_entity_at(self, node_id: int) -> Statement:
        """The ``id`` of the entity with internal id ``node_id`` (a bulk load checks that the
        engine numbered its nodes as the loader did): rows ``id``."""
        raise UnsupportedFeatureError("a bulk insert", self.NAME)

    def bulk_lists_to_vectors(self, first: int, last: int) -> Statement:
        """Store the list embeddings of the entities with internal ids ``first..last`` as
        vectors (a bulk insert has no vector type)."""
        raise UnsupportedFeatureError("a bulk insert", self.NAME)

    # ------------------------------------------------------------------ identifiers
    def ident(self, name: str) -> str:
        """Quote an identifier for this engine (see :func:`quote_identifier`)."""
        return quote_identifier(name, allow_backtick=self.BACKTICK_IN_IDENTIFIERS)

    def map_key_ok(self, key: str) -> bool:
        """Whether ``key`` can be a key of a map parameter (for ``$map[key]`` lookups)."""
        return True

    def labels(self, names: Iterable[str]) -> str:
        """``:`A`:`B``` for a label set."""
        return "".join(":" + self.ident(n) for n in names)

    # ------------------------------------------------------------------ expressions
    def vector_value(self, expr: str) -> str:
        """The expression that stores the list ``expr`` as a vector property."""
        return self.VECTOR_VALUE.format(expr)

    @abc.abstractmethod
    def score_to_l2(self, score: str) -> str:
        """Turn a vector-index ``score`` into the exact L2 (euclidean) distance."""
        raise NotImplementedError

    @abc.abstractmethod
    def l2_distance(self, stored: str, query: str) -> str:
        """L2 distance between a stored vector property and a list parameter."""
        raise NotImplementedError

    @abc.abstractmethod
    def subquery(self, imports: Sequence[str], body: str) -> str:
        """A correlated subquery that imports ``imports`` from the outer query."""
        raise NotImplementedError

    @staticmethod
    def all_distinct(variables: Sequence[str]) -> list[str]:
        """Pairwise ``a <> b`` predicates.

        Needed for isomorphic matching: neither engine enforces node distinctness, and
        FalkorDB does not enforce relationship uniqueness in fixed-length patterns
        (shared/dialects.md section 4.3), so both are stated explicitly.
        """
        return [
            f"{a} <> {b}"
            for i, a in enumerate(variables)
            for b in variables[i + 1 :]
        ]

    def fulltext_query_text(self, text: str, *, every_word: bool = False) -> str:
        """Escape free text into a query of its words for the engine's full-text syntax: any
        word (OR), or ``every_word`` (AND). Empty when no word is left."""
        words = [w for w in re.split(r"\s+", text.strip()) if w]
        escaped = []
        for word in words:
            out = "".join("\\" + ch if ch in self.FULLTEXT_SPECIAL else ch for ch in word)
            if out.strip("\\"):
                escaped.append(out)
        return (self.FULLTEXT_AND if every_word else self.FULLTEXT_OR).join(escaped)

    @staticmethod
    def string_literal(text: str) -> str:
        """A single-quoted Cypher string literal, for identifiers that procedures take as strings.

        Only for names kgdb itself validated (labels, keys, generated index names); data
        values are always parameters.
        """
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

    # ------------------------------------------------------------------ names
    @staticmethod
    def index_name(label: str, prop: str, kind: str) -> str:
        """A stable index name, e.g. ``entity_embedding_vector``."""
        base = re.sub(r"[^0-9A-Za-z]+", "_", f"{label}_{prop}_{kind}").strip("_").lower()
        return f"kgdb_{base}"

    # ------------------------------------------------------------------ DDL
    @abc.abstractmethod
    def create_range_index(self, label: str, prop: str) -> list[Operation]:
        raise NotImplementedError

    @abc.abstractmethod
    def create_unique_constraint(self, label: str, prop: str) -> list[Operation]:
        raise NotImplementedError

    @abc.abstractmethod
    def create_fulltext_index(self, label: str, props: Sequence[str]) -> list[Operation]:
        raise NotImplementedError

    @abc.abstractmethod
    def create_vector_index(self, label: str, prop: str, dimension: int, *,
                            relationship: bool = False,
                            options: VectorIndexOptions | None = None) -> list[Operation]:
        """A vector index (L2) on ``label.prop``; with ``relationship``, ``label`` is a
        relationship type and the index is on that type's relationships; ``options``: how
        it is built (an engine that cannot set them raises UnsupportedFeatureError)."""
        raise NotImplementedError

    def create_existence_constraint(self, label: str, prop: str) -> list[Operation]:
        """A NOT NULL constraint on ``label.prop`` (only where EXISTENCE_CONSTRAINTS)."""
        raise UnsupportedFeatureError("a property-existence constraint", self.NAME)

    @abc.abstractmethod
    def drop_index(self, info: IndexInfo) -> list[Operation]:
        raise NotImplementedError

    def await_indexes(self) -> Statement | None:
        """A statement that waits until new indexes are online, where the engine has one."""
        return None

    @abc.abstractmethod
    def list_indexes(self) -> Statement:
        raise NotImplementedError

    @abc.abstractmethod
    def parse_indexes(self, rows: list[dict[str, Any]]) -> list[IndexInfo]:
        raise NotImplementedError

    @abc.abstractmethod
    def list_constraints(self) -> Statement:
        raise NotImplementedError

    @abc.abstractmethod
    def parse_constraints(self, rows: list[dict[str, Any]]) -> list[IndexInfo]:
        raise NotImplementedError

    # ------------------------------------------------------------------ vector search
    @abc.abstractmethod
    def vector_search_call(self, label: str, prop: str, k: str, vector: str) -> str:
        """``CALL ... YIELD node, score`` over the vector index of ``label.prop``.

        ``k`` and ``vector`` are Cypher expressions (normally parameters). The call may yield
        more than ``k`` rows (FalkorDB over-fetches); follow it with ORDER BY distance LIMIT k.
        """
        raise NotImplementedError

    def exact_nearest(self, label: str, prop: str, k: str, vector: str, prepared: str) -> str:
        """Rows ``node, distance``: nodes of ``label`` near ``vector`` (a list expression;
        ``prepared`` is it made a vector with :meth:`vector_value`) with their exact L2
        distance from the stored vector. May yield more than ``k`` rows: follow it with ORDER
        BY distance LIMIT k. A dialect with a native procedure does both in one call."""
        call = self.vector_search_call(label, prop, k, vector)
        distance = self.exact_l2_prepared(f"node.{self.ident(prop)}", prepared)
        return f"{call}\nWITH node, {distance} AS distance"

    def nearest_top(self, label: str, prop: str, k: str, vector: str, prepared: str, *,
                    key: str = "id") -> str:
        """Rows ``node, distance``: the ``k`` nodes of ``label`` nearest ``vector`` by the
        exact L2 of :meth:`exact_nearest` (arguments as there), nearest first, ties by
        ``node.<key>``."""
        return (f"{self.exact_nearest(label, prop, k, vector, prepared)}\n"
                f"WITH node, distance\nORDER BY distance ASC, node.{self.ident(key)} ASC "
                f"LIMIT {k}")

    @property
    def full_scan(self) -> frozenset[str]:
        """The labels :meth:`exact_nearest` scans (every node's distance) instead of asking
        their approximate index; only FalkorDB has any (``KGDB_FULL_SCAN``)."""
        return frozenset()

    def exact_search(self, label: str) -> bool:
        """Whether :meth:`exact_nearest` over ``label`` finds the exact nearest nodes (all of
        them, not what an approximate index proposed): on Neo4j with kgdb's plugin always, on
        FalkorDB for a label small enough to scan (:attr:`full_scan`)."""
        return self.NATIVE is not None or label in self.full_scan

    VECTOR_OVERFETCH: ClassVar[int] = 4
    """An approximate index is asked for this many times k (and at least
    :attr:`VECTOR_BEAM_MIN`); callers ORDER BY the exact distance and LIMIT k."""

    VECTOR_BEAM_MIN: ClassVar[int] = 64
    """The fewest neighbours an approximate index is asked for. Lucene's HNSW uses the count
    as its beam (with k = 1 it returned a node that is not the nearest), and where many nodes
    tie at one distance (equal names) an index asked for 4k returns an arbitrary 4k of them,
    so the first k by (distance, id) depended on which (both found by the brute-force
    property tests in tests/live/test_simgrag_retrieval.py)."""

    def vector_beam(self, k: str) -> str:
        """The neighbour count to ask an approximate index for, for the Cypher expression
        ``k``: max(:attr:`VECTOR_OVERFETCH` k, :attr:`VECTOR_BEAM_MIN`)."""
        wide = f"{k} * {self.VECTOR_OVERFETCH}"
        return f"CASE WHEN {wide} > {self.VECTOR_BEAM_MIN} THEN {wide} ELSE {self.VECTOR_BEAM_MIN} END"

    VECTOR_SEARCH: ClassVar[str] = "vector index, exact re-rank of what it proposes"
    """How nearest-node candidates are found, for benchmark reports (is it exact?)."""

    NATIVE: ClassVar[str | None] = None
    """The native back end of this dialect (``kgdb plugin <version>`` on a Neo4j with kgdb's
    plugin), or None: every statement is plain Cypher."""

    SIMGRAG_MATCH: ClassVar[str | None] = None
    """The procedure that runs SimGRAG's top-k matching of one component in the database
    (:func:`kgdb.cypher.pattern.match_native`), or None."""

    SIMGRAG_SEARCH: ClassVar[str | None] = None
    """The procedure that runs one whole SimGRAG retrieval in one call: the candidate searches
    of every pattern text and the matching of every component
    (:func:`kgdb.cypher.link.simgrag_search`), or None."""

    PPR: ClassVar[str | None] = None
    """The procedure that runs personalized PageRank over the retrieval graph's stored
    projection (:func:`kgdb.cypher.pagerank.native_ppr_chunks`), or None."""

    @abc.abstractmethod
    def relationship_vector_search_call(self, rel_type: str, prop: str, k: str,
                                        vector: str) -> str:
        """``CALL ... YIELD relationship, score`` over the vector index of relationships of
        ``rel_type`` on ``prop`` (over-fetching like :meth:`vector_search_call`)."""
        raise NotImplementedError

    def vector_search_stored(self, label: str, prop: str, k: str, stored: str) -> str:
        """Like :meth:`vector_search_call`, with a vector property already stored on a node
        (``a.embedding``) as the query instead of a list parameter."""
        return self.vector_search_call(label, prop, k, stored)

    @abc.abstractmethod
    def cosine_similarity(self, a: str, b: str) -> str:
        """The cosine similarity of two stored vectors, in [-1, 1]."""
        raise NotImplementedError

    @abc.abstractmethod
    def fulltext_search_call(self, label: str, props: Sequence[str], query: str) -> str:
        """``CALL ... YIELD node, score`` over the full-text index of ``label``."""
        raise NotImplementedError

    # --- lexical retrieval: a full-text index with an English analyzer over chunks
    def lexical_query(self, terms: Sequence[str]) -> str:
        """A full-text query matching any of ``terms`` (words of letters, digits and ``_``
        only, from :func:`kgdb.retrieve.keyword.query_terms`), each scored. A term is
        escaped here too, so that even a term holding syntax stays data."""
        escaped = ["".join("\\" + ch if ch in self.FULLTEXT_SPECIAL else ch for ch in t)
                   for t in terms if t]
        return self.FULLTEXT_OR.join(escaped)

    def lexical_index(self, label: str, props: Sequence[str], stopwords: Sequence[str]
                      ) -> list[Operation]:
        """Create the lexical index over ``label``'s ``props``: English stemming, the
        ``stopwords`` removed."""
        raise UnsupportedFeatureError("a lexical (full-text) index", self.NAME)

    def lexical_index_ready(self, infos: Sequence[IndexInfo], label: str,
                            props: Sequence[str]) -> bool:
        """Whether ``infos`` (the store's indexes) hold the lexical index over ``label``'s
        ``props`` as :meth:`lexical_index` creates it."""
        return False

    def lexical_stale(self, infos: Sequence[IndexInfo], label: str,
                      props: Sequence[str]) -> list[IndexInfo]:
        """The indexes that must go before :meth:`lexical_index` can create it (on an
        engine with one full-text index per label, that label's other one)."""
        return []

    def lexical_search(self, label: str) -> str:
        """Rows ``node, score`` from the lexical index of ``label``, at least the ``$k`` best
        (more where the engine cannot cut: follow it with ORDER BY score DESC LIMIT $k), for
        the parameters ``$query`` (:meth:`lexical_query` of the words) and ``$terms`` (the
        words, each escaped like there)."""
        raise UnsupportedFeatureError("a lexical (full-text) search", self.NAME)

    # ------------------------------------------------------------------ plugins
    def find_functions(self, names: Sequence[str]) -> Statement | None:
        """Which of ``names`` are loaded functions (one ``name`` column), where the engine
        can list them; None otherwise."""
        return None

    def find_procedures(self, names: Sequence[str]) -> Statement | None:
        """Which of ``names`` are loaded procedures (one ``name`` column), or None."""
        return None

    # --- simgrag: exact distances for Graph Semantic Distance
    def exact_l2_distance(self, stored: str, query: str) -> str:
        """The L2 distance between a stored vector and a list, exact to float32 precision.

        GSD sums distances, so small ones must not be lost (shared/dialects.md section 3.1,
        "Exact L2 from the score").
        """
        return self.exact_l2_prepared(stored, self.vector_value(query))

    @abc.abstractmethod
    def exact_l2_prepared(self, stored: str, prepared: str) -> str:
        """Like :meth:`exact_l2_distance`, for a query already made a vector with
        :meth:`vector_value` (convert once per query, not once per row)."""
        raise NotImplementedError
