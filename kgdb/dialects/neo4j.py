"""Neo4j 5.26 LTS and later (Cypher 5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from kgdb.dialects.base import Dialect, IndexInfo
from kgdb.statement import Operation, Statement

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
    def create_range_index(self, label: str, prop: str) -> list[Operation]:
        name = self.ident(self.index_name(label, prop, "range"))
        return [Statement(
            f"CREATE INDEX {name} IF NOT EXISTS FOR (n:{self.ident(label)}) ON (n.{self.ident(prop)})",
            write=True)]

    def create_unique_constraint(self, label: str, prop: str) -> list[Operation]:
        name = self.ident(self.index_name(label, prop, "unique"))
        return [Statement(
            f"CREATE CONSTRAINT {name} IF NOT EXISTS FOR (n:{self.ident(label)}) "
            f"REQUIRE n.{self.ident(prop)} IS UNIQUE", write=True)]

    def create_fulltext_index(self, label: str, props: Sequence[str]) -> list[Operation]:
        name = self.ident(self.index_name(label, "text", "fulltext"))
        fields = ", ".join(f"n.{self.ident(p)}" for p in props)
        return [Statement(
            f"CREATE FULLTEXT INDEX {name} IF NOT EXISTS FOR (n:{self.ident(label)}) ON EACH [{fields}]",
            write=True)]

    def create_vector_index(self, label: str, prop: str, dimension: int) -> list[Operation]:
        name = self.ident(self.index_name(label, prop, "vector"))
        # Index options are part of the DDL, not data: the dimension is a checked int.
        # Quantization is off: 5.26 enables it by default (vector-2.0 provider), and its scores
        # are then int8 approximations: measured on 200 16-d vectors, the top-10 came back in
        # the wrong order with L2 from the score off by up to 0.6 (3.76 for a true 4.22).
        # Without it the scores give exact L2 and the brute-force order
        # (tests/live/test_graph_store.py::test_vector_search_distances_are_exact_l2).
        dim = int(dimension)
        return [Statement(
            f"CREATE VECTOR INDEX {name} IF NOT EXISTS FOR (n:{self.ident(label)}) "
            f"ON (n.{self.ident(prop)}) OPTIONS {{indexConfig: {{`vector.dimensions`: {dim}, "
            "`vector.similarity_function`: 'euclidean', `vector.quantization.enabled`: false}}",
            write=True)]

    def drop_index(self, info: IndexInfo) -> list[Operation]:
        if info.kind == "unique":
            return [Statement(f"DROP CONSTRAINT {self.ident(info.name)} IF EXISTS", write=True)]
        return [Statement(f"DROP INDEX {self.ident(info.name)} IF EXISTS", write=True)]

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
                kind="unique" if "UNIQUE" in str(row["type"]) else str(row["type"]).lower(),
                entity="node" if row["entityType"] == "NODE" else "relationship",
                label=(row.get("labelsOrTypes") or [""])[0],
                properties=tuple(row.get("properties") or ()),
                name=str(row["name"]),
            )
            for row in rows
        ]

    # ------------------------------------------------------------------ search
    def vector_search_call(self, label: str, prop: str, k: str, vector: str) -> str:
        index = self.string_literal(self.index_name(label, prop, "vector"))
        return f"CALL db.index.vector.queryNodes({index}, {k}, {vector}) YIELD node, score"

    def fulltext_search_call(self, label: str, props: Sequence[str], query: str) -> str:
        index = self.string_literal(self.index_name(label, "text", "fulltext"))
        return f"CALL db.index.fulltext.queryNodes({index}, {query}) YIELD node, score"

    # --- simgrag: exact distances for Graph Semantic Distance
    def exact_l2_prepared(self, stored: str, prepared: str) -> str:
        """Sum of squares over the LIST<FLOAT> property: the 1/(1+d^2) similarity loses d < 2.4e-4.

        shared/dialects.md section 3.1 ("Exact L2 from the score"): re-rank with reduce().
        """
        return (f"sqrt(reduce(acc = 0.0, i IN range(0, size({prepared}) - 1) | "
                f"acc + ({stored}[i] - {prepared}[i]) ^ 2))")
