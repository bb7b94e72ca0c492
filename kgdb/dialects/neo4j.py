"""Neo4j 5.26 LTS and later (Cypher 5)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from kgdb.dialects.base import Dialect, IndexInfo, Plugin, VectorIndexOptions
from kgdb.statement import Operation, Statement

_VARIABLE = re.compile(r"\$?[A-Za-z_][A-Za-z0-9_]*")
"""A Cypher variable or parameter: what reduce() may index per element without a store read."""

_INDEX_KINDS = {"RANGE": "range", "FULLTEXT": "fulltext", "VECTOR": "vector", "LOOKUP": "lookup",
                "TEXT": "text", "POINT": "point"}


class Neo4jDialect(Dialect):
    NAME: ClassVar[str] = "neo4j"

    BACKTICK_IN_IDENTIFIERS: ClassVar[bool] = True
    """Neo4j parses a doubled backtick inside a quoted name (cypher-manual/5/syntax/naming)."""

    VECTOR_VALUE: ClassVar[str] = "{}"
    """Vectors are plain LIST<FLOAT> properties (cypher-manual/5/indexes/semantic-indexes/vector-indexes)."""

    FULLTEXT_SPECIAL: ClassVar[str] = '+-&|!(){}[]^"~*?:\\/'
    """Lucene query-parser special characters (Lucene classic QueryParser syntax)."""

    FULLTEXT_OR: ClassVar[str] = " OR "

    LEXICAL_SCORER: ClassVar[str] = (
        "BM25: Lucene's BM25Similarity (k1 1.2, b 0.75; the default similarity, which "
        "Neo4j's full-text indexes do not change), per field, summed over the fields; "
        "analyzer 'english' (Lucene's EnglishAnalyzer: standard tokenizer, possessives "
        "removed, lower case, Lucene's English stop words, Porter stemmer)")

    EXISTENCE_CONSTRAINTS: ClassVar[bool] = True
    """``REQUIRE n.p IS NOT NULL`` exists in Cypher 5, but only Enterprise Edition creates it:
    Community answers Neo.DatabaseError.Schema.ConstraintCreationFailed "Property existence
    constraint requires Neo4j Enterprise Edition" (5.26.5; cypher-manual/5/constraints), so
    kgdb asks the edition first."""

    PLUGINS: ClassVar[tuple[Plugin, ...]] = (
        Plugin("apoc", "APOC", "apoc.version", function=True),
        # APOC Extended has no version function of its own; apoc.custom.* lives only there.
        Plugin("apoc-extended", "APOC Extended", "apoc.custom.installProcedure", function=False),
        Plugin("gds", "Graph Data Science", "gds.version", function=True),
        Plugin("kgdb", "kgdb plugin", "kgdb.version", function=True),
    )
    """APOC Core, APOC Extended and GDS: what kgdb's Neo4j extras build on; kgdb's own plugin
    (``neo4j-plugin/``), the native back end of the slow paths."""

    PROCEDURES: ClassVar[str] = "apoc-custom"
    """``custom.kgdb.*`` through ``apoc.custom.installProcedure`` (APOC Extended; not on
    Aura): Cypher bodies, stored in the system database."""

    def score_to_l2(self, score: str) -> str:
        # Neo4j's euclidean vector score is 1 / (1 + d^2) (vector-indexes page, "similarity
        # functions"), so d = sqrt(1/score - 1).
        return f"sqrt(1.0 / {score} - 1.0)"

    def l2_distance(self, stored: str, query: str) -> str:
        # vector.similarity.euclidean uses the same 1 / (1 + d^2) normalisation
        # (cypher-manual/5/functions/vector).
        return f"sqrt(1.0 / vector.similarity.euclidean({stored}, {query}) - 1.0)"

    def subquery(self, imports: Sequence[str], body: str) -> str:
        # The scoped form CALL (x) { ... } (5.23+); the importing-WITH form is deprecated.
        return f"CALL ({', '.join(imports)}) {{\n{body}\n}}"

    # ------------------------------------------------------------------ DDL
    # Every DDL statement says IF NOT EXISTS / IF EXISTS, so it is idempotent: the driver may
    # retry it (concurrent first loads and schema applies deadlock on the schema lock, as
    # tests/live/test_hostile_concurrency.py shows on Neo4j).
    def create_range_index(self, label: str, prop: str) -> list[Operation]:
        name = self.ident(self.index_name(label, prop, "range"))
        return [Statement(
            f"CREATE INDEX {name} IF NOT EXISTS FOR (n:{self.ident(label)}) ON (n.{self.ident(prop)})",
            write=True, idempotent=True)]

    def create_unique_constraint(self, label: str, prop: str) -> list[Operation]:
        return self._constraint(label, prop, "unique", "IS UNIQUE")

    def create_existence_constraint(self, label: str, prop: str) -> list[Operation]:
        return self._constraint(label, prop, "exists", "IS NOT NULL")

    def _constraint(self, label: str, prop: str, kind: str, requirement: str) -> list[Operation]:
        name = self.ident(self.index_name(label, prop, kind))
        return [Statement(
            f"CREATE CONSTRAINT {name} IF NOT EXISTS FOR (n:{self.ident(label)}) "
            f"REQUIRE n.{self.ident(prop)} {requirement}", write=True, idempotent=True)]

    def create_fulltext_index(self, label: str, props: Sequence[str]) -> list[Operation]:
        name = self.ident(self.index_name(label, "text", "fulltext"))
        fields = ", ".join(f"n.{self.ident(p)}" for p in props)
        return [Statement(
            f"CREATE FULLTEXT INDEX {name} IF NOT EXISTS FOR (n:{self.ident(label)}) ON EACH [{fields}]",
            write=True, idempotent=True)]

    def lexical_index(self, label: str, props: Sequence[str], stopwords: Sequence[str]
                      ) -> list[Operation]:
        # The 'english' analyzer has its own stop words (Lucene's English set, which
        # kgdb.retrieve.keyword.STOPWORDS copies), so ``stopwords`` is not passed; Neo4j
        # keeps this index beside the label's kgdb_<label>_text_fulltext index (any number
        # of full-text indexes per label; cypher-manual/5/indexes/semantic-indexes/
        # full-text-indexes, "Create full-text indexes", fulltext.analyzer).
        name = self.ident(self.index_name(label, "lexical", "fulltext"))
        fields = ", ".join(f"n.{self.ident(p)}" for p in props)
        return [Statement(
            f"CREATE FULLTEXT INDEX {name} IF NOT EXISTS FOR (n:{self.ident(label)}) "
            f"ON EACH [{fields}] OPTIONS {{indexConfig: {{`fulltext.analyzer`: 'english'}}}}",
            write=True, idempotent=True)]

    def lexical_index_ready(self, infos: Sequence[IndexInfo], label: str,
                            props: Sequence[str]) -> bool:
        name = self.index_name(label, "lexical", "fulltext")
        return any(i.name == name and i.kind == "fulltext" and set(i.properties) == set(props)
                   and i.options.get("analyzer") == "english" for i in infos)

    def lexical_stale(self, infos: Sequence[IndexInfo], label: str,
                      props: Sequence[str]) -> list[IndexInfo]:
        name = self.index_name(label, "lexical", "fulltext")
        return [i for i in infos if i.name == name
                and not self.lexical_index_ready([i], label, props)]

    def lexical_search(self, label: str) -> str:
        index = self.string_literal(self.index_name(label, "lexical", "fulltext"))
        return (f"CALL db.index.fulltext.queryNodes({index}, $query, {{limit: $k}}) "
                "YIELD node, score")

    def create_vector_index(self, label: str, prop: str, dimension: int, *,
                            relationship: bool = False,
                            options: VectorIndexOptions | None = None) -> list[Operation]:
        name = self.ident(self.index_name(label, prop,
                                          "rel_vector" if relationship else "vector"))
        target = f"()-[n:{self.ident(label)}]-()" if relationship else f"(n:{self.ident(label)})"
        # Index options are part of the DDL, not data: the dimension is a checked int.
        # Quantization is off: 5.26 enables it by default (vector-2.0 provider), and its scores
        # are then approximations (docs/design/exact-vector-search.md). Without it the scores
        # give exact L2 and the brute-force order
        # (tests/live/test_graph_store.py::test_vector_search_distances_are_exact_l2).
        # ``options`` turn it on (and set the HNSW graph's m and ef_construction, 5.26's
        # vector.hnsw.* settings) for an index whose proposals are re-ranked exactly from
        # the stored vectors: kgdb neo4j import of a large graph (docs/engines/neo4j-import.md).
        dim = int(dimension)
        options = options or VectorIndexOptions()
        config = (f"`vector.dimensions`: {dim}, `vector.similarity_function`: 'euclidean', "
                  f"`vector.quantization.enabled`: {'true' if options.quantization else 'false'}")
        for key, value in (("vector.hnsw.m", options.m),
                           ("vector.hnsw.ef_construction", options.ef_construction)):
            if value is not None:
                config += f", `{key}`: {int(value)}"
        return [Statement(
            f"CREATE VECTOR INDEX {name} IF NOT EXISTS FOR {target} "
            f"ON (n.{self.ident(prop)}) OPTIONS {{indexConfig: {{{config}}}}}",
            write=True, idempotent=True)]

    def drop_index(self, info: IndexInfo) -> list[Operation]:
        if info.kind in ("unique", "exists"):
            return [Statement(f"DROP CONSTRAINT {self.ident(info.name)} IF EXISTS", write=True,
                              idempotent=True)]
        return [Statement(f"DROP INDEX {self.ident(info.name)} IF EXISTS", write=True, idempotent=True)]

    def find_functions(self, names: Sequence[str]) -> Statement | None:
        return Statement("SHOW FUNCTIONS YIELD name WHERE name IN $names RETURN name",
                         {"names": list(names)})

    def find_procedures(self, names: Sequence[str]) -> Statement | None:
        return Statement("SHOW PROCEDURES YIELD name WHERE name IN $names RETURN name",
                         {"names": list(names)})

    def list_databases(self) -> Statement:
        """The databases of the DBMS (run on any database, e.g. ``system``)."""
        return Statement("SHOW DATABASES YIELD name, type, currentStatus "
                         "RETURN name, type, currentStatus")

    def components(self) -> Statement:
        return Statement("CALL dbms.components() YIELD name, versions, edition "
                         "RETURN name, versions, edition")

    def await_indexes(self) -> Statement | None:
        return Statement("CALL db.awaitIndexes($seconds)", {"seconds": 300})

    def list_indexes(self) -> Statement:
        return Statement(
            "SHOW INDEXES YIELD name, type, entityType, labelsOrTypes, properties, state, options, "
            "owningConstraint RETURN name, type, entityType, labelsOrTypes, properties, state, "
            "options, owningConstraint"
        )

    def parse_indexes(self, rows: list[dict[str, Any]]) -> list[IndexInfo]:
        infos = []
        for row in rows:
            if row.get("owningConstraint"):
                continue
            config = (row.get("options") or {}).get("indexConfig") or {}
            options = {}
            if "fulltext.analyzer" in config:
                options["analyzer"] = config["fulltext.analyzer"]
            if "vector.dimensions" in config:
                options["dimension"] = config["vector.dimensions"]
                options["similarity"] = config.get("vector.similarity_function")
            infos.append(IndexInfo(
                kind=_INDEX_KINDS.get(str(row["type"]), str(row["type"]).lower()),
                entity="node" if row["entityType"] == "NODE" else "relationship",
                label=(row.get("labelsOrTypes") or [""])[0],
                properties=tuple(row.get("properties") or ()),
                state=str(row.get("state", "ONLINE")),
                name=str(row["name"]),
                options=options,
            ))
        return infos

    def list_constraints(self) -> Statement:
        return Statement(
            "SHOW CONSTRAINTS YIELD name, type, entityType, labelsOrTypes, properties "
            "RETURN name, type, entityType, labelsOrTypes, properties"
        )

    def parse_constraints(self, rows: list[dict[str, Any]]) -> list[IndexInfo]:
        return [
            IndexInfo(
                kind=_constraint_kind(str(row["type"])),
                entity="node" if row["entityType"] == "NODE" else "relationship",
                label=(row.get("labelsOrTypes") or [""])[0],
                properties=tuple(row.get("properties") or ()),
                name=str(row["name"]),
            )
            for row in rows
        ]

    # ------------------------------------------------------------------ search
    VECTOR_SEARCH: ClassVar[str] = ("approximate: Lucene HNSW index, max(4k, 64) proposed, "
                                     "exact L2 re-rank in Cypher")

    def vector_search_call(self, label: str, prop: str, k: str, vector: str) -> str:
        index = self.string_literal(self.index_name(label, prop, "vector"))
        return (f"CALL db.index.vector.queryNodes({index}, {self.vector_beam(k)}, {vector}) "
                "YIELD node, score")

    def relationship_vector_search_call(self, rel_type: str, prop: str, k: str,
                                        vector: str) -> str:
        index = self.string_literal(self.index_name(rel_type, prop, "rel_vector"))
        return (f"CALL db.index.vector.queryRelationships({index}, {self.vector_beam(k)}, "
                f"{vector}) "
                "YIELD relationship, score")

    def cosine_similarity(self, a: str, b: str) -> str:
        # vector.similarity.cosine is (1 + cos) / 2, in [0, 1], like the index's cosine score
        # (cypher-manual/5/functions/vector: "identical to ... the vector index provider").
        return f"(2.0 * vector.similarity.cosine({a}, {b}) - 1.0)"

    def fulltext_search_call(self, label: str, props: Sequence[str], query: str) -> str:
        index = self.string_literal(self.index_name(label, "text", "fulltext"))
        return f"CALL db.index.fulltext.queryNodes({index}, {query}) YIELD node, score"

    def exact_nearest(self, label: str, prop: str, k: str, vector: str, prepared: str) -> str:
        # The stored vector is read once per proposed node, into a variable, and reduce()
        # indexes that list. With the property access inside reduce(), node.embedding[i]
        # reads the whole LIST<FLOAT> from the store again for every i (64 x 384 db hits for
        # 64 proposals; docs/design/neo4j-latency.md, "Without the plugin"). The
        # planner had cached the property (CacheProperties) only while the distance shared
        # its projection with node.id and node.name, before the distance moved into
        # exact_nearest (18e0cd4); binding it here does not depend on the planner. The
        # distances are the same bits either way.
        call = self.vector_search_call(label, prop, k, vector)
        distance = self.exact_l2_prepared("stored", "query")
        return (f"{call}\nWITH node, node.{self.ident(prop)} AS stored, {prepared} AS query\n"
                f"WITH node, {distance} AS distance")

    # --- simgrag: exact distances for Graph Semantic Distance
    def exact_l2_prepared(self, stored: str, prepared: str) -> str:
        """Sum of squares over the LIST<FLOAT> property: the 1/(1+d^2) similarity loses d < 2.4e-4.

        shared/dialects.md section 3.1 ("Exact L2 from the score"): re-rank with reduce().
        Both arguments must be variables or parameters, never a property access: reduce()
        evaluates ``stored[i]`` once per element, and ``node.embedding[i]`` reads the
        whole property from the store each time (see :meth:`exact_nearest`).
        """
        for what, expr in (("stored", stored), ("prepared", prepared)):
            if not _VARIABLE.fullmatch(expr):
                raise ValueError(f"exact_l2_prepared: {what} must be a variable or a parameter "
                                 f"(bind {expr!r} with WITH first): reduce() would evaluate it "
                                 "once per element")
        return (f"sqrt(reduce(acc = 0.0, i IN range(0, size({prepared}) - 1) | "
                f"acc + ({stored}[i] - {prepared}[i]) ^ 2))")


class Neo4jNativeDialect(Neo4jDialect):
    """Neo4j with kgdb's own plugin loaded (``neo4j-plugin/``, found by
    :meth:`kgdb.engine.neo4j.Neo4jStore.detect_plugin`): the same Cypher, with the slow parts
    replaced by the plugin's functions and procedures, each proven equal to the Cypher it
    replaces (tests/live/test_neo4j_plugin.py)."""

    NATIVE: ClassVar[str | None] = "kgdb plugin"
    VECTOR_SEARCH: ClassVar[str] = (
        "exact: kgdb.nearestNodes screens an in-memory copy of the index's vectors by a lower "
        "bound on principal axes (state: kgdb.vectorIndexes()), the index only where that copy "
        "would not fit the heap")
    SIMGRAG_MATCH: ClassVar[str | None] = "kgdb.simgrag.match"
    SIMGRAG_SEARCH: ClassVar[str | None] = "kgdb.simgrag.search"
    PPR: ClassVar[str | None] = "kgdb.ppr"

    def exact_l2_prepared(self, stored: str, prepared: str) -> str:
        # The same double arithmetic as reduce() (bit-identical), in Java.
        return f"kgdb.l2({stored}, {prepared})"

    def exact_nearest(self, label: str, prop: str, k: str, vector: str, prepared: str) -> str:
        # One call: the index proposes max(4k, 64) like vector_search_call, the procedure
        # reads the stored vectors and returns the k nearest by exact L2 (with ties at the k-th).
        index = self.string_literal(self.index_name(label, prop, "vector"))
        return f"CALL kgdb.nearestNodes({index}, {vector}, {k}) YIELD node, distance"


def _constraint_kind(neo4j_type: str) -> str:
    """``UNIQUENESS``/``NODE_PROPERTY_UNIQUENESS`` -> unique, ``NODE_PROPERTY_EXISTENCE`` ->
    exists, anything else lower-cased (node keys, property types: Enterprise only)."""
    if "UNIQUE" in neo4j_type:
        return "unique"
    if neo4j_type.endswith("PROPERTY_EXISTENCE"):
        return "exists"
    return neo4j_type.lower()
