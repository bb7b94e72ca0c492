"""KG-CQR's beam-search path completion (kgdb.retrieve.beam) on both engines: on random small
graphs :func:`beam_paths` and :func:`complete_subgraph` equal a brute-force beam written
plainly below (cosines in float64 from the float32-rounded vectors); a hand-made movie graph
gives the paths one works out by hand; the per-parent cut survives many interleaved groups;
and the data written by ``kgdb load triples --ttr`` is what the beam walks."""

from __future__ import annotations

import itertools
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from kgdb.cypher.beam import BeamError
from kgdb.retrieve.beam import (
    BeamPath,
    beam_answers,
    beam_paths,
    complete_subgraph,
    path_order,
)

pytestmark = pytest.mark.live

DIM = 8
MARGIN = 1e-5
"""Engines compute cosines in float32; the reference in float64. Where two candidates a cut
separates (or two ranked paths) are closer than this, the draw is rejected and redrawn."""
RELATIONS = ("directed_by", "starred_actors", "written_by", "has_genre")


# ---------------------------------------------------------------------- writing a graph
@dataclass(frozen=True)
class FactSpec:
    head: str
    type: str
    tail: str
    ttr: str
    embedding: tuple[float, ...] | None
    """float32-rounded unit vector, or None for a relationship the beam must ignore."""


@dataclass
class Graph:
    entities: dict[str, str]
    """id -> name"""
    facts: list[FactSpec]
    outsiders: list[FactSpec] = field(default_factory=list)
    """Embedded relationships to or from a non-Entity node (never traversed)."""


def write_graph(store: Any, graph: Graph) -> None:
    """Write ``graph`` as the data contract says: (:Entity {id, name}) nodes, facts with
    ``ttr`` and, when embedded, ``embedding`` through the dialect's vector_value."""
    d = store.dialect
    for op in d.create_range_index("Entity", "id"):
        store.execute(op)
    store.run("UNWIND $rows AS row CREATE (:Entity {id: row.id, name: row.name})",
              {"rows": [{"id": i, "name": n} for i, n in graph.entities.items()]}, write=True)
    store.run("CREATE (:Chunk {id: 'chunk-1', name: 'a chunk'})", write=True)
    by_type: dict[tuple[str, bool, str, str], list[dict[str, Any]]] = {}
    for f in graph.facts:
        by_type.setdefault((f.type, f.embedding is not None, "Entity", "Entity"), []).append(
            {"h": f.head, "t": f.tail, "ttr": f.ttr, "embedding": list(f.embedding or ())})
    for f in graph.outsiders:
        labels = ("Chunk", "Entity") if f.head == "chunk-1" else ("Entity", "Chunk")
        by_type.setdefault((f.type, True, *labels), []).append(
            {"h": f.head, "t": f.tail, "ttr": f.ttr, "embedding": list(f.embedding or ())})
    for (rel, embedded, head_label, tail_label), rows in by_type.items():
        props = "ttr: row.ttr"
        if embedded:
            props += f", embedding: {d.vector_value('row.embedding')}"
        store.run(f"UNWIND $rows AS row MATCH (h:{d.ident(head_label)} {{id: row.h}}) "
                  f"MATCH (t:{d.ident(tail_label)} {{id: row.t}}) "
                  f"CREATE (h)-[:{d.ident(rel)} {{{props}}}]->(t)", {"rows": rows}, write=True)


def unit32(v: np.ndarray) -> tuple[float, ...]:
    """A unit vector rounded to float32 (what FalkorDB stores), as Python floats."""
    v = v / np.linalg.norm(v)
    return tuple(float(x) for x in v.astype(np.float32))


# ---------------------------------------------------------------------- the reference
class Ambiguous(Exception):
    """Two candidates closer than MARGIN on the two sides of a cut: redraw."""


Key = tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]]


def path_key(entities: tuple[str, ...], facts: Any) -> Key:
    return tuple(entities), tuple((f[0], f[1], f[2]) for f in facts)


