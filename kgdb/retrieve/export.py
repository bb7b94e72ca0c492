"""Evidence for other tools: JSON, Mermaid, GraphML and one self-contained HTML file, all drawn
from the one evidence shape (:class:`~kgdb.retrieve.evidence.Evidence`, with the answer when
there is one). ``kgdb retrieve|ask --format`` and the service's ``?format=`` use
:func:`export`; the web page of ``kgdb serve`` draws the same :func:`evidence_graph` (facts;
passages with their documents and the entities they mention; ppr's question, seed phrases
and PageRank paths), in the same :func:`columns` for document evidence (docs/exports.md).

Every name and text in the evidence may be hostile (a loaded graph is data, not markup):
GraphML is built by an XML writer (characters XML cannot carry become U+FFFD), Mermaid labels
are quoted with every character outside a small safe set written as an entity code, and the
HTML escapes every text, holds no script and draws with inline SVG (opens offline).
"""

from __future__ import annotations

import html
import json
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kgdb.retrieve.evidence import Evidence, Json, Passage
from kgdb.retrieve.solver import Answer

if TYPE_CHECKING:
    from kgdb.engine.base import GraphStore

ExportFormat = Literal["json", "mermaid", "graphml", "html"]
FORMATS: tuple[str, ...] = ("json", "mermaid", "graphml", "html")
MEDIA_TYPES = {"json": "application/json", "mermaid": "text/vnd.mermaid; charset=utf-8",
               "graphml": "application/graphml+xml", "html": "text/html; charset=utf-8"}
SUFFIXES = {"json": ".json", "mermaid": ".mmd", "graphml": ".graphml", "html": ".html"}
HTML_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; " \
           "form-action 'none'; frame-ancestors 'none'"
"""The Content-Security-Policy an exported HTML file is served with (and carries in a meta
element): no script at all, no other origin."""


NodeKind = Literal["question", "seed", "phrase", "passage", "document", "entity"]
KINDS: dict[str, tuple[str, str]] = {
    "question": ("the question", "#222222"),
    "seed": ("seed phrase: the question or a sentence near it names it", "#e15759"),
    "phrase": ("phrase reached over a synonym edge", "#f28e2b"),
    "passage": ("passage (chunk), numbered by rank", "#4e79a7"),
    "document": ("document", "#59a14f"),
    "entity": ("entity (colour: its group; dashed ring: a pattern node)", "#888888"),
}
"""The legend: what each kind of node is and its colour (an entity's colour is its group's)."""
LAYERS = {"question": 0, "seed": 1, "phrase": 2, "passage": 3, "document": 4, "entity": 5}
"""A document drawing's columns, left to right: ppr's question, seeds, phrases, then the
passages, their documents and the entities they mention."""
MENTIONS_DRAWN = 8
"""The drawing shows at most this many entities mentioned per passage (the page's passage
text highlights all of them)."""


@dataclass
class Node:
    """A node of the drawing: an entity the evidence names (``variables``: the pattern
    variables it matched), or for document evidence the question, a phrase, a passage or a
    document. ``key`` (``kind:id``) is unique; ``detail`` is its tooltip text."""

    id: str
    name: str
    variables: list[str] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    kind: str = "entity"
    detail: str = ""
    score: float | None = None

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.id}"

    @property
    def label(self) -> str:
        """The name, with the pattern variables it matched unless they only repeat it."""
        shown = [v for v in self.variables if v != self.name]
        return self.name + (f" ({', '.join(shown)})" if shown else "")

    def to_json(self) -> dict[str, Json]:
        return {"key": self.key, "id": self.id, "kind": self.kind, "name": self.name,
                "variables": list(self.variables), "groups": list(self.groups),
                "detail": self.detail, "score": self.score}


@dataclass(frozen=True)
class Edge:
    """From node key ``source`` to node key ``target``."""

    source: str
    target: str
    relation: str
    group: int
    score: float | None

    def to_json(self) -> dict[str, Json]:
        return {"source": self.source, "target": self.target, "relation": self.relation,
                "group": self.group, "score": self.score}


