"""Knowledge alignment (KAG 2.4) of what the LLM extracted from a batch of chunks.

1. **Standardise and fuse by name**: mentions whose normalised names are equal (case folded,
   spaces collapsed, surrounding punctuation dropped) are one entity; its name is the most
   frequent spelling, the other spellings become ``synonyms``, its type the most frequent
   type given, its description the first one given.
2. **Link to the graph**: an entity whose name the graph already has (exactly, then ignoring
   case: the one linker, ``names`` mode) is that graph entity: nothing new is created, it
   gains the synonyms and a description it lacks.
3. **Fuse by meaning**: new entities of the same type whose name embeddings are closer than
   ``similarity`` (cosine) are one entity (``NYC`` / ``New York City`` when the model puts
   them close enough; the default threshold is strict, as a wrong fusion is worse than a
   missed one). Every pair in a fused group passes the threshold (no chains), and only names
   sharing a word or their initials are compared (:func:`fusion_groups`).
4. **Concepts**: a semantic type (``film director``) becomes a ``Concept`` of type
   ``SemanticType`` that the entity ``belongTo``.

Events become entities too (their type is the event type), with one relation per argument
role from the event to the argument's entity.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgdb.documents.model import Extraction
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.ir import NodeRef, Pattern
from kgdb.link import Linker, LinkSettings

SEMANTIC_TYPE = "SemanticType"
"""The concept type of semantic types extraction gives (``SemanticType/film director``)."""


@dataclass
class AlignSettings:
    similarity: float = 0.95
    """Cosine similarity of name embeddings above which new entities of one type are fused."""
    link_existing: bool = True
    """Link entities to the graph's existing entities of the same name."""


@dataclass
class Aligned:
    new_entities: dict[str | None, list[dict[str, Any]]] = field(default_factory=dict)
    """Type label (a catalogued entity type, or None) -> rows for new entities."""
    updates: list[dict[str, Any]] = field(default_factory=list)
    """Existing entities gaining synonyms or a description."""
    facts: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    """Relation -> (head id, tail id, chunk id)."""
    mentions: list[tuple[str, str]] = field(default_factory=list)
    concepts: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(entity id, concept id, concept name, chunk id): the entity belongTo the concept, as
    the chunk said."""
    broader: list[tuple[str, str, str]] = field(default_factory=list)
    """(concept id, broader concept id, chunk id): ``isA`` between semantic types, supported
    by the chunks that gave either."""
    notes: list[dict[str, Any]] = field(default_factory=list)
    """{entity, chunk, description, synonyms}: what each chunk said about an entity, kept on
    its mention edge, so that deleting the chunk's document takes exactly that back."""


def normalise(name: str) -> str:
    return re.sub(r"\s+", " ", name.casefold()).strip(" \t.,;:!?\"'()[]{}")


@dataclass
class _Cluster:
    names: Counter[str] = field(default_factory=Counter)
    types: Counter[str] = field(default_factory=Counter)
    descriptions: list[tuple[str, str]] = field(default_factory=list)
    """(description, chunk), in the order the chunks gave them."""
    semantic_types: list[tuple[str, str]] = field(default_factory=list)
    """(semantic type, chunk)."""
    chunks: list[str] = field(default_factory=list)
    spellings: list[tuple[str, str]] = field(default_factory=list)
    """(name as spelled, chunk)."""
    id: str | None = None
    existing: bool = False

    @property
    def name(self) -> str:
        return self.names.most_common(1)[0][0]

    @property
    def type(self) -> str | None:
        return self.types.most_common(1)[0][0] if self.types else None

    def absorb(self, other: _Cluster) -> None:
        self.names.update(other.names)
        self.types.update(other.types)
        self.descriptions += other.descriptions
        self.semantic_types += other.semantic_types
        self.chunks += other.chunks
        self.spellings += other.spellings

    def notes(self) -> list[dict[str, Any]]:
        """What each chunk said about this entity: its first description, and the spellings
        it used other than the entity's name (its synonyms)."""
        out: dict[str, dict[str, Any]] = {}
        for chunk in self.chunks:
            out.setdefault(chunk, {"chunk": chunk, "description": None, "synonyms": []})
        for description, chunk in self.descriptions:
            if out[chunk]["description"] is None:
                out[chunk]["description"] = description
        for spelling, chunk in self.spellings:
            if spelling != self.name and spelling not in out[chunk]["synonyms"]:
                out[chunk]["synonyms"].append(spelling)
        return [n for n in out.values() if n["description"] is not None or n["synonyms"]]


