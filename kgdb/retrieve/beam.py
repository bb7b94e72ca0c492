"""KG-CQR's subgraph completion (paper section 3.2.2, Algorithm 1) and its beam search
(Appendix A.3, Algorithm 2 "BFSBeam"), run inside the graph database.

Facts
    A fact is a relationship between two ``:Entity`` nodes that has a TTR embedding and its
    text (written by ``kgdb index triples``); relationships without an embedding are never
    traversed. A fact's cosine is the similarity of its embedding with the question vector.

The beam (:func:`beam_paths`)
    A path starts at a source entity and is a sequence of facts that never visits an entity
    twice (the source counts as visited, so no path returns to it; the paper's first
    expansion, from an empty path, would allow that). Its score is the mean cosine of its
    facts. Expanding a path whose last entity is ``u`` considers every fact incident to
    ``u`` that leads to an entity not on the path, and keeps the best ``width`` of those
    extensions *of that one path*: the beam is per node, as in Algorithm 2, which sorts the
    candidates of each dequeued node and enqueues its top W; it is not one beam per level
    (a source can have up to W + W^2 + ... + W^L paths). All children of one parent have the
    same length and prefix, so ranking them by mean score is ranking them by their last
    fact's cosine; that is what the database ranks by (see :mod:`kgdb.cypher.beam`). Ties:
    the smaller new entity id, then relationship type, then the fact's start node id.
    Paths grow to at most ``max_length`` facts (Algorithm 2 drops a dequeued path longer
    than L, so L facts is the longest path it returns).

    ``direction="both"`` (the default) lets a fact be followed from either end, so a path
    can read ``A <-directed_by- B``; ``direction="out"`` follows only facts whose start node
    is ``u``, the paper's literal ``{u, r, v} where u = node``. Facts keep their stored
    direction in the results either way.

    One statement per level expands every frontier path of every source at once; Python
    only keeps the tree. A path's score is ``math.fsum`` of its cosines over its length, so
    it does not depend on the order of the facts (a path and its reverse score the same).

Why one untargeted tree per source is the paper's union
    Algorithm 1 takes the union of BFSBeam(e_s, e_t) over pairs of the initial subgraph's
    entities. BFSBeam(e_s, e_t) is the untargeted beam tree from e_s except that it does not
    expand a path that has reached e_t (it returns it instead). The W children of a path are
    chosen at their parent, among the same candidates whatever the target is, and a path
    ending at e_t has no proper prefix ending at e_t (no entity repeats); so the paths
    BFSBeam(e_s, e_t) returns are exactly the paths of the untargeted tree from e_s that end
    at e_t, and the union over targets is "every path of the untargeted tree from e_s that
    ends at another entity of the subgraph". :func:`complete_subgraph` grows that tree once
    per source, all sources in the same statements.

Completion (:func:`complete_subgraph`, Algorithm 1)
    Sources and targets are the entities of the initial triples. The candidate paths are
    sorted by score, best first (ties: shorter first, then the entity ids along the path,
    then each fact's type and start node id); their facts that are not initial triples are
    taken in that order, each once, until ``top_k`` are taken (Algorithm 1 checks
    ``|C| >= K`` only between paths and may overshoot by up to L - 1 triples; here the K-th
    new triple is the last). The result is the initial triples plus the added ones, each
    with its TTR and the path that brought it.

    The paper's prose lists a "Step 3: filter out paths that contain nodes not present in
    the initial subgraph"; its Algorithm 1 has no such step (it keeps every path BFSBeam
    returns, whose inner entities may be new, which is what lets completion add context).
    kgdb follows the algorithm.

Evaluating the beam alone (:func:`beam_answers`)
    From one topic entity, the end entities of the completed paths (of exactly
    ``max_length`` facts, or of any length up to it), each ranked by its best path's score,
    ties by id: MetaQA's k-hop questions read as "the answers are the ends of the k-fact
    paths", which gives hits@k for the beam without an LLM.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from kgdb.cypher import beam as cy
from kgdb.cypher.beam import BeamError, check_direction, check_width
from kgdb.engine import GraphStore


class PathFact(NamedTuple):
    """One fact of a beam path, in its stored direction."""

    head: str
    """The head entity's id."""
    type: str
    """The relationship type."""
    tail: str
    """The tail entity's id."""
    ttr: str
    """The fact's triple text representation (KG-CQR), "" when it has none."""
    cosine: float
    """The cosine of its text to the question."""

Triple = tuple[str, str, str]
"""``(head id, relationship type, tail id)``."""

__all__ = ["AddedTriple", "BeamAnswer", "BeamError", "BeamPath", "CompletedSubgraph", "PathFact",
           "Triple", "beam_answers", "beam_paths", "complete_subgraph"]


@dataclass(frozen=True)
class BeamPath:
    """One path of the beam tree."""

    source: str
    entities: tuple[str, ...]
    """Entity ids along the path, the source first (``length + 1`` of them)."""
    names: tuple[str, ...]
    """Their names, in the same order."""
    facts: tuple[PathFact, ...]
    """The path's facts in path order, each in its stored direction."""
    score: float
    """The mean cosine of the facts."""

    @property
    def length(self) -> int:
        return len(self.facts)

    @property
    def end(self) -> str:
        return self.entities[-1]

    @property
    def triples(self) -> tuple[Triple, ...]:
        return tuple((f.head, f.type, f.tail) for f in self.facts)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "entities": list(self.entities),
                "names": list(self.names), "score": self.score, "length": self.length,
                "facts": [f._asdict() for f in self.facts]}


