"""SimGRAG's pattern front-end: patterns as the triples a model writes (paper sections 4.1
and 4.3), ``(head, relation, tail)`` texts with ``UNKNOWN ...`` marking unknowns, to and from
the IR's :class:`~kgdb.ir.Pattern`."""

from __future__ import annotations

from kgdb.ir import UNKNOWN_PREFIX, EdgeRef, NodeRef, Pattern, PatternError


def parse_unknown(text: str) -> tuple[str, ...] | None:
    """``UNKNOWN director 1`` -> ``("director",)``; ``UNKNOWN 1`` -> ``()``; a name -> None.

    The words between the keyword and the trailing id are the type hint (paper 4.3).
    """
    words = text.strip().split()
    if not words or words[0].upper() != UNKNOWN_PREFIX:
        return None
    rest = words[1:]
    if rest and rest[-1].isdigit():
        rest = rest[:-1]
    type_text = " ".join(rest).strip()
    if type_text.lower() in ("", "entity", "node", "relation", "thing"):
        return ()
    return (type_text,)


def pattern_from_triples(triples: list[tuple[str, str, str]]) -> Pattern:
    """Build a pattern from ``(head, relation, tail)`` texts.

    The same text is the same node; ``UNKNOWN ...`` marks an unknown node or relation (the
    same ``UNKNOWN x 1`` text twice is the same unknown node). Node variables are ``n0,
    n1, ...`` in order of first mention, edge variables ``e0, e1, ...`` in triple order.
    """
    nodes: dict[str, NodeRef] = {}
    edges: list[EdgeRef] = []

    def node(text: str) -> str:
        key = " ".join(text.split())
        if key not in nodes:
            types = parse_unknown(key)
            var = f"n{len(nodes)}"
            nodes[key] = (NodeRef(var, None, types, label=key) if types is not None
                          else NodeRef(var, key, label=key))
        return nodes[key].var

    for i, (head, relation, tail) in enumerate(triples):
        source, target = node(head), node(tail)
        if source == target:
            raise PatternError(f"triple {i + 1} ({head!r}, {relation!r}, {tail!r}) links a "
                               "node to itself")
        known = parse_unknown(relation) is None
        edges.append(EdgeRef(f"e{i}", source, target, " ".join(relation.split()) if known
                             else None, label=" ".join(relation.split())))
    return Pattern(tuple(nodes.values()), tuple(edges))


def pattern_triples(pattern: Pattern) -> list[tuple[str, str, str]]:
    """The pattern as ``(head, relation, tail)`` texts (inverse of :func:`pattern_from_triples`)."""
    texts = {n.var: n.display for n in pattern.nodes}
    return [(texts[e.source], e.display, texts[e.target]) for e in pattern.edges]
