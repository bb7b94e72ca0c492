"""Statements the linker sends (kgdb.link): names, relationship types, the type catalog, and
candidates by meaning from the vector indexes.

Every builder takes the values and returns the statement with its parameters: no caller
knows a parameter name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kgdb.cypher.params import Params
from kgdb.dialects.base import Dialect
from kgdb.statement import Statement
from kgdb.vocabulary import ENTITY as ENTITY_LABEL
from kgdb.vocabulary import STRUCTURAL_RELATIONS

__all__ = ["ENTITY_LABEL", "STRUCTURAL_RELATIONS"]


# ------------------------------------------------------------------ by name

def entities_named(dialect: Dialect, names: Sequence[str], label: str = ENTITY_LABEL
                   ) -> Statement:
    """Entities whose name is one of ``names`` exactly (uses the name index): rows
    ``wanted, id, name``."""
    p = Params()
    return Statement(
        f"MATCH (n:{dialect.ident(label)}) WHERE n.name IN {p.add('names', list(names))}\n"
        "RETURN n.name AS wanted, n.id AS id, n.name AS name\nORDER BY wanted, id",
        p.values)


def entities_named_ignoring_case(dialect: Dialect, names: Sequence[str], *,
                                 label: str = ENTITY_LABEL, per_name: int = 20,
                                 fulltext: bool = True) -> Statement:
    """Entities whose name equals one of ``names`` ignoring case: rows ``wanted, id, name``.

    With ``fulltext`` the label's full-text index proposes the nodes (every word of the name,
    any case) and the exact case-insensitive comparison decides, so the look-up does not scan
    the label; without, every node of the label is compared (for a graph without the index).
    """
    p = Params()
    if not fulltext:
        return Statement(
            f"UNWIND {p.add('names', list(names))} AS wanted\n"
            f"MATCH (n:{dialect.ident(label)})\n"
            "WHERE toLower(n.name) = toLower(wanted)\n"
            "RETURN wanted, n.id AS id, n.name AS name\n"
            f"ORDER BY wanted, id\nLIMIT {p.add('limit', len(names) * per_name)}",
            p.values)
    queries = [{"wanted": n, "query": dialect.fulltext_query_text(n, every_word=True)}
               for n in names]
    call = dialect.fulltext_search_call(label, ("name",), "q.query")
    body = (f"{call}\n"
            f"WITH node WHERE node:{dialect.ident(label)} "
            "AND toLower(node.name) = toLower(q.wanted)\n"
            "RETURN node.id AS id, node.name AS name\n"
            f"ORDER BY id\nLIMIT {p.add('per_name', per_name)}")
    return Statement(
        f"UNWIND {p.add('queries', [q for q in queries if q['query']])} AS q\n"
        f"{dialect.subquery(['q'], body)}\n"
        "RETURN q.wanted AS wanted, id, name",
        p.values)


def relationship_types() -> Statement:
    """Every relationship type in the graph: rows ``type``."""
    return Statement("CALL db.relationshipTypes() YIELD relationshipType\n"
                     "RETURN relationshipType AS type ORDER BY type")


def entity_type_catalog() -> Statement:
    """The EntityType catalog with narrower types reached through isA / contains: rows
    ``name, narrower, contained``."""
    return Statement(
        "MATCH (t:EntityType)\n"
        "OPTIONAL MATCH (narrow:EntityType)-[:isA]->(t)\n"
        "OPTIONAL MATCH (t)-[:contains]->(part:EntityType)\n"
        "RETURN t.name AS name, collect(DISTINCT narrow.name) AS narrower, "
        "collect(DISTINCT part.name) AS contained\nORDER BY name"
    )


def count_labelled(dialect: Dialect, type_label: str, label: str = ENTITY_LABEL) -> Statement:
    """How many ``label`` nodes carry ``type_label`` (a type hint applies only when some do)."""
    return Statement(f"MATCH (n:{dialect.ident(label)}:{dialect.ident(type_label)}) "
                     "RETURN count(n) AS entities")


def labels_in_use() -> Statement:
    """The node labels of the graph (one row, ``labels``)."""
    return Statement("CALL db.labels() YIELD label RETURN collect(label) AS labels")


# ------------------------------------------------------------------ by meaning

@dataclass(frozen=True)
class VectorSearch:
    """Nearest nodes of ``label`` for several query vectors, in one branch of a union."""

    label: str
    key: str
    """Property returned as ``id`` (``id`` for entities, ``name`` for catalog nodes)."""
    shown: str
    """Property returned as ``name``."""
    k: int
    vectors: tuple[Sequence[float], ...]


def vector_candidates(dialect: Dialect, searches: Sequence[VectorSearch], *,
                      with_labels: bool = False) -> Statement:
    """Candidates of several kinds in one round trip: a ``UNION ALL`` of nearest-node searches.

    Rows ``search, query, id, name, distance``: ``search`` and ``query`` index ``searches`` and
    the search's ``vectors``; ``distance`` is the exact L2 distance, recomputed from the
    stored vector (Neo4j's score loses small distances, and FalkorDB 4.16's index can yield
    a stale entry of an updated node with its old score). The top-k is cut per query inside
    the database: the index may yield more rows than asked (FalkorDB over-fetches).
    ``with_labels`` adds one row, search -1, whose ``id`` lists the node labels in use.
    """
    p = Params()
    parts = []
    for s, search in enumerate(searches):
        k = p.add(f"k{s}", int(search.k))
        queries = p.add(f"queries{s}", [{"query": i, "vector": v}
                                         for i, v in enumerate(search.vectors)])
        nearest = dialect.nearest_top(search.label, "embedding", k, "q.vector", "qv",
                                      key=search.key)
        body = (f"WITH q, {dialect.vector_value('q.vector')} AS qv\n"
                f"{nearest}\n"
                f"RETURN node.{dialect.ident(search.key)} AS id, "
                f"node.{dialect.ident(search.shown)} AS name, distance")
        parts.append(f"UNWIND {queries} AS q\n{dialect.subquery(['q'], body)}\n"
                     f"RETURN {s} AS search, q.query AS query, id, name, distance")
    if with_labels:
        parts.append("CALL db.labels() YIELD label\n"
                     "RETURN -1 AS search, 0 AS query, collect(label) AS id, null AS name, "
                     "0.0 AS distance")
    return Statement("\nUNION ALL\n".join(parts), p.values)


def simgrag_search(dialect: Dialect, searches: Sequence[VectorSearch],
                   components: Sequence[dict[str, Any]], *, k: int,
                   type_search: int | None = None, require: str = "",
                   ignore: Sequence[str] = ()) -> Statement | None:
    """One SimGRAG retrieval in one call of the dialect's procedure (``kgdb.simgrag.search`` of
    kgdb's Neo4j plugin), or None where it has none: the exact nearest-node ``searches`` (as in
    :func:`vector_candidates`), then kgdb.simgrag.match of every component map, whose node
    candidates, edge types and node labels may refer to the searches' results
    (``{"search": s, "query": q}`` or ``{"search": s, "queries": [...]}``). The search
    ``type_search`` runs only where the label ``require`` is in use beside labels outside
    ``ignore``, and keeps the candidates that are labels in use.

    One row: ``candidates`` (maps ``search, query, id, name, distance``), ``subgraphs`` (maps
    ``component, gsd, ids, names, triples``), ``vector_ms``, ``match_ms`` (in the server) and
    ``types_searched``.
    """
    if dialect.SIMGRAG_SEARCH is None:
        return None
    p = Params()
    request = {
        "searches": [{"index": dialect.index_name(s.label, "embedding", "vector"),
                      "key": s.key, "shown": s.shown, "k": int(s.k),
                      "vectors": list(s.vectors)} for s in searches],
        "typeSearch": None if type_search is None else {
            "search": type_search, "require": require, "ignore": list(ignore)},
        "components": list(components),
    }
    return Statement(
        f"CALL {dialect.SIMGRAG_SEARCH}({p.add('request', request)}, {p.add('k', int(k))})\n"
        "YIELD candidates, subgraphs, vectorMs, matchMs, typesSearched\n"
        "RETURN candidates, subgraphs, vectorMs AS vector_ms, matchMs AS match_ms, "
        "typesSearched AS types_searched", p.values)


def vector_index_state() -> Statement:
    """kgdb's Neo4j plugin: each node vector index and its exact in-memory copy (rows
    ``index, state, rows, build_ms, screen_dims, last_screen_ms, last_exact_ms,
    last_screened, last_candidates, last_recomputed``)."""
    return Statement(
        "CALL kgdb.vectorIndexes() YIELD index, state, rows, buildMs, screenDims, lastScreenMs, "
        "lastExactMs, lastScreened, lastCandidates, lastRecomputed\n"
        "RETURN index, state, rows, buildMs AS build_ms, screenDims AS screen_dims, "
        "lastScreenMs AS last_screen_ms, lastExactMs AS last_exact_ms, "
        "lastScreened AS last_screened, lastCandidates AS last_candidates, "
        "lastRecomputed AS last_recomputed ORDER BY index")