def path_order(path: BeamPath) -> tuple[Any, ...]:
    """Best first: score descending, then shorter, then entity ids along the path, then each
    fact's type and start node id (two parallel facts can join the same two entities)."""
    return (-path.score, path.length, path.entities,
            tuple((f.type, f.head) for f in path.facts))


def _check_length(name: str, value: int, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise BeamError(f"{name} must be an integer of at least {least}, not {value!r}")
    return value


def _check_vector(vector: Sequence[float]) -> list[float]:
    values = [float(x) for x in vector]
    if not values or not all(math.isfinite(x) for x in values):
        raise BeamError("the question vector must be a non-empty list of finite numbers")
    return values


def _unique(ids: Iterable[str]) -> list[str]:
    if isinstance(ids, str):
        raise BeamError(f"sources must be a list of entity ids, not the string {ids!r}")
    return list(dict.fromkeys(str(i) for i in ids))


def beam_paths(store: GraphStore, vector: Sequence[float], sources: Iterable[str], *,
               width: int = 3, max_length: int = 3, direction: str = "both"
               ) -> list[BeamPath]:
    """Every path of the per-node beam tree of each source (see the module docstring), best
    first (:func:`path_order`). Unknown source ids and sources without facts give no path.
    Runs one statement per level (at most ``max_length``), for all sources at once."""
    check_width(width)
    _check_length("max_length", max_length, 1)
    check_direction(direction)
    q = _check_vector(vector)
    frontier = [BeamPath(s, (s,), ("",), (), 0.0) for s in _unique(sources)]
    paths: list[BeamPath] = []
    for _ in range(max_length):
        if not frontier:
            break
        rows = [{"key": i, "at": p.end, "path": list(p.entities)} for i, p in enumerate(frontier)]
        records = store.run(cy.expand_frontier(store.dialect, q, rows, width, direction)
                            ).records()
        children = [_extend(frontier[int(r["parent"])], r) for r in records]
        children.sort(key=path_order)
        paths.extend(children)
        frontier = children
    paths.sort(key=path_order)
    return paths


def _extend(parent: BeamPath, row: dict[str, Any]) -> BeamPath:
    fact = PathFact(str(row["head"]), str(row["type"]), str(row["tail"]),
                "" if row["ttr"] is None else str(row["ttr"]), float(row["cosine"]))
    facts = (*parent.facts, fact)
    names = parent.names if parent.facts else (str(row["at_name"] or ""),)
    return BeamPath(parent.source, (*parent.entities, str(row["id"])),
                    (*names, str(row["name"] or "")), facts,
                    math.fsum(f.cosine for f in facts) / len(facts))


@dataclass(frozen=True)
class AddedTriple:
    """A triple completion added, with its text and the path it came from."""

    head: str
    type: str
    tail: str
    ttr: str
    cosine: float
    path: BeamPath

    @property
    def triple(self) -> Triple:
        return (self.head, self.type, self.tail)


@dataclass(frozen=True)
class CompletedSubgraph:
    """Algorithm 1's result: the initial triples and those completion added."""

    initial: tuple[Triple, ...]
    added: tuple[AddedTriple, ...]
    paths: tuple[BeamPath, ...]
    """The candidate paths (from one initial entity to another), best first."""

    @property
    def triples(self) -> tuple[Triple, ...]:
        """The completed subgraph: the initial triples, then the added ones in order."""
        return self.initial + tuple(a.triple for a in self.added)


def complete_subgraph(store: GraphStore, vector: Sequence[float],
                      triples: Iterable[Sequence[str]], *, width: int = 3,
                      max_length: int = 3, top_k: int = 20, direction: str = "both"
                      ) -> CompletedSubgraph:
    """KG-CQR's Algorithm 1 over ``triples`` (``(head id, type, tail id)``; further items,
    such as a TTR, are ignored): up to ``top_k`` new triples from the best beam paths that
    join two of their entities (see the module docstring)."""
    check_width(width)
    _check_length("max_length", max_length, 1)
    _check_length("top_k", top_k, 0)
    check_direction(direction)
    initial = tuple(dict.fromkeys((str(t[0]), str(t[1]), str(t[2])) for t in triples))
    entities = _unique(e for h, _, t in initial for e in (h, t))
    targets = set(entities)
    candidates = tuple(p for p in beam_paths(store, vector, entities, width=width,
                                             max_length=max_length, direction=direction)
                       if p.end in targets)
    known = set(initial)
    added: list[AddedTriple] = []
    for path in candidates:
        if len(added) >= top_k:
            break
        for fact in path.facts:
            if len(added) >= top_k:
                break
            if (triple := (fact.head, fact.type, fact.tail)) not in known:
                known.add(triple)
                added.append(AddedTriple(*fact, path))
    return CompletedSubgraph(initial, tuple(added), candidates)


@dataclass(frozen=True)
class BeamAnswer:
    """An end entity of the beam from a topic, with its best path."""

    id: str
    name: str
    score: float
    path: BeamPath


def beam_answers(store: GraphStore, vector: Sequence[float], topic: str, *, width: int = 3,
                 max_length: int = 3, any_length: bool = False, direction: str = "both"
                 ) -> list[BeamAnswer]:
    """The end entities of the beam tree from ``topic``: of its paths of exactly
    ``max_length`` facts (or, with ``any_length``, of every path), each once with its best
    path, ranked by that path's score, ties by id (hits@k of the beam alone)."""
    best: dict[str, BeamPath] = {}
    for path in beam_paths(store, vector, [topic], width=width, max_length=max_length,
                           direction=direction):
        if (any_length or path.length == max_length) and path.end not in best:
            best[path.end] = path  # paths come best first
    ranked = sorted(best.values(), key=lambda p: (-p.score, p.end))
    return [BeamAnswer(p.end, p.names[-1], p.score, p) for p in ranked]
