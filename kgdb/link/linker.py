"""The one linker: pattern texts to graph candidates, for every solver.

A :class:`~kgdb.ir.Pattern` names entities, relation phrases and type hints; the linker looks
them all up at once and returns one :class:`~kgdb.ir.LinkedPattern` per pattern. Two ways,
chosen by :attr:`LinkSettings.mode`:

``meaning`` (SimGRAG, section 4.3)
    Every known name gets its top-``k_nodes`` entities by vector distance, every relation
    phrase its top-``k_relations`` relation types, every type hint of an unknown node the
    entity types among its top-``k_types`` that label entities. Candidates keep their
    distances: they are the Graph Semantic Distance's terms.

``names`` (logical forms, KAG's solver)
    Names match exactly, then ignoring case (through the full-text index), then by meaning:
    the best candidates within ``max_distance`` (L2 between MiniLM vectors, default 0.9) whose
    spelling is also close (``min_spelling``, default 0.6: difflib's similarity ratio of the
    case-folded names), so that a misspelling ("Kismat") links and a different name that
    merely means something alike ("Tom Hanks" -> "Tom Reed", distance 0.90, spelling 0.47)
    does not. A link by meaning is noted with its distance; a refused one names the nearest
    candidates ("no entity named 'Tom Hanks'; nearest: Tom Reed (0.90), ...").
    Relation phrases match the graph's relationship types by spelling
    (:mod:`kgdb.link.names`), then by meaning. Type hints match
    the EntityType catalog by name, then by meaning, widened through ``isA``/``contains``;
    a type that labels no entity is ignored, with a note.

Round trips: ``meaning`` embeds every text in one batch and runs one statement for the
entity and relation candidates (plus one for entity types when the graph has typed
entities); ``names`` runs one exact look-up, one case-insensitive look-up for what is left,
the catalog reads (once per linker), and one vector statement for everything still unlinked.
SimGRAG's retrieval on a Neo4j with kgdb's plugin runs the ``meaning`` searches inside its one
``kgdb.simgrag.search`` call instead (:meth:`Linker.meaning_searches`, then
:meth:`Linker.linked_by_meaning` with the candidates it returns).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any, Protocol

from kgdb import vocabulary
from kgdb.cypher import link as cy
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.errors import KgdbError, StatementError
from kgdb.ir import (
    DISTINCTNESS,
    Candidate,
    Distinctness,
    LinkedEdge,
    LinkedNode,
    LinkedPattern,
    Pattern,
)
from kgdb.link.names import lexical_relation
from kgdb.statement import Statement
from kgdb.vocabulary import CHUNK, CONCEPT, DOCUMENT, ENTITY, ENTITY_TYPE, EVENT, RELATION_TYPE

ENTITY_LABEL = vocabulary.ENTITY
RELATION_TYPE_LABEL = vocabulary.RELATION_TYPE
ENTITY_TYPE_LABEL = vocabulary.ENTITY_TYPE
KGDB_LABELS = frozenset({ENTITY, EVENT, CONCEPT, CHUNK, DOCUMENT, ENTITY_TYPE,
                         RELATION_TYPE, "KgdbMeta"})
"""kgdb's own structural labels: a graph using no other label has no typed entities, so
type hints are not searched."""
MODES = ("meaning", "names")
NO_ENTITY = "no entity named {!r} was found"
NEAREST = "no entity named {!r}; nearest: {}"
BY_MEANING = "{!r} linked by meaning to {} (L2 distance {:.2f}, spelling {:.2f})"
NEAREST_SHOWN = 3
NO_RELATION = "no relation like {!r} was found"
NO_TYPE = "type {!r} labels no entity in this graph; it is ignored"
TIE = 1e-6
"""Distances this close to the best count as ties (``names`` mode keeps all of them)."""


Search = tuple[str, cy.VectorSearch, list[str]]
"""One vector search of the linker: kind (``node``, ``relation``, ``type``), the search, and
the text of each of its query vectors."""


def types_apply(labels_in_use: set[str]) -> bool:
    """Whether type hints filter candidates: only where the graph has a type catalog *and*
    entities carry type labels (paper, appendix C.1); otherwise a typed unknown matches
    anything."""
    return ENTITY_TYPE_LABEL in labels_in_use and bool(labels_in_use - KGDB_LABELS)


def collect_candidates(rows: Sequence[dict[str, Any]], searches: Sequence[Search]) -> tuple[
        dict[tuple[str, str], list[Candidate]], set[str]]:
    """Rows ``search, query, id, name, distance`` of ``searches`` (``search`` -1: ``id``
    lists the labels in use) as (kind, text) -> candidates, closest first, one per id, at most
    k; and the labels in use."""
    in_use: set[str] = set()
    per: dict[tuple[str, str], dict[str, Candidate]] = {}
    for row in rows:
        s = int(row["search"])
        if s < 0:
            in_use.update(str(label) for label in row["id"])
            continue
        kind, _, texts = searches[s]
        ident = str(row["id"])
        # Stale index entries can repeat a node (FalkorDB 4.16): one per id.
        per.setdefault((kind, texts[int(row["query"])]), {})[ident] = Candidate(
            ident, str(row["name"]), float(row["distance"]))
    out: dict[tuple[str, str], list[Candidate]] = {}
    for kind, search, texts in searches:
        for text in texts:
            out[(kind, text)] = sorted(per.get((kind, text), {}).values(),
                                       key=lambda c: (c.distance, c.id))[:search.k]
    return out, in_use


class LinkError(KgdbError):
    """Linking cannot run (bad settings, no vector index to search...)."""


@dataclass(frozen=True)
class LinkSettings:
    mode: str = "meaning"
    k_nodes: int = 16
    """Candidates per known name (``meaning``), or nearest names looked at (``names``)."""
    k_relations: int = 16
    k_types: int = 16
    max_distance: float = 0.9
    """``names`` mode: the farthest a by-meaning link may be (MiniLM L2 lies in [0, 2])."""
    min_spelling: float = 0.6
    """``names`` mode: the least spelling similarity (:func:`spelling`, 0 to 1) of a name and
    an entity it links to by meaning."""
    label: str = ENTITY_LABEL
    distinct: Distinctness = "all"

    def check(self) -> None:
        for name in ("k_nodes", "k_relations", "k_types"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise LinkError(f"{name} must be a positive integer, not {value!r}")
        if self.mode not in MODES:
            raise LinkError(f"unknown linking mode {self.mode!r}; choose one of "
                            f"{', '.join(MODES)}")
        if self.distinct not in DISTINCTNESS:
            raise LinkError(f"unknown node distinctness {self.distinct!r}; choose one of "
                            f"{', '.join(DISTINCTNESS)}")
        if not self.max_distance >= 0.0:
            raise LinkError(f"max_distance must not be negative, not {self.max_distance!r}")
        if not 0.0 <= self.min_spelling <= 1.0:
            raise LinkError(f"min_spelling must lie in [0, 1], not {self.min_spelling!r}")


def spelling(a: str, b: str) -> float:
    """How alike two names are spelt: difflib's ratio (2 x matching characters / total) of
    the case-folded texts, 1.0 for equal ones."""
    return SequenceMatcher(None, a.casefold(), b.casefold()).ratio()


class PatternLinker(Protocol):
    """Anything that links patterns: :class:`Linker` (the database), :class:`GivenLinks`."""

    def link_all(self, patterns: Sequence[Pattern]) -> list[LinkedPattern]: ...


@dataclass
class LinkReport:
    """What the last :meth:`Linker.link_all` did."""

    statements: list[Statement] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=lambda: {"embed": 0.0, "vector": 0.0})
    candidates: dict[str, list[Candidate]] = field(default_factory=dict)
    """``node:<name>``, ``relation:<phrase>``, ``type:<hint>`` -> candidates found."""


@dataclass
class _Found:
    entities: dict[str, tuple[Candidate, ...]] = field(default_factory=dict)
    relations: dict[str, tuple[Candidate, ...]] = field(default_factory=dict)
    types: dict[str, tuple[str, ...]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    """Text -> why it did not link (``names`` mode)."""


def _texts(patterns: Sequence[Pattern], typed_names: bool) -> tuple[list[str], list[str],
                                                                     list[str]]:
    names = {n.name: None for p in patterns for n in p.nodes if n.name is not None}
    phrases = {ph: None for p in patterns for e in p.edges for ph in e.phrases}
    types = {t: None for p in patterns for n in p.nodes if typed_names or n.name is None
             for t in n.types}
    return list(names), list(phrases), list(types)


class Linker:
    """Links patterns through one store's indexes (see the module's docstring)."""

    def __init__(self, store: GraphStore, embedder: Embedder | None = None,
                 settings: LinkSettings | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings or LinkSettings()
        self.settings.check()
        self.report = LinkReport()
        self._relationship_types: list[str] | None = None
        self._catalog: dict[str, list[str]] | None = None
        self._labelled: dict[str, bool] = {}
        self._fulltext: bool | None = None
        self._typed: bool | None = None

    def link(self, pattern: Pattern) -> LinkedPattern:
        return self.link_all([pattern])[0]

    def link_all(self, patterns: Sequence[Pattern]) -> list[LinkedPattern]:
        self.report = LinkReport()
        if self.settings.mode == "meaning":
            found = self._by_meaning(*_texts(patterns, typed_names=False))
        else:
            found = self._by_names(*_texts(patterns, typed_names=True))
        return [self._assemble(p, found) for p in patterns]

    # ------------------------------------------------------------------ assembling
    def _assemble(self, pattern: Pattern, found: _Found) -> LinkedPattern:
        names_mode = self.settings.mode == "names"
        nodes = []
        notes: list[str] = []
        for n in pattern.nodes:
            hints = n.types if (names_mode or n.name is None) else ()
            labels = tuple(sorted({lb for t in hints for lb in found.types.get(t, ())}))
            notes += [found.notes[t] for t in hints if t in found.notes]
            if n.name is None:
                nodes.append(LinkedNode(n, None, labels))
            else:
                nodes.append(LinkedNode(n, found.entities.get(n.name, ()), labels))
                if n.name in found.notes:
                    notes.append(found.notes[n.name])
        edges = []
        for e in pattern.edges:
            if not e.phrases:
                edges.append(LinkedEdge(e, None))
                continue
            best: dict[str, Candidate] = {}
            for phrase in e.phrases:  # a type matches at its best phrase's distance
                for c in found.relations.get(phrase, ()):
                    if c.id not in best or c.distance < best[c.id].distance:
                        best[c.id] = c
                if phrase in found.notes:
                    notes.append(found.notes[phrase])
            edges.append(LinkedEdge(e, tuple(sorted(best.values(),
                                                    key=lambda c: (c.distance, c.id)))))
        return LinkedPattern(pattern, tuple(nodes), tuple(edges), self.settings.distinct,
                             tuple(dict.fromkeys(notes)))

    # ------------------------------------------------------------------ by meaning
    def embed_texts(self, texts: list[str]) -> list[Any]:
        if not texts:
            return []
        if self.embedder is None:
            raise LinkError("linking by meaning needs an embedding model")
        t0 = time.perf_counter()
        vectors = list(self.embedder.embed(texts))
        self.report.timings_ms["embed"] += (time.perf_counter() - t0) * 1000
        return vectors

    def search(self, searches: list[Search],
                with_labels: bool = False) -> tuple[dict[tuple[str, str], list[Candidate]],
                                                    set[str]]:
        """Run vector searches ``(kind, search, texts)`` in one statement: per (kind, text)
        its candidates closest first (one per id), and the labels in use if asked."""
        searches = [s for s in searches if s[2]]
        if not searches and not with_labels:
            return {}, set()
        statement = cy.vector_candidates(self.store.dialect, [s[1] for s in searches],
                                         with_labels=with_labels)
        t0 = time.perf_counter()
        try:
            rows = self.store.run(statement).records()
        except StatementError as exc:
            labels = ", ".join(f":{s[1].label}(embedding)" for s in searches)
            raise LinkError(
                f"cannot search the vector indexes of {labels} on {self.store.address} "
                f"({exc}); load a graph first (kgdb schema apply, kgdb load triples)"
            ) from exc
        finally:
            self.report.timings_ms["vector"] += (time.perf_counter() - t0) * 1000
        self.report.statements.append(statement)
        return collect_candidates(rows, searches)

    def meaning_searches(self, patterns: Sequence[Pattern]) -> list[Search]:
        """The searches of linking ``patterns`` by meaning, their texts embedded in one batch:
        entities per name, relation types per phrase, entity types per type hint (which count
        only where :func:`types_apply`)."""
        return self._meaning_searches(*_texts(patterns, typed_names=False))

    def _meaning_searches(self, names: list[str], phrases: list[str],
                          types: list[str]) -> list[Search]:
        s = self.settings
        vectors = self.embed_texts(names + phrases + types)
        v_names, v_phrases = vectors[:len(names)], vectors[len(names):len(names) + len(phrases)]
        v_types = vectors[len(names) + len(phrases):]
        return [
            ("node", cy.VectorSearch(s.label, "id", "name", s.k_nodes, tuple(v_names)), names),
            ("relation", cy.VectorSearch(RELATION_TYPE_LABEL, "name", "name", s.k_relations,
                                         tuple(v_phrases)), phrases),
            ("type", cy.VectorSearch(ENTITY_TYPE_LABEL, "name", "name", s.k_types,
                                     tuple(v_types)), types),
        ]

    def linked_by_meaning(self, patterns: Sequence[Pattern],
                          found: dict[tuple[str, str], list[Candidate]]) -> list[LinkedPattern]:
        """``patterns`` linked with the candidates ``found`` per (kind, text) by
        :meth:`meaning_searches`' searches (run elsewhere, e.g. with the matching in one call)."""
        out = self._found(found)
        return [self._assemble(p, out) for p in patterns]

    def _by_meaning(self, names: list[str], phrases: list[str], types: list[str]) -> _Found:
        searches = self._meaning_searches(names, phrases, types)
        found, in_use = self.search(searches[:2], with_labels=bool(types))
        if types and types_apply(in_use):
            typed, _ = self.search(searches[2:])
            for key, cands in typed.items():
                found[key] = [c for c in cands if c.id in in_use]  # a type no entity carries
        return self._found(found)

    def _found(self, found: dict[tuple[str, str], list[Candidate]]) -> _Found:
        out = _Found()
        for (kind, text), cands in found.items():
            self.report.candidates[f"{kind}:{text}"] = cands
            if kind == "node":
                out.entities[text] = tuple(cands)
            elif kind == "relation":
                out.relations[text] = tuple(cands)
            else:
                out.types[text] = tuple(c.id for c in cands)
        return out

    # ------------------------------------------------------------------ by name
    def _by_names(self, names: list[str], phrases: list[str], types: list[str]) -> _Found:
        s = self.settings
        out = _Found()
        entities: dict[str, dict[str, Candidate]] = {n: {} for n in names}
        if names:
            for row in self._rows(cy.entities_named(self.store.dialect, names, s.label)):
                entities[str(row["wanted"])][str(row["id"])] = Candidate(
                    str(row["id"]), str(row["name"]))
        missing = [n for n in names if not entities[n]]
        if missing:
            for row in self._ignoring_case(missing):
                entities[str(row["wanted"])][str(row["id"])] = Candidate(
                    str(row["id"]), str(row["name"]))
        relation_types = self.relationship_types() if phrases else []
        relations = {p: lexical_relation(p, relation_types) for p in phrases}
        if types and not self.typed_entities():
            types = []  # as by meaning: a type hint filters only where entities carry types
        catalog = self.catalog() if types else {}
        lower = {k.lower(): k for k in catalog}
        type_keys = {t: (t if t in catalog else lower.get(t.lower())) for t in types}

        # Whatever is still unlinked, by meaning, in one statement.
        m_names = [n for n in names if not entities[n]]
        m_phrases = [p for p in phrases if not relations[p]]
        m_types = [t for t in types if not type_keys[t] and catalog]
        if self.embedder is not None and (m_names or m_phrases or m_types):
            vectors = self.embed_texts(m_names + m_phrases + m_types)
            a, b = len(m_names), len(m_names) + len(m_phrases)
            found, _ = self.search([
                ("node", cy.VectorSearch(s.label, "id", "name", s.k_nodes,
                                         tuple(vectors[:a])), m_names),
                ("relation", cy.VectorSearch(RELATION_TYPE_LABEL, "name", "name",
                                             s.k_relations, tuple(vectors[a:b])), m_phrases),
                ("type", cy.VectorSearch(ENTITY_TYPE_LABEL, "name", "name", s.k_types,
                                         tuple(vectors[b:])), m_types),
            ])
            for (kind, text), cands in found.items():
                close = [c for c in cands if c.distance <= s.max_distance]
                if kind == "node":
                    refused = [c for c in cands if c not in close
                               or spelling(text, c.name) < s.min_spelling]
                    close = [c for c in close if c not in refused]
                    if not close and refused:
                        shown = ", ".join(f"{c.name} ({c.distance:.2f})"
                                          for c in refused[:NEAREST_SHOWN])
                        out.notes[text] = NEAREST.format(text, shown)
                if kind == "relation":
                    close = [c for c in close if c.id in relation_types]
                elif kind == "type":
                    close = [c for c in close if c.id in catalog]
                if not close:
                    continue
                if kind == "node":
                    best = close[0].distance
                    entities[text] = {c.id: c for c in close if c.distance <= best + TIE}
                    out.notes[text] = BY_MEANING.format(
                        text, ", ".join(repr(c.name) for c in entities[text].values()), best,
                        spelling(text, close[0].name))
                elif kind == "relation":
                    relations[text] = (close[0].id,)
                    self.report.candidates[f"relation:{text}"] = close[:1]
                else:
                    type_keys[text] = close[0].id
        for n in names:
            out.entities[n] = tuple(entities[n].values())
            self.report.candidates[f"node:{n}"] = list(out.entities[n])
            if not entities[n] and n not in out.notes:
                out.notes[n] = NO_ENTITY.format(n)
        for p in phrases:
            out.relations[p] = tuple(Candidate(t, t) for t in relations[p])
            if not relations[p]:
                out.notes[p] = NO_RELATION.format(p)
        for t in types:
            key = type_keys[t]
            labels = [lb for lb in dict.fromkeys([key, *catalog[key]]) if self.labelled(lb)] \
                if key else []
            out.types[t] = tuple(labels)
            if not labels:
                out.notes[t] = NO_TYPE.format(t)
        return out

    def _rows(self, statement: Statement) -> list[dict[str, Any]]:
        self.report.statements.append(statement)
        return self.store.run(statement).records()

    def _ignoring_case(self, names: list[str]) -> list[dict[str, Any]]:
        dialect, label = self.store.dialect, self.settings.label
        if self._fulltext is None:
            # A graph kgdb did not build may lack the index: then the label is scanned.
            self._fulltext = any(i.kind == "fulltext" and i.label == label and
                                 "name" in i.properties for i in self.store.indexes())
        return self._rows(cy.entities_named_ignoring_case(dialect, names, label=label,
                                                          fulltext=self._fulltext))

    def relationship_types(self) -> list[str]:
        """The graph's relationship types that can be facts (structural ones left out)."""
        if self._relationship_types is None:
            rows = self._rows(cy.relationship_types())
            self._relationship_types = [str(r["type"]) for r in rows
                                        if str(r["type"]) not in cy.STRUCTURAL_RELATIONS]
        return self._relationship_types

    def catalog(self) -> dict[str, list[str]]:
        """EntityType name -> the narrower and contained types it stands for."""
        if self._catalog is None:
            rows = self._rows(cy.entity_type_catalog())
            self._catalog = {str(r["name"]): [str(x) for x in
                                              (r["narrower"] or []) + (r["contained"] or [])
                                              if x] for r in rows}
        return self._catalog

    def typed_entities(self) -> bool:
        """Whether the graph has a label besides kgdb's own (entities that carry types)."""
        if self._typed is None:
            labels = self._rows(cy.labels_in_use())
            self._typed = bool(set(labels[0]["labels"] if labels else ()) - KGDB_LABELS)
        return self._typed

    def labelled(self, label: str) -> bool:
        """Whether some entity carries ``label``."""
        if label not in self._labelled:
            statement = cy.count_labelled(self.store.dialect, label, self.settings.label)
            self._labelled[label] = bool(self.store.run(statement).value(0))
        return self._labelled[label]