@dataclass
class EvidenceGraph:
    nodes: list[Node]
    edges: list[Edge]

    @property
    def documents(self) -> bool:
        """Whether it draws document evidence (columns) rather than facts alone."""
        return any(n.kind != "entity" for n in self.nodes)

    def to_json(self) -> dict[str, Json]:
        return {"nodes": [n.to_json() for n in self.nodes],
                "edges": [e.to_json() for e in self.edges]}


def passage_source(passage: Passage) -> str:
    """Where a passage comes from ("libtasn1.pdf p. 12") when its reader said so, else ""."""
    source = getattr(passage, "source", None)
    if not source:
        return ""
    if isinstance(source, Mapping):
        where = [str(source[k]) for k in ("file", "document") if source.get(k)][:1]
        if source.get("page"):
            where.append(f"p. {source['page']}")
        if source.get("section"):
            where.append(f"\u00a7 {source['section']}")
        return " ".join(where)
    return str(source)


def evidence_graph(evidence: Evidence,
                   mentions: Mapping[str, Sequence[str]] | None = None) -> EvidenceGraph:
    """What the evidence shows, as a graph. Facts: one node per entity (by id), one edge per
    fact, each entity marked with the pattern variables it matched in each group (SimGRAG's
    subgraphs). Passages: one node each, an edge to its document, and to the entities it
    mentions (``mentions``: names per chunk id, the mutual index's, at most
    :data:`MENTIONS_DRAWN` each, and the ends of the facts it supports); for ``ppr`` the
    question, its seed phrases (and synonyms) and the PageRank paths from them to the best
    passages instead of the mentions. The web page (kgdb/serve/ui/app.js, ``buildGraph``)
    draws the same graph."""
    nodes: dict[str, Node] = {}
    edges: dict[tuple[str, str, str], Edge] = {}

    def node(kind: str, key: str, name: str) -> Node:
        found = nodes.get(f"{kind}:{key}")
        if found is None:
            found = nodes[f"{kind}:{key}"] = Node(key, name, kind=kind)
        return found

    def edge(a: Node, relation: str, b: Node, group: int = 0,
             score: float | None = None) -> None:
        edges.setdefault((a.key, relation, b.key), Edge(a.key, b.key, relation, group, score))

    for group in evidence.groups:
        for variable, node_id, name in group.nodes:
            n = node("entity", node_id, name)
            if variable not in n.variables:
                n.variables.append(variable)
    entity_names: dict[str, Node] = {}
    for f in evidence.facts:
        ends = []
        for key, name in ((f.head_id or f.head, f.head), (f.tail_id or f.tail, f.tail)):
            n = node("entity", key, name)
            entity_names.setdefault(name, n)
            if f.group and f.group not in n.groups:
                n.groups.append(f.group)
            ends.append(n)
        edge(ends[0], f.relation, ends[1], f.group, f.score)
    seeds = evidence.detail.get("seeds")
    ppr = isinstance(seeds, list)
    question = node("question", "", evidence.question) if ppr else None
    shown: dict[str, Node] = {}
    for rank, p in enumerate(evidence.passages, 1):
        where = passage_source(p)
        n = node("passage", p.id, f"{rank}. {where or p.id}")
        n.detail = (f"{where}\n" if where else "") + _short(p.text, 300)
        n.score = p.score
        shown[p.id] = n
        edge(n, "in", node("document", p.document, p.document))
    for f in evidence.facts:  # the passages a fact came from mention its ends
        for chunk in f.chunks:
            if chunk in shown:
                for name in (f.head, f.tail):
                    edge(shown[chunk], "mentions", entity_names[name])
    if question is not None and isinstance(seeds, list):
        for s in seeds:
            if not isinstance(s, dict):
                continue
            if s.get("kind") == "passage":
                if str(s.get("chunk")) in shown:
                    edge(question, "similar", shown[str(s.get("chunk"))],
                         score=_number(s.get("weight")))
                continue
            phrase = node("seed", str(s.get("phrase")), str(s.get("phrase")))
            phrase.score = _number(s.get("weight"))
            if s.get("source"):
                phrase.detail = f"named by: {_short(str(s.get('source')), 200)}"
            edge(question, _SEED_RELATION.get(str(s.get("kind")), str(s.get("kind"))),
                 phrase, score=phrase.score)
        bridges = evidence.detail.get("bridges")
        bridged = {(str(b.get("from")), str(b.get("phrase")), str(b.get("chunk")))
                   for b in (bridges if isinstance(bridges, list) else [])
                   if isinstance(b, dict)}
        paths = evidence.detail.get("paths")
        for steps in (paths.values() if isinstance(paths, dict) else ()):
            for path in steps if isinstance(steps, list) else ():
                if isinstance(path, list) and len(path) >= 2:
                    _path([str(x) for x in path], bridged, nodes, shown, node, edge)
    elif mentions:
        for chunk, n in shown.items():
            for name in list(mentions.get(chunk, ()))[:MENTIONS_DRAWN]:
                edge(n, "mentions", entity_names.get(name) or node("entity", name, name))
    return EvidenceGraph(list(nodes.values()), list(edges.values()))


