"""The expansion statement of KG-CQR's beam-search path completion (kgdb.retrieve.beam).

A *fact* is a relationship between two ``:Entity`` nodes that carries a TTR embedding
(:data:`kgdb.cypher.triples.EMBEDDING`) and its text (:data:`kgdb.cypher.triples.TEXT`);
relationships without an embedding are never traversed. One statement expands one level of
the beam for every frontier path of every source at once: each frontier row is a path
(``key``, its last entity ``at``, and ``path``, the ids of every entity on it, the source
first); the statement keeps, per row, the ``width`` best facts incident to ``at`` that lead
to an entity not on the path, ranked by the cosine of the fact's embedding with the
question, ties by the new entity's id, then the relationship type, then the fact's start
node id.

Siblings are ranked by their own cosine, not by the parent's score sum plus it: every
sibling has the same parent, so the order is the same in exact arithmetic, and in floating
point a sum can round two different cosines to one value and let the tie order decide.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kgdb.cypher.link import ENTITY_LABEL
from kgdb.cypher.params import Params
from kgdb.cypher.triples import EMBEDDING, TEXT
from kgdb.dialects.base import Dialect
from kgdb.errors import KgdbError, did_you_mean
from kgdb.statement import Statement

DIRECTIONS: tuple[str, ...] = ("both", "out")
"""``both``: a fact may have the expanded entity at either end; ``out``: only facts whose
start node it is (the paper's Algorithm 2, ``u = node``)."""


class BeamError(KgdbError):
    """Bad beam-search options (width, path length, direction) or frontier."""


def check_direction(direction: str) -> str:
    """``direction`` if it is one of :data:`DIRECTIONS`, else a one-line :class:`BeamError`."""
    if direction not in DIRECTIONS:
        raise BeamError(f"unknown beam direction {direction!r}"
                        f"{did_you_mean(str(direction), DIRECTIONS)}; "
                        f"choose one of {', '.join(DIRECTIONS)}")
    return direction


def check_width(width: int) -> int:
    """``width`` if it is an integer of at least 1, else a one-line :class:`BeamError`."""
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise BeamError(f"beam width must be an integer of at least 1, not {width!r}")
    return width


def expand_frontier(dialect: Dialect, vector: Sequence[float], frontier: Sequence[Mapping[str, Any]],
                    width: int, direction: str = "both") -> Statement:
    """One beam level for every path of ``frontier`` (rows ``{key, at, path}``, see the module
    docstring): rows ``parent, at_name, id, name, type, head, tail, ttr, cosine``, one per
    kept extension, where ``parent`` is the frontier row's key, ``at_name`` the name of its
    last entity, ``id``/``name`` the new entity,
    ``type``/``head``/``tail``/``ttr`` the fact (in its stored direction) and ``cosine`` its
    similarity with ``vector``, in no particular order.

    The ranking is an ORDER BY before a grouped ``collect(...)[0..width]``: both engines keep
    the rows' order inside each group (checked against a brute-force beam on random graphs
    and on 60 interleaved groups of 300 candidates, tests/live/test_beam.py; Neo4j 5.26 plans
    it as a Sort on the key, a PartialSort, then an OrderedAggregation, FalkorDB 4.16.3 as
    Sort then Aggregate). ``NOT (v.id IN row.path)`` is parenthesised on purpose, so that
    no reader (or engine) has to know whether NOT binds tighter than IN.
    """
    check_width(width)
    arrow = "->" if check_direction(direction) == "out" else "-"
    p = Params()
    e = dialect.ident(ENTITY_LABEL)
    emb = dialect.ident(EMBEDDING)
    rows = [{"key": row["key"], "at": row["at"], "path": list(row["path"])} for row in frontier]
    return Statement(
        f"WITH {dialect.vector_value(p.add('vector', [float(x) for x in vector]))} AS q\n"
        f"UNWIND {p.add('frontier', rows)} AS row\n"
        f"MATCH (u:{e} {{id: row.at}})-[r]{arrow}(v:{e})\n"
        f"WHERE r.{emb} IS NOT NULL AND NOT (v.id IN row.path)\n"
        "WITH row.key AS parent, u, v, r, type(r) AS type, startNode(r).id AS head, "
        f"endNode(r).id AS tail,\n     {dialect.cosine_similarity(f'r.{emb}', 'q')} AS cosine\n"
        "ORDER BY parent, cosine DESC, v.id, type, head\n"
        "WITH parent, u, collect({id: v.id, name: v.name, type: type, head: head, tail: tail, "
        f"ttr: r.{dialect.ident(TEXT)}, cosine: cosine}})[0..{p.add('width', width)}] AS best\n"
        "UNWIND best AS b\n"
        "RETURN parent, u.name AS at_name, b.id AS id, b.name AS name, b.type AS type, "
        "b.head AS head, b.tail AS tail, b.ttr AS ttr, b.cosine AS cosine", p.values)
