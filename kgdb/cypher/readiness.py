"""Statements that tell whether the indexes the solvers need are built and current
(:mod:`kgdb.indexes`): counts only, each one statement, none writes.

The builders keep their own, exact bookkeeping (``kgdb index knn`` compares every node's
signature with its edges', ``kgdb index ppr`` extracts the chunks without sentences); these
counts read the same marks, so ``kgdb stats`` and the readiness check cost one short
statement per index rather than a build's reads."""

from __future__ import annotations

from kgdb.cypher import knn as knn_cy
from kgdb.cypher import pagerank as ppr_cy
from kgdb.cypher.params import Params
from kgdb.dialects.base import Dialect
from kgdb.statement import Statement
from kgdb.vocabulary import CHUNK, DOCUMENT, ENTITY, SIMILAR


def count_nodes(label: str) -> Statement:
    """Row ``nodes``: how many nodes have ``label`` (one of kgdb's own labels; a count store
    on both engines)."""
    return Statement(f"MATCH (n:{label}) RETURN count(n) AS nodes")


def count_chunks() -> Statement:
    return count_nodes(CHUNK)


def count_entities() -> Statement:
    return count_nodes(ENTITY)


def layer_documents(dialect: Dialect) -> Statement:
    """Row ``documents``: the documents with chunks (those the document layer links)."""
    return Statement(f"MATCH (n:{dialect.ident(DOCUMENT)})\nWHERE coalesce(n.chunks, 1) > 0\n"
                     "RETURN count(n) AS documents")


def pending_layer_documents(dialect: Dialect, k: int) -> Statement:
    """Row ``pending``: the documents with chunks that ``kgdb index knn`` would recompute:
    without a vector, with other than ``k`` SIMILAR edges (k: the layer's K', min(K, N - 1)),
    or with an edge computed from another version of the document (its ``knn_hash``)."""
    p = Params()
    node = dialect.ident(DOCUMENT)
    return Statement(
        f"MATCH (n:{node})\nWHERE coalesce(n.chunks, 1) > 0\n"
        f"OPTIONAL MATCH (n)-[r:{dialect.ident(SIMILAR)}]->(:{node})\n"
        "WITH n, collect(r.knn_hash) AS hashes\n"
        f"WHERE n.{dialect.ident(knn_cy.EMBEDDING)} IS NULL OR size(hashes) <> {p.add('k', int(k))}\n"
        "   OR size([h IN hashes WHERE h <> n.hash]) > 0\n"
        "RETURN count(n) AS pending", p.values)


def pending_ppr_chunks() -> Statement:
    """Row ``pending``: the chunks the retrieval graph does not cover yet (those ``kgdb index
    ppr`` extracts)."""
    return Statement(f"MATCH (c:{ppr_cy.CHUNK})\nWHERE NOT (c)-[:{ppr_cy.HAS_SENTENCE}]->()\n"
                     "RETURN count(c) AS pending")