def align(store: GraphStore, embedder: Embedder, extractions: Sequence[Extraction],
          settings: AlignSettings | None = None, linker: Linker | None = None) -> Aligned:
    """``linker``: a ``names``-mode linker of ``store`` to reuse across batches (it caches the
    type catalog and the full-text check); one is made when not given."""
    settings = settings or AlignSettings()
    clusters: dict[str, _Cluster] = {}

    def mention(name: str, chunk: str, type_: str | None = None, description: str | None = None,
                semantic: str | None = None) -> str | None:
        key = normalise(name)
        if not key:
            return None
        c = clusters.setdefault(key, _Cluster())
        c.names[name.strip()] += 1
        c.spellings.append((name.strip(), chunk))
        if type_:
            c.types[type_] += 1
        if description:
            c.descriptions.append((description, chunk))
        if semantic:
            c.semantic_types.append((semantic, chunk))
        c.chunks.append(chunk)
        return key

    raw_facts: list[tuple[str, str, str, str]] = []  # (head key, relation, tail key, chunk)
    for x in extractions:
        for e in x.entities:
            mention(e.name, x.chunk_id, e.type, e.description, e.semantic_type)
        for ev in x.events:
            head = mention(ev.name, x.chunk_id, ev.type, ev.description)
            for role, arg in ev.arguments:
                tail = mention(arg, x.chunk_id)
                if head and tail and head != tail and role.strip():
                    raw_facts.append((head, role.strip(), tail, x.chunk_id))
        for r in x.relations:
            head, tail = mention(r.head, x.chunk_id), mention(r.tail, x.chunk_id)
            if head and tail and head != tail and r.relation.strip():
                raw_facts.append((head, r.relation.strip(), tail, x.chunk_id))

    keys = list(clusters)
    linker = linker or Linker(store, None, LinkSettings("names"))
    if settings.link_existing and keys:
        linked = linker.link(Pattern(tuple(NodeRef(f"n{i}", clusters[k].name)
                                           for i, k in enumerate(keys))))
        for key, node in zip(keys, linked.nodes, strict=True):
            if node.candidates:
                clusters[key].id = sorted(c.id for c in node.candidates)[0]
                clusters[key].existing = True

    # Fuse new entities of one type by the meaning of their names.
    new = [k for k in keys if not clusters[k].existing]
    alias: dict[str, str] = {k: k for k in keys}
    if len(new) > 1 and settings.similarity < 1.0:
        vectors = np.asarray(embedder.embed([clusters[k].name for k in new]), dtype=np.float32)
        groups = fusion_groups([clusters[k].name for k in new],
                               [clusters[k].type for k in new], vectors, settings.similarity)
        for group in groups:
            members = [new[i] for i in group]
            keep = max(members, key=lambda k: (sum(clusters[k].names.values()), -new.index(k)))
            for k in members:
                if k != keep:
                    clusters[keep].absorb(clusters[k])
                    alias[k] = keep
    out = Aligned()
    catalog = linker.catalog()
    kept = [k for k in keys if alias[k] == k]
    fresh = [k for k in kept if not clusters[k].existing]
    fresh_vectors = dict(zip(fresh, embedder.embed([clusters[k].name for k in fresh]),
                             strict=True)) if fresh else {}
    for key in kept:
        c = clusters[key]
        synonyms = sorted(n for n in c.names if n != c.name)
        description = c.descriptions[0][0] if c.descriptions else None
        if c.existing:
            assert c.id is not None
            if synonyms or description:
                out.updates.append({"id": c.id, "name": c.name, "type": c.type,
                                    "description": description, "synonyms": synonyms,
                                    "embedding": None})
        else:
            c.id = c.name
            label = c.type if c.type in catalog else None
            out.new_entities.setdefault(label, []).append(
                {"id": c.id, "name": c.name, "type": c.type, "description": description,
                 "synonyms": synonyms, "embedding": fresh_vectors[key]})
        for semantic, chunk in dict.fromkeys((s.strip(), chunk) for s, chunk in c.semantic_types
                                             if s.strip()):
            out.concepts.append((c.id, f"{SEMANTIC_TYPE}/{semantic}", semantic, chunk))
        out.notes += [{"entity": c.id, **note} for note in c.notes()]
    for key in keys:
        c = clusters[alias[key]]
        assert c.id is not None
        out.mentions += [(c.id, chunk) for chunk in clusters[key].chunks]
    for head, relation, tail, chunk in raw_facts:
        h, t = clusters[alias[head]].id, clusters[alias[tail]].id
        if h and t and h != t:
            out.facts.setdefault(relation, []).append((h, t, chunk))
    out.mentions = list(dict.fromkeys(out.mentions))
    chunks_of: dict[str, list[str]] = {}
    for _, concept, _, chunk in out.concepts:
        chunks_of.setdefault(concept, []).append(chunk)
    out.broader = [(narrow, broad, chunk)
                   for narrow, broad in broader_concepts([n for _, _, n, _ in out.concepts])
                   for chunk in dict.fromkeys(chunks_of[narrow] + chunks_of[broad])]
    return out