@dataclass(frozen=True)
class RefPath:
    entities: tuple[str, ...]
    facts: tuple[FactSpec, ...]
    cosines: tuple[float, ...]

    @property
    def score(self) -> float:
        return math.fsum(self.cosines) / len(self.cosines)

    @property
    def key(self) -> Key:
        return path_key(self.entities, [(f.head, f.type, f.tail) for f in self.facts])

    def order(self) -> tuple[Any, ...]:
        return (-self.score, len(self.facts), self.entities,
                tuple((f.type, f.head) for f in self.facts))


def reference_beam(graph: Graph, q: tuple[float, ...], sources: list[str], width: int,
                   max_length: int, direction: str) -> list[RefPath]:
    """The paper's BFSBeam, untargeted, per node, written plainly: every path of the tree."""
    qv = np.array(q, dtype=np.float64)

    def cosine(f: FactSpec) -> float:
        e = np.array(f.embedding, dtype=np.float64)
        return float(e @ qv / (np.linalg.norm(e) * np.linalg.norm(qv)))

    incident: dict[str, list[tuple[FactSpec, str]]] = {e: [] for e in graph.entities}
    for f in graph.facts:
        if f.embedding is None:
            continue
        incident[f.head].append((f, f.tail))
        if direction == "both" and f.head != f.tail:
            incident[f.tail].append((f, f.head))
    frontier = [RefPath((s,), (), ()) for s in dict.fromkeys(sources) if s in graph.entities]
    paths: list[RefPath] = []
    for _ in range(max_length):
        children = []
        for parent in frontier:
            options = sorted(((cosine(f), v, f.type, f.head, f)
                              for f, v in incident[parent.entities[-1]]
                              if v not in parent.entities),
                             key=lambda o: (-o[0], o[1], o[2], o[3]))
            if len(options) > width and 0 < options[width - 1][0] - options[width][0] < MARGIN:
                raise Ambiguous("cut")
            for c, v, _, _, f in options[:width]:
                children.append(RefPath((*parent.entities, v), (*parent.facts, f),
                                        (*parent.cosines, c)))
        paths.extend(children)
        frontier = children
    return sorted(paths, key=RefPath.order)


def check_ranking(paths: list[RefPath]) -> None:
    """Reject a draw where two ranked paths are closer than MARGIN (but not equal)."""
    for a, b in itertools.pairwise(paths):
        if 0 < a.score - b.score < MARGIN:
            raise Ambiguous("ranking")


def reference_completion(graph: Graph, q: tuple[float, ...], initial: list[tuple[str, str, str]],
                         width: int, max_length: int, top_k: int, direction: str
                         ) -> tuple[list[tuple[str, str, str]], list[RefPath]]:
    """Algorithm 1: paths from each initial entity to another, best first; new triples in
    that order, each once, at most top_k."""
    entities = list(dict.fromkeys(e for h, _, t in initial for e in (h, t)))
    paths = [p for p in reference_beam(graph, q, entities, width, max_length, direction)
             if p.entities[-1] in entities]
    check_ranking(paths)
    added: list[tuple[str, str, str]] = []
    known = set(initial)
    for p in paths:
        for f in p.facts:
            t = (f.head, f.type, f.tail)
            if t not in known and len(added) < top_k:
                known.add(t)
                added.append(t)
    return added, paths


# ---------------------------------------------------------------------- random graphs
@dataclass
class Scenario:
    graph: Graph
    q: tuple[float, ...]
    beams: list[dict[str, Any]]
    completions: list[dict[str, Any]]