class GivenLinks:
    """Links decided up front, by name (tests, or a caller that linked by other means)."""

    def __init__(self, entities: dict[str, Sequence[str]] | None = None,
                 relations: dict[str, Sequence[str]] | None = None,
                 types: dict[str, Sequence[str]] | None = None,
                 distinct: Distinctness = "edges") -> None:
        self.found = _Found(
            {k: tuple(Candidate(i, k) for i in v) for k, v in (entities or {}).items()},
            {k: tuple(Candidate(t, t) for t in v) for k, v in (relations or {}).items()},
            {k: tuple(v) for k, v in (types or {}).items()})
        self.distinct = distinct

    def link_all(self, patterns: Sequence[Pattern]) -> list[LinkedPattern]:
        out = []
        for p in patterns:
            notes = [NO_ENTITY.format(n.name) for n in p.nodes
                     if n.name and not self.found.entities.get(n.name)]
            notes += [NO_TYPE.format(t) for n in p.nodes for t in n.types
                      if not self.found.types.get(t)]
            notes += [NO_RELATION.format(ph) for e in p.edges for ph in e.phrases
                      if not self.found.relations.get(ph)]
            nodes = tuple(LinkedNode(n, self.found.entities.get(n.name, ()) if n.name else None,
                                     tuple(lb for t in n.types
                                           for lb in self.found.types.get(t, ())))
                          for n in p.nodes)
            edges = tuple(LinkedEdge(e, tuple(c for ph in e.phrases
                                              for c in self.found.relations.get(ph, ()))
                                     if e.phrases else None) for e in p.edges)
            out.append(LinkedPattern(p, nodes, edges, self.distinct,
                                     tuple(dict.fromkeys(notes))))
        return out