MAX_BLOCK = 256
"""Names at most sharing one blocking key (type and word): a key more names share (a word
as common as ``film``) decides nothing and is not compared within."""


def _block_keys(name: str) -> set[str]:
    """A name's blocking keys: its words, its initials (``New York City`` -> ``nyc``, so that
    an acronym meets its expansion) and its first four letters (a misspelt ending)."""
    words = re.findall(r"\w+", name.casefold())
    keys = set(words)
    if len(words) > 1:
        keys.add("".join(w[0] for w in words))
    letters = "".join(words)
    if letters:
        keys.add(f"^{letters[:4]}")
    return keys


def fusion_groups(names: Sequence[str], types: Sequence[str | None], vectors: Any,
                  threshold: float, stats: dict[str, int] | None = None) -> list[list[int]]:
    """Groups (indexes, two or more) of names to fuse as one entity: of one type, and *every*
    pair in a group at least ``threshold`` similar (cosine of ``vectors``): fusion is not
    transitive, so a chain of close names never pulls in one far from the others.

    Sub-quadratic: only names of one type that share a blocking key (a word, or the
    initials) are compared, in blocks of at most :data:`MAX_BLOCK`; pairs are taken from the
    most similar down, and two groups join only when all their cross pairs pass. ``stats``
    gets ``compared`` (pairs whose similarity was computed)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1, norms)
    blocks: dict[tuple[str | None, str], list[int]] = {}
    for i, name in enumerate(names):
        for key in _block_keys(name):
            blocks.setdefault((types[i], key), []).append(i)
    candidates: dict[tuple[int, int], float] = {}
    compared = 0
    for members in blocks.values():
        if len(members) < 2 or len(members) > MAX_BLOCK:
            continue
        sims = unit[members] @ unit[members].T
        compared += len(members) * (len(members) - 1) // 2
        for a in range(len(members)):
            for b in range(a + 1, len(members)):
                if sims[a, b] >= threshold:
                    candidates[(members[a], members[b])] = float(sims[a, b])
    if stats is not None:
        stats["compared"] = compared
    group_of: dict[int, list[int]] = {}
    for (i, j), _ in sorted(candidates.items(), key=lambda item: (-item[1], item[0])):
        gi, gj = group_of.get(i, [i]), group_of.get(j, [j])
        if gi is gj:
            continue
        cross = unit[gi] @ unit[gj].T
        if float(cross.min()) < threshold:
            continue  # complete linkage: one far pair keeps the groups apart
        merged = gi + gj
        for k in merged:
            group_of[k] = merged
    seen: set[int] = set()
    out = []
    for group in group_of.values():
        if id(group) not in seen:
            seen.add(id(group))
            out.append(sorted(group))
    return sorted(out)


def broader_concepts(names: Sequence[str]) -> list[tuple[str, str]]:
    """``isA`` links between semantic types: a type is a narrower kind of the type named by its
    last words (``film director`` isA ``director``, ``silent film director`` isA ``film
    director``) when that type was extracted too; the closest such type only."""
    known = {normalise(n): n for n in names}
    out = []
    for name in dict.fromkeys(names):
        words = normalise(name).split()
        for start in range(1, len(words)):
            head = known.get(" ".join(words[start:]))
            if head is not None:
                out.append((f"{SEMANTIC_TYPE}/{name}", f"{SEMANTIC_TYPE}/{head}"))
                break
    return out