def random_structure(rng: np.random.Generator
                     ) -> tuple[dict[str, str], list[tuple[str, str, str]], dict[int, int]]:
    """Entities, facts (parallel ones, a cycle, a self-loop among them) and the twins: fact
    index -> the index of the fact it runs parallel to, which it may copy the embedding of."""
    n = int(rng.integers(8, 31))
    numbers = rng.permutation(n)  # ids are not in creation order
    ids = [f"e{int(k):02d}" for k in numbers]
    entities = {i: f"Entity {i.upper()}" for i in ids}
    types = list(RELATIONS[: int(rng.integers(2, 5))])
    triples: dict[tuple[str, str, str], int] = {}
    twins: dict[int, int] = {}

    def add(h: str, t: str, rel: str | None = None, twin_of: int | None = None) -> None:
        key = (h, rel or str(rng.choice(types)), t)
        if key not in triples:
            triples[key] = len(triples)
            if twin_of is not None:
                twins[triples[key]] = twin_of

    for _ in range(int(n * rng.uniform(0.8, 2.5))):  # random degrees
        h, t = rng.choice(ids, size=2, replace=False)
        add(str(h), str(t))
    for (h, rel, t), i in list(triples.items())[: max(2, len(triples) // 4)]:
        add(h, t, str(rng.choice([r for r in types if r != rel])), i)  # same pair, other type
        add(t, h, rel, i)  # the same type, the other way
    ring = [str(x) for x in rng.choice(ids, size=int(rng.integers(3, 6)), replace=False)]
    for a, b in itertools.pairwise([*ring, ring[0]]):  # a cycle
        add(a, b)
    add(ids[0], ids[0])  # a self-loop, never followed
    return entities, list(triples), twins


def random_embeddings(rng: np.random.Generator, triples: list[tuple[str, str, str]],
                      twins: dict[int, int]) -> list[FactSpec]:
    """Random unit embeddings; 15% of the relationships have none, 10% copy another fact's,
    and half the parallel facts copy their twin's (exact ties the tie order decides)."""
    facts: list[FactSpec] = []
    vectors: list[tuple[float, ...]] = []
    for i, (h, rel, t) in enumerate(triples):
        roll = rng.random()
        twin = facts[twins[i]].embedding if i in twins else None
        if roll < 0.15:
            emb = None  # not a fact for the beam
        elif twin is not None and roll < 0.6:
            emb = twin
        elif roll < 0.25 and vectors:
            emb = vectors[int(rng.integers(len(vectors)))]  # an exact tie with another fact
        else:
            emb = unit32(rng.normal(size=DIM))
            vectors.append(emb)
        facts.append(FactSpec(h, rel, t, f"{h} {rel.replace('_', ' ')} {t}", emb))
    return facts


def scenario(seed: int) -> Scenario:
    """A random graph, a question and the runs to check, with their reference results; the
    embeddings are redrawn while a cut or ranking is closer than MARGIN."""
    rng = np.random.default_rng(seed)
    entities, triples, twins = random_structure(rng)
    ids = list(entities)
    runs: list[dict[str, Any]] = []
    for direction in ("both", "out", "both"):
        sources = [str(s) for s in rng.choice(ids, size=int(rng.integers(1, 5)), replace=False)]
        runs.append({"sources": [*sources, "no-such-entity", sources[0]],
                     "width": int(rng.integers(1, 5)), "max_length": int(rng.integers(1, 5)),
                     "direction": direction})
    completions: list[dict[str, Any]] = []
    for direction in ("both", "out"):
        picked = rng.choice(len(triples), size=int(rng.integers(2, 5)), replace=False)
        completions.append({"initial": [triples[int(i)] for i in picked],
                            "width": int(rng.integers(1, 4)), "max_length": int(rng.integers(2, 4)),
                            "top_k": int(rng.integers(1, 21)), "direction": direction})
    for _attempt in range(50):
        facts = random_embeddings(rng, triples, twins)
        graph = Graph(entities, facts)
        q = unit32(rng.normal(size=DIM))
        graph.outsiders = [FactSpec("chunk-1", "directed_by", ids[0], "outsider", q),
                           FactSpec(ids[1], "starred_actors", "chunk-1", "outsider", q)]
        try:
            for run in runs:
                run["expected"] = reference_beam(graph, q, run["sources"], run["width"],
                                                 run["max_length"], run["direction"])
            for c in completions:
                c["expected"] = reference_completion(graph, q, c["initial"], c["width"],
                                                     c["max_length"], c["top_k"],
                                                     c["direction"])
        except Ambiguous:
            continue
        return Scenario(graph, q, runs, completions)
    raise AssertionError(f"seed {seed}: no draw without a near-tie")


def assert_same_paths(found: list[BeamPath], expected: list[RefPath], context: str) -> None:
    got = {path_key(p.entities, p.facts): p for p in found}
    want = {p.key: p for p in expected}
    assert len(got) == len(found), f"{context}: a path came back twice"
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    assert not missing and not extra, f"{context}: missing {missing[:3]}, unexpected {extra[:3]}"
    for key, p in got.items():
        w = want[key]
        assert p.source == w.entities[0] and p.length == len(w.facts)
        assert p.score == pytest.approx(w.score, abs=MARGIN), (context, key)
        for fact, spec, c in zip(p.facts, w.facts, w.cosines, strict=True):
            assert fact[3] == spec.ttr and fact[4] == pytest.approx(c, abs=MARGIN)
    assert found == sorted(found, key=path_order), f"{context}: not best first"
    # The order agrees with the reference's wherever their scores are apart.
    rank = {p.key: i for i, p in enumerate(expected)}
    for a, b in itertools.pairwise(found):
        ra, rb = want[path_key(a.entities, a.facts)], want[path_key(b.entities, b.facts)]
        assert rank[ra.key] < rank[rb.key] or ra.score - rb.score < MARGIN, context


SEEDS = range(10)


def test_beam_equals_brute_force_on_random_graphs(store: Any) -> None:
    checked = paths_seen = 0
    for seed in SEEDS:
        sc = scenario(seed)
        store.reset()
        write_graph(store, sc.graph)
        for run in sc.beams:
            context = f"seed {seed}, {({k: v for k, v in run.items() if k != 'expected'})}"
            found = beam_paths(store, sc.q, run["sources"], width=run["width"],
                               max_length=run["max_length"], direction=run["direction"])
            assert_same_paths(found, run["expected"], context)
            checked += 1
            paths_seen += len(found)
        for c in sc.completions:
            context = f"seed {seed}, {({k: v for k, v in c.items() if k != 'expected'})}"
            added, paths = c["expected"]
            result = complete_subgraph(store, sc.q, c["initial"], width=c["width"],
                                       max_length=c["max_length"], top_k=c["top_k"],
                                       direction=c["direction"])
            assert [a.triple for a in result.added] == added, context
            assert result.triples == (*dict.fromkeys(c["initial"]), *added)
            assert_same_paths(list(result.paths), paths, context)
            spec = {(f.head, f.type, f.tail): f for f in sc.graph.facts}
            for a in result.added:
                assert a.ttr == spec[a.triple].ttr and a.triple in a.path.triples
            checked += 1
    assert checked == len(SEEDS) * 5 and paths_seen > 500


def test_many_interleaved_groups_keep_their_order(store: Any) -> None:
    """One hub with 300 neighbours reached from 60 frontier paths at once: each group of the
    ORDER BY ... collect()[0..$w] keeps its best three (FalkorDB and Neo4j alike)."""
    rng = np.random.default_rng(99)
    leaves = [f"leaf{i:03d}" for i in rng.permutation(300)]
    entities = {"hub": "Hub", **{leaf: leaf.title() for leaf in leaves}}
    facts = [FactSpec(leaf, str(rng.choice(RELATIONS)), "hub", f"{leaf} hub",
                      unit32(rng.normal(size=DIM))) for leaf in leaves]
    graph = Graph(entities, facts)
    q = unit32(rng.normal(size=DIM))
    write_graph(store, graph)
    sources = leaves[:60]
    expected = reference_beam(graph, q, sources, 3, 2, "both")
    found = beam_paths(store, q, sources, width=3, max_length=2)
    assert len(found) == 60 + 60 * 3
    assert_same_paths(found, expected, "hub")


# ---------------------------------------------------------------------- a hand-made graph
MOVIES = {
    "kismet": "Kismet", "dieterle": "William Dieterle", "colman": "Ronald Colman",
    "dietrich": "Marlene Dietrich", "y1944": "1944", "juarez": "Juarez", "y1939": "1939",
    "lonely": "Lonely Entity", "unembedded": "Unembedded Entity",
}
Q = (1.0, 0.0, 0.0, 0.0)
MOVIE_FACTS = [
    #         head       type             tail         embedding            cos with Q
    FactSpec("kismet", "directed_by", "dieterle", "Kismet was directed by William Dieterle",
             (0.8, 0.6, 0.0, 0.0)),                                       # 0.8
    FactSpec("kismet", "starred_actors", "dietrich", "Kismet starred Marlene Dietrich",
             (0.6, 0.0, 0.8, 0.0)),                                       # 0.6
    FactSpec("kismet", "starred_actors", "colman", "Kismet starred Ronald Colman",
             (0.6, 0.0, 0.0, 0.8)),                                       # 0.6 (tie: colman first)
    FactSpec("kismet", "release_year", "y1944", "Kismet was released in 1944",
             (0.0, 1.0, 0.0, 0.0)),                                       # 0.0
    FactSpec("juarez", "directed_by", "dieterle", "Juarez was directed by William Dieterle",
             (0.8, 0.0, 0.6, 0.0)),                                       # 0.8
    FactSpec("juarez", "release_year", "y1939", "Juarez was released in 1939",
             (-0.6, 0.8, 0.0, 0.0)),                                      # -0.6
    FactSpec("unembedded", "directed_by", "dieterle", "no embedding", None),
]


@pytest.fixture
def movies(store: Any) -> Any:
    write_graph(store, Graph(dict(MOVIES), [
        FactSpec(f.head, f.type, f.tail, f.ttr,
                 None if f.embedding is None else unit32(np.array(f.embedding)))
        for f in MOVIE_FACTS]))
    return store


def shape(paths: list[BeamPath]) -> list[tuple[tuple[str, ...], float]]:
    return [(p.entities, round(p.score, 5)) for p in paths]


def test_hand_made_paths(movies: Any) -> None:
    paths = beam_paths(movies, Q, ["kismet"], width=2, max_length=2)
    # Level 1: Dieterle (0.8), then Colman and Dietrich tie at 0.6 and the smaller id wins.
    # Level 2: from Dieterle, Juarez through Juarez -directed_by-> Dieterle read backwards.
    assert shape(paths) == [(("kismet", "dieterle"), 0.8),
                            (("kismet", "dieterle", "juarez"), 0.8),
                            (("kismet", "colman"), 0.6)]
    longest = paths[1]
    assert longest.names == ("Kismet", "William Dieterle", "Juarez")
    assert longest.length == 2 and longest.source == "kismet"
    assert [f[:4] for f in longest.facts] == [
        ("kismet", "directed_by", "dieterle", "Kismet was directed by William Dieterle"),
        ("juarez", "directed_by", "dieterle", "Juarez was directed by William Dieterle")]
    # direction out: nothing leaves Dieterle; the beam is the paper's literal one.
    assert shape(beam_paths(movies, Q, ["kismet"], width=2, max_length=2, direction="out")) == [
        (("kismet", "dieterle"), 0.8), (("kismet", "colman"), 0.6)]
    assert shape(beam_paths(movies, Q, ["dieterle"], width=3, max_length=3, direction="out")
                 ) == []
    # W = 1, L = 1: the single best fact.
    assert shape(beam_paths(movies, Q, ["kismet"], width=1, max_length=1)) == [
        (("kismet", "dieterle"), 0.8)]
    # W = 1, L = 3: one chain, the source never revisited.
    assert shape(beam_paths(movies, Q, ["kismet"], width=1, max_length=3)) == [
        (("kismet", "dieterle"), 0.8), (("kismet", "dieterle", "juarez"), 0.8),
        (("kismet", "dieterle", "juarez", "y1939"), round((0.8 + 0.8 - 0.6) / 3, 5))]
    # Sources without facts (or only unembedded ones), unknown ids, no source at all.
    for sources in (["lonely"], ["unembedded"], ["no-such-entity"], []):
        assert beam_paths(movies, Q, sources) == []
    both = beam_paths(movies, Q, ["no-such-entity", "lonely", "y1939"], width=1, max_length=2)
    assert shape(both) == [(("y1939", "juarez", "dieterle"), 0.1), (("y1939", "juarez"), -0.6)]


def test_hand_made_completion(movies: Any) -> None:
    initial = [("kismet", "directed_by", "dieterle", "a TTR, ignored"),
               ("juarez", "release_year", "y1939")]
    result = complete_subgraph(movies, Q, initial, width=2, max_length=2)
    # Paths between {kismet, dieterle, juarez, y1939}, best first: kismet-dieterle (0.8,
    # initial), dieterle-juarez and dieterle-kismet (0.8, the first new triple), ...,
    # kismet-dieterle-juarez (0.8), juarez-dieterle-kismet (0.8), then the 1939 ones.
    assert result.initial == (("kismet", "directed_by", "dieterle"),
                              ("juarez", "release_year", "y1939"))
    assert [a.triple for a in result.added] == [("juarez", "directed_by", "dieterle")]
    added = result.added[0]
    assert added.ttr == "Juarez was directed by William Dieterle"
    assert added.cosine == pytest.approx(0.8, abs=1e-6)
    assert added.path.entities == ("dieterle", "juarez")
    assert all(p.end in {"kismet", "dieterle", "juarez", "y1939"} for p in result.paths)
    assert result.triples == (*result.initial, ("juarez", "directed_by", "dieterle"))
    assert complete_subgraph(movies, Q, initial, top_k=0).added == ()
    # A subgraph whose entities no beam path joins gains nothing.
    assert complete_subgraph(movies, Q, [("kismet", "release_year", "y1944")], width=1
                             ).added == ()


def test_beam_answers(movies: Any) -> None:
    two_hops = beam_answers(movies, Q, "kismet", width=2, max_length=2)
    assert [(a.id, a.name, round(a.score, 5)) for a in two_hops] == [
        ("juarez", "Juarez", 0.8)]
    any_length = beam_answers(movies, Q, "kismet", width=2, max_length=2, any_length=True)
    # dieterle is reached by a 1-fact and a 2-fact path; its best is the 1-fact one.
    assert [(a.id, round(a.score, 5)) for a in any_length] == [
        ("dieterle", 0.8), ("juarez", 0.8), ("colman", 0.6)]
    assert any_length[0].path.length == 1


def test_ties_by_entity_then_type_then_start_node(store: Any) -> None:
    """Equal cosines: the smaller new entity id first, then the type, then the fact's start
    node id (parallel facts between the same two entities, stored either way)."""
    same = unit32(np.array([0.5, 0.5, 0.5, 0.5]))
    write_graph(store, Graph({"a": "A", "b": "B", "c": "C"}, [
        FactSpec("a", "worked_with", "b", "a worked with b", same),
        FactSpec("b", "worked_with", "a", "b worked with a", same),
        FactSpec("b", "acted_with", "a", "b acted with a", same),
        FactSpec("c", "acted_with", "a", "c acted with a", same),
    ]))

    def firsts(width: int) -> list[tuple[str, str, str]]:
        return [p.triples[0] for p in beam_paths(store, Q, ["a"], width=width, max_length=1)]

    assert firsts(1) == [("b", "acted_with", "a")]
    assert firsts(2) == [("b", "acted_with", "a"), ("a", "worked_with", "b")]
    assert firsts(3) == [("b", "acted_with", "a"), ("a", "worked_with", "b"),
                         ("b", "worked_with", "a")]
    assert firsts(4)[3] == ("c", "acted_with", "a")


def test_bad_options_are_one_line_errors(movies: Any) -> None:
    for kwargs, message in (({"width": 0}, "beam width must be an integer of at least 1"),
                            ({"max_length": 0}, "max_length must be an integer of at least 1"),
                            ({"direction": "boht"}, "unknown beam direction 'boht' \\(did you "
                                                    "mean 'both'\\?\\); choose one of both, out")):
        with pytest.raises(BeamError, match=message) as info:
            beam_paths(movies, Q, ["kismet"], **kwargs)
        assert "\n" not in str(info.value)
    with pytest.raises(BeamError, match="top_k must be an integer of at least 0"):
        complete_subgraph(movies, Q, [("kismet", "directed_by", "dieterle")], top_k=-1)
    with pytest.raises(BeamError, match="question vector"):
        beam_paths(movies, [], ["kismet"])


# ---------------------------------------------------------------------- the data contract
TRIPLES = """\
Kismet|directed_by|William Dieterle
Kismet|starred_actors|Marlene Dietrich
Kismet|release_year|1944
The Last Flight|directed_by|William Dieterle
The Last Flight|release_year|1931
Blonde Venus|starred_actors|Marlene Dietrich
Blonde Venus|directed_by|Josef von Sternberg
"""


def test_beam_walks_what_the_loader_writes(cli_store: Any, embedder: Any, tmp_path: Path) -> None:
    """``kgdb load triples --ttr`` writes the facts the beam reads (the data contract)."""
    from kgdb.cli import cli

    path = tmp_path / "movies.txt"
    path.write_text(TRIPLES, encoding="utf-8")
    result = CliRunner().invoke(cli, ["load", "triples", str(path), "--format", "tsv",
                                      "--sep", "|", "--ttr", "--no-progress", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["ttr"]["written"] == 7
    ids = {r["name"]: r["id"] for r in cli_store.run(
        "MATCH (e:Entity) RETURN e.id AS id, e.name AS name").records()}
    q = embedder.embed_one("Who directed the films that Marlene Dietrich starred in?")
    paths = beam_paths(cli_store, q, [ids["Marlene Dietrich"]], width=2, max_length=2)
    ends = {p.names[-1] for p in paths if p.length == 2}
    assert ends == {"William Dieterle", "Josef von Sternberg", "1944"}
    assert all(f[3] for p in paths for f in p.facts)  # every fact has its text


# ---------------------------------------------------------------------- timing (reported)
def test_timing_on_a_few_thousand_facts(store: Any, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(5)
    ids = [f"n{i:04d}" for i in range(1000)]
    triples = {(str(h), str(rng.choice(RELATIONS)), str(t))
               for h, t in (rng.choice(ids, size=2, replace=False) for _ in range(4000))}
    facts = [FactSpec(h, r, t, f"{h} {r} {t}", unit32(rng.normal(size=DIM)))
             for h, r, t in sorted(triples)]
    write_graph(store, Graph({i: i for i in ids}, facts))
    q = unit32(rng.normal(size=DIM))
    sources = [str(s) for s in rng.choice(ids, size=10, replace=False)]
    times = []
    for _ in range(7):  # the first two warm the plan caches (and Neo4j's JIT) up
        start = time.perf_counter()
        found = beam_paths(store, q, sources, width=3, max_length=3)
        times.append(time.perf_counter() - start)
    elapsed = sorted(times[2:])[2]
    expected = reference_beam(Graph({i: i for i in ids}, facts), q, sources, 3, 3, "both")
    assert {path_key(p.entities, p.facts) for p in found} == {p.key for p in expected}
    with capsys.disabled():
        print(f"\n[{store.dialect.NAME}] beam_paths, {len(facts)} facts, 10 sources, W=3, L=3:"
              f" {len(found)} paths, median {elapsed * 1000:.1f} ms of 5 runs")

