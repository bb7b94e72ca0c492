"""Evidence for other tools: JSON, Mermaid, GraphML and one self-contained HTML file, all drawn
from the one evidence shape (:class:`~kgdb.retrieve.evidence.Evidence`, with the answer when
there is one). ``kgdb retrieve|ask --format`` and the service's ``?format=`` use
:func:`export`; the web page of ``kgdb serve`` draws the same :func:`evidence_graph`.

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
from dataclasses import dataclass, field
from typing import Literal

from kgdb.retrieve.evidence import Evidence, Json
from kgdb.retrieve.solver import Answer

ExportFormat = Literal["json", "mermaid", "graphml", "html"]
FORMATS: tuple[str, ...] = ("json", "mermaid", "graphml", "html")
MEDIA_TYPES = {"json": "application/json", "mermaid": "text/vnd.mermaid; charset=utf-8",
               "graphml": "application/graphml+xml", "html": "text/html; charset=utf-8"}
SUFFIXES = {"json": ".json", "mermaid": ".mmd", "graphml": ".graphml", "html": ".html"}
HTML_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; " \
           "form-action 'none'; frame-ancestors 'none'"
"""The Content-Security-Policy an exported HTML file is served with (and carries in a meta
element): no script at all, no other origin."""


@dataclass
class Node:
    """An entity the evidence names: ``variables`` are the pattern variables it matched."""

    id: str
    name: str
    variables: list[str] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Json]:
        return {"id": self.id, "name": self.name, "variables": list(self.variables),
                "groups": list(self.groups)}


@dataclass(frozen=True)
class Edge:
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

    def to_json(self) -> dict[str, Json]:
        return {"nodes": [n.to_json() for n in self.nodes],
                "edges": [e.to_json() for e in self.edges]}


def evidence_graph(evidence: Evidence) -> EvidenceGraph:
    """The facts as a graph: one node per entity (by id), one edge per fact, each entity
    marked with the pattern variables it matched in each group (SimGRAG's subgraphs)."""
    nodes: dict[str, Node] = {}

    def node(key: str, name: str) -> Node:
        found = nodes.get(key)
        if found is None:
            found = nodes[key] = Node(key, name)
        return found

    for group in evidence.groups:
        for variable, node_id, name in group.nodes:
            n = node(node_id, name)
            if variable not in n.variables:
                n.variables.append(variable)
    edges = []
    for f in evidence.facts:
        for key, name in ((f.head_id or f.head, f.head), (f.tail_id or f.tail, f.tail)):
            n = node(key, name)
            if f.group and f.group not in n.groups:
                n.groups.append(f.group)
        edges.append(Edge(f.head_id or f.head, f.tail_id or f.tail, f.relation, f.group,
                          f.score))
    return EvidenceGraph(list(nodes.values()), edges)


def export(result: Answer | Evidence, format: str) -> str:
    """``result`` as text in ``format`` (:data:`FORMATS`)."""
    if format == "json":
        return json.dumps(result.to_json(), ensure_ascii=False, indent=2)
    if format == "mermaid":
        return to_mermaid(result)
    if format == "graphml":
        return to_graphml(result)
    if format == "html":
        return to_html(result)
    raise ValueError(f"unknown format {format!r}; choose from {', '.join(FORMATS)}")


def _parts(result: Answer | Evidence) -> tuple[Evidence, Answer | None]:
    return (result.evidence, result) if isinstance(result, Answer) else (result, None)


# ---------------------------------------------------------------------- Mermaid
_MERMAID_SAFE = re.compile(r"[A-Za-z0-9 _.,:;()/-]")


def mermaid_label(text: str, limit: int = 120) -> str:
    """``text`` as a quoted Mermaid label: every character outside letters, digits, space
    and ``_.,:;()/-`` written as Mermaid's entity code ``#NNN;`` (quotes, brackets, pipes,
    markup and bidirectional controls cannot end the label or reach the page as markup)."""
    short = text if len(text) <= limit else text[: limit - 1] + "\u2026"
    return '"' + "".join(c if _MERMAID_SAFE.fullmatch(c) else f"#{ord(c)};"
                         for c in short) + '"'


def to_mermaid(result: Answer | Evidence) -> str:
    """A Mermaid flowchart of the evidence graph (paste it into a ticket or a notebook)."""
    evidence, _ = _parts(result)
    graph = evidence_graph(evidence)
    ids = {n.id: f"n{i}" for i, n in enumerate(graph.nodes)}
    lines = ["flowchart LR"]
    for n in graph.nodes:
        label = n.name + (f" ({', '.join(n.variables)})" if n.variables else "")
        lines.append(f"    {ids[n.id]}[{mermaid_label(label)}]")
    for e in graph.edges:
        label = e.relation + (f" [{e.group}]" if e.group else "")
        lines.append(f"    {ids[e.source]} -->|{mermaid_label(label)}| {ids[e.target]}")
    marked = [ids[n.id] for n in graph.nodes if n.variables]
    if marked:
        lines.append("    classDef variable stroke-width:3px,stroke-dasharray:4 2")
        lines.append(f"    class {','.join(marked)} variable")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- GraphML
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot carry replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


def to_graphml(result: Answer | Evidence) -> str:
    """GraphML (Gephi, yEd, NetworkX, Neo4j's APOC import): nodes with ``name`` and
    ``variables``, edges with ``relation``, ``group`` and ``score``; the graph carries the
    question, the solver and the answer."""
    evidence, answer = _parts(result)
    graph = evidence_graph(evidence)
    ns = "http://graphml.graphdrawing.org/xmlns"
    root = ET.Element("graphml", {"xmlns": ns})
    keys = [("question", "graph", "string"), ("solver", "graph", "string"),
            ("score_kind", "graph", "string"), ("answer", "graph", "string"),
            ("name", "node", "string"), ("variables", "node", "string"),
            ("groups", "node", "string"), ("relation", "edge", "string"),
            ("group", "edge", "int"), ("score", "edge", "double")]
    for name, domain, kind in keys:
        ET.SubElement(root, "key", {"id": name, "for": domain, "attr.name": name,
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
    ids = {n.id: f"n{i}" for i, n in enumerate(graph.nodes)}
    for n in graph.nodes:
        element = ET.SubElement(g, "node", {"id": ids[n.id]})
        data(element, "name", n.name)
        data(element, "variables", ", ".join(n.variables))
        data(element, "groups", ",".join(str(x) for x in n.groups))
    for i, e in enumerate(graph.edges):
        element = ET.SubElement(g, "edge", {"id": f"e{i}", "source": ids[e.source],
                                            "target": ids[e.target]})
        data(element, "relation", e.relation)
        data(element, "group", e.group)
        data(element, "score", e.score)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") \
        + "\n"


# ---------------------------------------------------------------------- layout and SVG
def layout(graph: EvidenceGraph, width: float = 900, height: float = 600,
           iterations: int = 60) -> dict[str, tuple[float, float]]:
    """Positions for the nodes: a force-directed layout (Fruchterman-Reingold), started from a
    circle so that it is the same on every run."""
    import numpy as np

    n = len(graph.nodes)
    if n == 0:
        return {}
    index = {node.id: i for i, node in enumerate(graph.nodes)}
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
    return {node.id: (float(scaled[i, 0]), float(scaled[i, 1]))
            for i, node in enumerate(graph.nodes)}


PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac")


def svg_drawing(graph: EvidenceGraph, width: int = 900, height: int = 600) -> str:
    """The graph as inline SVG markup, every text escaped; colours tell groups apart and a
    dashed ring marks a node that matched a pattern variable."""
    pos = layout(graph, width, height)
    esc = html.escape
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
           f'role="img" aria-label="evidence graph: {len(graph.nodes)} entities, '
           f'{len(graph.edges)} facts">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" '
           'fill="#888"/></marker></defs>']
    for e in graph.edges:
        (x1, y1), (x2, y2) = pos[e.source], pos[e.target]
        dx, dy = x2 - x1, y2 - y1
        length = math.hypot(dx, dy) or 1.0
        r = 14
        colour = PALETTE[(e.group - 1) % len(PALETTE)] if e.group else "#888"
        out.append(f'<g class="edge"><title>{esc(e.relation)}</title>'
                   f'<line x1="{x1 + dx / length * r:.1f}" y1="{y1 + dy / length * r:.1f}" '
                   f'x2="{x2 - dx / length * r:.1f}" y2="{y2 - dy / length * r:.1f}" '
                   f'stroke="{colour}" stroke-width="1.5" marker-end="url(#arrow)"/>'
                   f'<text x="{(x1 + x2) / 2:.1f}" y="{(y1 + y2) / 2 - 4:.1f}" font-size="11" '
                   f'text-anchor="middle" fill="#555">{esc(_short(e.relation, 40))}</text></g>')
    for n in graph.nodes:
        x, y = pos[n.id]
        colour = PALETTE[(n.groups[0] - 1) % len(PALETTE)] if n.groups else "#888"
        ring = (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="18" fill="none" stroke="#222" '
                f'stroke-dasharray="4 2"/>') if n.variables else ""
        label = _short(n.name, 40) + (f" ({', '.join(n.variables)})" if n.variables else "")
        out.append(f'<g class="node"><title>{esc(n.name)}\nid: {esc(n.id)}</title>{ring}'
                   f'<circle cx="{x:.1f}" cy="{y:.1f}" r="12" fill="{colour}"/>'
                   f'<text x="{x:.1f}" y="{y + 28:.1f}" font-size="12" text-anchor="middle" '
                   f'unicode-bidi="isolate">{esc(label)}</text></g>')
    out.append("</svg>")
    return "\n".join(out)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


# ---------------------------------------------------------------------- HTML
_STYLE = """body{font:14px system-ui,sans-serif;margin:2em;color:#222;max-width:70em}
svg{border:1px solid #ddd;width:100%;height:auto;background:#fcfcfc}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.2em .5em;
text-align:left;vertical-align:top;unicode-bidi:isolate}pre{background:#f5f5f5;padding:.5em;
white-space:pre-wrap;overflow-wrap:anywhere}.answer{font-size:1.2em}"""


def to_html(result: Answer | Evidence) -> str:
    """One self-contained HTML file: the question and answer, the evidence drawn (inline SVG),
    the facts and passages as tables, the Cypher that ran, the timings and LLM usage. It holds
    no script and loads nothing from elsewhere."""
    evidence, answer = _parts(result)
    esc = html.escape
    graph = evidence_graph(evidence)
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
        parts.append("<h2>Passages</h2><table><tr><th>document</th><th>text</th>"
                     "<th>score</th></tr>")
        parts += [f"<tr><td>{esc(p.document)}</td><td>{esc(p.text)}</td>"
                  f"<td>{_score(p.score)}</td></tr>" for p in evidence.passages]
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