_SEED_RELATION = {"question": "names", "sentence": "near sentence names", "name": "near name"}


def _path(steps: list[str], bridged: set[tuple[str, str, str]], nodes: dict[str, Node],
          shown: dict[str, Node], node: Callable[[str, str, str], Node],
          edge: Callable[..., None]) -> None:
    """One PageRank path of ``ppr``'s evidence: ``[seed phrase, (synonym,) chunk]``, or a
    bridge ``[from chunk, title phrase, chunk]`` (one of ``bridged``)."""
    chunk = shown.get(steps[-1]) or node("passage", steps[-1], steps[-1])
    if tuple(steps) in bridged:
        start = shown.get(steps[0]) or node("passage", steps[0], steps[0])
        title = nodes.get(f"seed:{steps[1]}") or node("phrase", steps[1], steps[1])
        edge(start, "names", title)
        edge(title, "title of", chunk)
        return
    at = nodes.get(f"seed:{steps[0]}") or node("seed", steps[0], steps[0])
    for via in steps[1:-1]:
        step = nodes.get(f"seed:{via}") or node("phrase", via, via)
        edge(at, "synonym", step)
        at = step
    edge(at, "in", chunk)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def export(result: Answer | Evidence, format: str,
           mentions: Mapping[str, Sequence[str]] | None = None) -> str:
    """``result`` as text in ``format`` (:data:`FORMATS`); ``mentions`` (the entities each
    passage mentions, :func:`passage_mentions`) are drawn by the graph formats."""
    if format == "json":
        return json.dumps(result.to_json(), ensure_ascii=False, indent=2)
    if format == "mermaid":
        return to_mermaid(result, mentions)
    if format == "graphml":
        return to_graphml(result, mentions)
    if format == "html":
        return to_html(result, mentions)
    raise ValueError(f"unknown format {format!r}; choose from {', '.join(FORMATS)}")


def passage_mentions(store: GraphStore, evidence: Evidence,
                     limit: int = MENTIONS_DRAWN) -> dict[str, list[str]]:
    """The names of at most ``limit`` entities each passage of ``evidence`` mentions (the
    mutual index), for the drawing of a solver that returns passages without their
    entities; nothing for ``ppr``, whose drawing shows its phrases instead."""
    from kgdb.cypher.explore import chunk_mentions

    if not evidence.passages or "seeds" in evidence.detail:
        return {}
    rows = store.run(chunk_mentions([p.id for p in evidence.passages], limit)).records()
    return {str(r["chunk"]): [str(n) for n in r["names"] or []] for r in rows}


def _parts(result: Answer | Evidence) -> tuple[Evidence, Answer | None]:
    return (result.evidence, result) if isinstance(result, Answer) else (result, None)


# ---------------------------------------------------------------------- Mermaid
_MERMAID_SAFE = re.compile(r"[A-Za-z0-9 _.,:;()/-]")
_MERMAID_WORDS = re.compile(r"style|classdef", re.I)
"""Before parsing, Mermaid (mermaidAPI's ``encodeEntities``) cuts the last ``;`` of every
line matching ``style.*:\\S*#.*;`` or ``classDef.*:\\S*#.*;``, so a label holding these words
lost the end of its last entity code (and the character it stood for)."""


def mermaid_label(text: str, limit: int = 120) -> str:
    """``text`` as a quoted Mermaid label: every character outside letters, digits, space
    and ``_.,:;()/-`` written as Mermaid's entity code ``#NNN;`` (quotes, brackets, pipes,
    markup and bidirectional controls cannot end the label or reach the page as markup), and
    the first letter of ``style`` and ``classDef`` too (see :data:`_MERMAID_WORDS`)."""
    short = text if len(text) <= limit else text[: limit - 1] + "\u2026"
    coded = {m.start() for m in _MERMAID_WORDS.finditer(short)}
    return '"' + "".join(c if i not in coded and _MERMAID_SAFE.fullmatch(c) else f"#{ord(c)};"
                         for i, c in enumerate(short)) + '"'


_MERMAID_SHAPES = {"question": ("{", "}"), "seed": ("([", "])"), "phrase": ("(", ")"),
                   "passage": ("[[", "]]"), "document": ("[(", ")]"), "entity": ("[", "]")}
_MERMAID_SHAPE_NAMES = {"question": "rhombus", "seed": "stadium", "phrase": "rounded box",
                        "passage": "framed box", "document": "cylinder", "entity": "box"}
_MERMAID_FILLS = {"question": "#eeeeee", "seed": "#f9d3d4", "phrase": "#fde3c8",
                  "passage": "#dbe8f6", "document": "#dcefd9"}


def to_mermaid(result: Answer | Evidence,
               mentions: Mapping[str, Sequence[str]] | None = None) -> str:
    """A Mermaid flowchart of the evidence graph (paste it into a ticket or a notebook): one
    shape and colour per kind of node (a legend in comments at the top)."""
    evidence, _ = _parts(result)
    graph = evidence_graph(evidence, mentions)
    ids = {n.key: f"n{i}" for i, n in enumerate(graph.nodes)}
    kinds = [k for k in KINDS if any(n.kind == k for n in graph.nodes)]
    lines = ["flowchart LR"]
    if graph.documents:
        lines += [f"    %% legend: {_MERMAID_SHAPE_NAMES[k]}, {k}: {KINDS[k][0]}"
                  for k in kinds]
    for n in graph.nodes:
        left, right = _MERMAID_SHAPES[n.kind]
        lines.append(f"    {ids[n.key]}{left}{mermaid_label(n.label)}{right}")
    for e in graph.edges:
        label = e.relation + (f" [{e.group}]" if e.group else "")
        lines.append(f"    {ids[e.source]} -->|{mermaid_label(label)}| {ids[e.target]}")
    for kind in kinds:
        if kind in _MERMAID_FILLS:  # no ";" on these lines: see _MERMAID_WORDS
            lines.append(f"    classDef {kind} fill:{_MERMAID_FILLS[kind]},"
                         f"stroke:{KINDS[kind][1]}")
            lines.append(f"    class {','.join(ids[n.key] for n in graph.nodes if n.kind == kind)}"
                         f" {kind}")
    marked = [ids[n.key] for n in graph.nodes if n.variables]
    if marked:
        lines.append("    classDef variable stroke-width:3px,stroke-dasharray:4 2")
        lines.append(f"    class {','.join(marked)} variable")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- GraphML
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot carry replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


def to_graphml(result: Answer | Evidence,
               mentions: Mapping[str, Sequence[str]] | None = None) -> str:
    """GraphML (Gephi, yEd, NetworkX, Neo4j's APOC import): nodes with ``kind`` (question,
    seed, phrase, passage, document, entity: :data:`KINDS`), ``name``, ``variables``,
    ``groups``, ``detail`` (a passage's source and text) and ``score``, edges with
    ``relation``, ``group`` and ``score``; the graph carries the question, the solver and the
    answer. A carriage return is written ``&#13;`` (an XML reader turns a raw one into a line
    feed)."""
    evidence, answer = _parts(result)
    graph = evidence_graph(evidence, mentions)
    ns = "http://graphml.graphdrawing.org/xmlns"
    root = ET.Element("graphml", {"xmlns": ns})
    keys = [("question", "graph", "string", "question"), ("solver", "graph", "string", "solver"),
            ("score_kind", "graph", "string", "score_kind"),
            ("answer", "graph", "string", "answer"), ("kind", "node", "string", "kind"),
            ("name", "node", "string", "name"), ("variables", "node", "string", "variables"),
            ("groups", "node", "string", "groups"), ("detail", "node", "string", "detail"),
            ("node_score", "node", "double", "score"),
            ("relation", "edge", "string", "relation"), ("group", "edge", "int", "group"),
            ("score", "edge", "double", "score")]
    for key, domain, kind, name in keys:
        ET.SubElement(root, "key", {"id": key, "for": domain, "attr.name": name,
                                    "attr.type": kind})
    g = ET.SubElement(root, "graph", {"id": "evidence", "edgedefault": "directed"})

    def data(parent: ET.Element, key: str, value: object) -> None:
        if value is None or value == "":
            return
        ET.SubElement(parent, "data", {"key": key}).text = xml_text(str(value))

    data(g, "question", evidence.question)
    data(g, "solver", evidence.solver)
    data(g, "score_kind", evidence.score_kind)
    if answer is not None:
        data(g, "answer", answer.text)
    ids = {n.key: f"n{i}" for i, n in enumerate(graph.nodes)}
    for n in graph.nodes:
        element = ET.SubElement(g, "node", {"id": ids[n.key]})
        data(element, "kind", n.kind)
        data(element, "name", n.name)
        data(element, "variables", ", ".join(n.variables))
        data(element, "groups", ",".join(str(x) for x in n.groups))
        data(element, "detail", n.detail)
        data(element, "node_score", n.score)
    for i, e in enumerate(graph.edges):
        element = ET.SubElement(g, "edge", {"id": f"e{i}", "source": ids[e.source],
                                            "target": ids[e.target]})
        data(element, "relation", e.relation)
        data(element, "group", e.group)
        data(element, "score", e.score)
    ET.indent(root)
    # ElementTree escapes a CR in attributes but writes it raw in text: the only raw CRs of
    # its output are the texts' own
    text = ET.tostring(root, encoding="unicode").replace("\r", "&#13;")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + text + "\n"


# ---------------------------------------------------------------------- layout and SVG
def layout(graph: EvidenceGraph, width: float = 900, height: float = 600,
           iterations: int = 60) -> dict[str, tuple[float, float]]:
    """Positions for the nodes: a force-directed layout (Fruchterman-Reingold), started from a
    circle so that it is the same on every run."""
    import numpy as np

    n = len(graph.nodes)
    if n == 0:
        return {}
    index = {node.key: i for i, node in enumerate(graph.nodes)}
    angle = np.linspace(0, 2 * math.pi, n, endpoint=False)
    pos = np.stack([np.cos(angle), np.sin(angle)], axis=1) * min(width, height) * 0.4
    pairs = np.array([(index[e.source], index[e.target]) for e in graph.edges
                      if e.source != e.target], dtype=int).reshape(-1, 2)
    k = math.sqrt(width * height / n) * 0.6
    heat = min(width, height) / 10
    for _ in range(iterations if n > 1 else 0):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.maximum(np.linalg.norm(delta, axis=2), 0.01)
        move = (delta / dist[..., None] * (k * k / dist)[..., None]).sum(axis=1)
        if len(pairs):
            d = pos[pairs[:, 0]] - pos[pairs[:, 1]]
            length = np.maximum(np.linalg.norm(d, axis=1), 0.01)
            pull = d / length[:, None] * (length * length / k)[:, None]
            np.add.at(move, pairs[:, 0], -pull)
            np.add.at(move, pairs[:, 1], pull)
        move -= pos * 0.02 * k / max(k, 1.0)  # gravity keeps parts together
        size = np.maximum(np.linalg.norm(move, axis=1), 0.01)
        pos += move / size[:, None] * np.minimum(size, heat)[:, None]
        heat *= 0.95
    low, high = pos.min(axis=0), pos.max(axis=0)
    span = np.maximum(high - low, 1e-6)
    margin = 80.0
    scaled = margin + (pos - low) / span * np.array([width - 2 * margin, height - 2 * margin])
    if n == 1:
        scaled[:] = (width / 2, height / 2)
    return {node.key: (float(scaled[i, 0]), float(scaled[i, 1]))
            for i, node in enumerate(graph.nodes)}


COLUMN, ROW, MARGIN = 240, 44, 40
"""A document drawing's column width, row height and margin (pixels)."""
PLACING = ("passage", "phrase", "document", "seed", "entity", "question")
"""The order the columns are placed in: the passages by rank, then each column ordered by
its nodes' neighbours already placed (fewer crossings)."""


def columns(graph: EvidenceGraph) -> tuple[dict[str, tuple[float, float]], float, float]:
    """Positions for a document drawing, one column per kind of node (:data:`LAYERS`), and
    the drawing's width and height. kgdb/serve/ui/app.js (``columns``) does the same."""
    used = sorted({LAYERS[n.kind] for n in graph.nodes})
    x_of = {layer: MARGIN + i * COLUMN for i, layer in enumerate(used)}
    neighbours: dict[str, list[str]] = {}
    for e in graph.edges:
        neighbours.setdefault(e.source, []).append(e.target)
        neighbours.setdefault(e.target, []).append(e.source)
    rank: dict[str, float] = {}
    for kind in PLACING:
        members = [n for n in graph.nodes if n.kind == kind]
        if kind != "passage":
            centre = {}
            for n in members:
                placed = [rank[k] for k in neighbours.get(n.key, []) if k in rank]
                centre[n.key] = sum(placed) / len(placed) if placed else math.inf
            members.sort(key=lambda n: centre[n.key])  # stable: ties keep their order
        rank.update({n.key: float(i) for i, n in enumerate(members)})
    tallest = max((sum(1 for n in graph.nodes if LAYERS[n.kind] == layer) for layer in used),
                  default=1)
    pos = {}
    for layer in used:
        members = sorted((n for n in graph.nodes if LAYERS[n.kind] == layer),
                         key=lambda n: rank[n.key])
        top = MARGIN + (tallest - len(members)) * ROW / 2
        pos.update({n.key: (float(x_of[layer]), top + i * ROW) for i, n in enumerate(members)})
    width = 2 * MARGIN + (len(used) - 1) * COLUMN + 200
    return pos, float(width), float(2 * MARGIN + (tallest - 1) * ROW)


PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac")


def _colour(n: Node) -> str:
    if n.kind != "entity":
        return KINDS[n.kind][1]
    return PALETTE[(n.groups[0] - 1) % len(PALETTE)] if n.groups else "#888"


def _shape(kind: str, x: float, y: float, fill: str) -> str:
    """The mark of a node of ``kind`` at ``x, y`` (the page's app.js ``shape`` draws the
    same): a diamond for the question, a square for a passage, a tall box for a document, a
    circle otherwise."""
    if kind == "question":
        return (f'<polygon points="{x:.1f},{y - 13:.1f} {x + 13:.1f},{y:.1f} {x:.1f},'
                f'{y + 13:.1f} {x - 13:.1f},{y:.1f}" fill="{fill}"/>')
    if kind == "passage":
        return f'<rect x="{x - 10:.1f}" y="{y - 10:.1f}" width="20" height="20" fill="{fill}"/>'
    if kind == "document":
        return f'<rect x="{x - 8:.1f}" y="{y - 12:.1f}" width="16" height="24" fill="{fill}"/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{9 if kind in ("seed", "phrase") else 12}" ' \
           f'fill="{fill}"/>'


def svg_drawing(graph: EvidenceGraph, width: int = 900, height: int = 600) -> str:
    """The graph as inline SVG markup, every text escaped, with a legend of the kinds of
    node drawn: facts alone by a force-directed layout, document evidence in columns
    (:func:`columns`). Colours tell groups and kinds apart; a dashed ring marks a node that
    matched a pattern variable."""
    esc = html.escape
    in_columns = graph.documents
    if in_columns:
        pos, w, h = columns(graph)
    else:
        pos, w, h = layout(graph, width, height), float(width), float(height)
    kinds = [k for k in KINDS if any(n.kind == k for n in graph.nodes)]
    total = h + 20 * len(kinds) + (40 if graph.documents else 20)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w:.0f} {total:.0f}" '
           f'role="img" aria-label="evidence graph: {len(graph.nodes)} nodes, '
           f'{len(graph.edges)} edges">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" '
           'fill="#888"/></marker></defs>']
    for e in graph.edges:
        (x1, y1), (x2, y2) = pos[e.source], pos[e.target]
        dx, dy = x2 - x1, y2 - y1
        length = math.hypot(dx, dy) or 1.0
        r = 14
        colour = PALETTE[(e.group - 1) % len(PALETTE)] if e.group else "#888"
        a = (x1 + dx / length * r, y1 + dy / length * r)
        b = (x2 - dx / length * r, y2 - dy / length * r)
        if in_columns and abs(dx) < 1:  # within a column: an arc to its right
            bend = x1 + 30 + abs(dy) / 4
            line = (f'<path d="M{x1 + 10:.1f},{y1:.1f} Q{bend:.1f},{(y1 + y2) / 2:.1f} '
                    f'{x2 + 10:.1f},{y2:.1f}" fill="none" ')
            mid = (bend - 10, (y1 + y2) / 2)
        else:
            line = f'<line x1="{a[0]:.1f}" y1="{a[1]:.1f}" x2="{b[0]:.1f}" y2="{b[1]:.1f}" '
            mid = ((x1 + x2) / 2, (y1 + y2) / 2 - 4)
        text = "" if in_columns and e.relation in _QUIET else (
            f'<text x="{mid[0]:.1f}" y="{mid[1]:.1f}" font-size="11" text-anchor="middle" '
            f'fill="#555">{esc(_short(e.relation, 40))}</text>')
        out.append(f'<g class="edge"><title>{esc(e.relation)}</title>{line}'
                   f'stroke="{colour}" stroke-width="1.5" marker-end="url(#arrow)"/>{text}</g>')
    for n in graph.nodes:
        x, y = pos[n.key]
        ring = (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="18" fill="none" stroke="#222" '
                f'stroke-dasharray="4 2"/>') if n.variables else ""
        if in_columns:  # above the mark: the arrows leave it to the right
            where = f'x="{x - 12:.1f}" y="{y + 30 if n.kind == "question" else y - 15:.1f}" ' \
                'text-anchor="start"'
        else:
            where = f'x="{x:.1f}" y="{y + 28:.1f}" text-anchor="middle"'
        tip = "\n".join(t for t in (n.name, f"{n.kind}: {n.id}" if n.id != n.name else n.kind,
                                    n.detail) if t)
        out.append(f'<g class="node {n.kind}"><title>{esc(tip)}</title>{ring}'
                   f'{_shape(n.kind, x, y, _colour(n))}'
                   f'<text {where} font-size="12" unicode-bidi="isolate">'
                   f'{esc(_short(n.label, 36 if in_columns else 40))}</text></g>')
    for i, kind in enumerate(kinds):
        y = h + 20 + 20 * i
        out.append(f'<g class="legend">{_shape(kind, MARGIN / 2 + 10, y, KINDS[kind][1])}'
                   f'<text x="{MARGIN / 2 + 28:.1f}" y="{y + 4:.1f}" font-size="12">'
                   f'{esc(kind)}: {esc(KINDS[kind][0])}</text></g>')
    arrows = arrows_legend(graph)
    if arrows:
        out.append(f'<text x="{MARGIN / 2:.1f}" y="{total - 6:.1f}" font-size="12">'
                   f'{esc(arrows)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def arrows_legend(graph: EvidenceGraph) -> str:
    """What the arrows of a document drawing mean ("" for facts alone)."""
    kinds = {n.kind for n in graph.nodes}
    parts = []
    if "seed" in kinds:
        parts.append("question \u2192 seed phrase (\u2192 synonym) \u2192 passage: a PageRank path")
    if {"passage", "document"} <= kinds:
        parts.append("passage \u2192 its document")
    if {"passage", "entity"} <= kinds:
        parts.append("passage \u2192 an entity it mentions")
    return "arrows: " + "; ".join(parts) if parts else ""


_QUIET = frozenset({"in", "mentions", "similar", "synonym", "names", "near sentence names",
                    "near name", "title of"})
"""Relations a document drawing does not write on its arrows (the legend says what arrows
between kinds mean; each arrow's tooltip names it)."""


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


# ---------------------------------------------------------------------- HTML
_STYLE = """body{font:14px system-ui,sans-serif;margin:2em;color:#222;max-width:70em}
svg{border:1px solid #ddd;width:100%;height:auto;background:#fcfcfc}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.2em .5em;
text-align:left;vertical-align:top;unicode-bidi:isolate}pre{background:#f5f5f5;padding:.5em;
white-space:pre-wrap;overflow-wrap:anywhere}.answer{font-size:1.2em}"""


def to_html(result: Answer | Evidence,
            mentions: Mapping[str, Sequence[str]] | None = None) -> str:
    """One self-contained HTML file: the question and answer, the evidence drawn (inline SVG),
    the facts and passages as tables, the Cypher that ran, the timings and LLM usage. It holds
    no script and loads nothing from elsewhere."""
    evidence, answer = _parts(result)
    esc = html.escape
    graph = evidence_graph(evidence, mentions)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f'<meta http-equiv="Content-Security-Policy" content="{HTML_CSP}">',
             f"<title>kgdb evidence: {esc(_short(evidence.question, 80))}</title>",
             f"<style>{_STYLE}</style></head><body>",
             f"<h1>{esc(evidence.question)}</h1>",
             f"<p>solver <b>{esc(evidence.solver)}</b>, scores: {esc(evidence.score_kind)}</p>"]
    if answer is not None and answer.text is not None:
        parts.append(f'<p class="answer">{esc(answer.text)}</p>')
    if answer is not None and answer.verdict is not None:
        parts.append(f"<p>verdict: {esc(str(answer.verdict))}</p>")
    if graph.nodes:
        parts += ["<h2>Evidence graph</h2>", svg_drawing(graph)]
    if evidence.groups:
        parts.append("<h2>Groups</h2><table><tr><th>rank</th><th>kind</th><th>score</th>"
                     "<th>pattern variables</th></tr>")
        for g in evidence.groups:
            nodes = ", ".join(f"{v} = {name}" for v, _, name in g.nodes)
            parts.append(f"<tr><td>{g.rank}</td><td>{esc(g.kind)}</td>"
                         f"<td>{_score(g.score)}</td><td>{esc(nodes)}</td></tr>")
        parts.append("</table>")
    if evidence.facts:
        parts.append("<h2>Facts</h2><table><tr><th>group</th><th>head</th><th>relation</th>"
                     "<th>tail</th><th>score</th></tr>")
        parts += [f"<tr><td>{f.group or ''}</td><td>{esc(f.head)}</td><td>{esc(f.relation)}"
                  f"</td><td>{esc(f.tail)}</td><td>{_score(f.score)}</td></tr>"
                  for f in evidence.facts]
        parts.append("</table>")
    if evidence.passages:
        parts.append("<h2>Passages</h2><table><tr><th>rank</th><th>document</th>"
                     "<th>source</th><th>text</th><th>score</th></tr>")
        parts += [f"<tr><td>{i}</td><td>{esc(p.document)}</td>"
                  f"<td>{esc(passage_source(p))}</td><td>{esc(p.text)}</td>"
                  f"<td>{_score(p.score)}</td></tr>"
                  for i, p in enumerate(evidence.passages, 1)]
        parts.append("</table>")
    if not (evidence.facts or evidence.passages):
        parts.append("<p>Nothing was found.</p>")
    if evidence.statements:
        parts.append("<h2>Cypher</h2>")
        parts += [f"<pre>{esc(s.text)}</pre>" for s in evidence.statements]
    if evidence.timings_ms:
        parts.append("<h2>Timings</h2><p>" + esc(", ".join(
            f"{k} {v:.1f} ms" for k, v in evidence.timings_ms.items())) + "</p>")
    usage = evidence.usage
    if usage.requests:
        parts.append(f"<p>LLM: {esc(usage.describe())}</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _score(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"
