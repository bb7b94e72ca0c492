"""The SPG-style schema model: entity, event and concept types, properties, relations, isA trees."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

KINDS = {"EntityType": "entity", "EventType": "event", "ConceptType": "concept"}
"""The SPG meta-types a type header may name, and the kind each gives."""

BUILTIN_PROPERTIES = ("name", "description", "summary", "synonyms", "semanticType")
"""Every entity and event type has these (KAG section 2.2, SPG's standard properties)."""

BUILTIN_RELATIONS = {
    "supporting_chunks": ("instance", "Chunk"),
    "belongTo": ("instance", "Concept"),
    "isA": ("Concept", "Concept"),
    "locateAt": ("Concept", "Concept"),
}
"""The mutual-index and alignment relations of KAG (source, target). A concept tree links a
concept to its parent with its type's ``hypernymPredicate``: ``isA`` or ``locateAt``."""

HYPERNYM_PREDICATES = ("isA", "locateAt")
"""The relationship types a ConceptType's ``hypernymPredicate`` may name (SPG's two)."""

BASE_LABELS = {"entity": "Entity", "event": "Event", "concept": "Concept"}
"""The label every instance of a kind carries next to its type's label."""

SCALAR_TYPES = {"Text", "Integer", "Float", "Boolean", "Date", "STD.Text", "STD.Integer",
                "STD.Float", "STD.Boolean", "STD.Date"}
PROPERTY_INDEXES = {"Text", "Range"}
PROPERTY_CONSTRAINTS = {"NotNull", "Unique"}
"""The property constraints kgdb applies: ``Unique`` as a uniqueness constraint, ``NotNull`` as
a property-existence constraint where the engine has one (see kgdb/schema/apply.py)."""
UNENFORCED_CONSTRAINTS = {"MultiValue", "Regular"}
"""SPG constraints kgdb recognises but does not enforce (no engine constraint, no check of
its own); a schema that names one is refused rather than applied without it."""


@dataclass(frozen=True)
class PropertyDef:
    name: str
    type: str
    alias: str = ""
    description: str = ""
    index: str | None = None
    """``Text`` (full-text) or ``Range``."""
    constraints: tuple[str, ...] = ()
    line: int = 0


@dataclass(frozen=True)
class RelationDef:
    name: str
    target: str
    alias: str = ""
    description: str = ""
    line: int = 0

    @property
    def text(self) -> str:
        """The phrase embedded for linking: the alias, else the name in words."""
        return self.alias or humanize(self.name)


@dataclass(frozen=True)
class ConceptNode:
    name: str
    children: tuple[ConceptNode, ...] = ()
    line: int = 0

    def walk(self, parent: str | None = None) -> list[tuple[str, str | None]]:
        out = [(self.name, parent)]
        for child in self.children:
            out += child.walk(self.name)
        return out


@dataclass(frozen=True)
class TypeDef:
    name: str
    kind: str
    """``entity``, ``event`` or ``concept``."""
    alias: str = ""
    parent: str | None = None
    description: str = ""
    properties: tuple[PropertyDef, ...] = ()
    relations: tuple[RelationDef, ...] = ()
    concepts: tuple[ConceptNode, ...] = ()
    hypernym_predicate: str = "isA"
    """The relationship type from a concept to its parent in this type's concept tree: one of
    ``HYPERNYM_PREDICATES``."""
    line: int = 0

    @property
    def text(self) -> str:
        """The text embedded for linking types by meaning."""
        parts = [humanize(self.name)]
        if self.alias and self.alias.lower() != parts[0].lower():
            parts.append(self.alias)
        if self.description:
            parts.append(self.description)
        return ": ".join([parts[0], ", ".join(parts[1:])]) if len(parts) > 1 else parts[0]


@dataclass(frozen=True)
class Schema:
    namespace: str = ""
    types: tuple[TypeDef, ...] = field(default=())
    source: str = "<schema>"

    def type(self, name: str) -> TypeDef | None:
        return next((t for t in self.types if t.name == name), None)

    def relations(self) -> list[tuple[TypeDef, RelationDef]]:
        return [(t, r) for t in self.types for r in t.relations]


def humanize(name: str) -> str:
    """``directed_by`` -> ``directed by``; ``birthPlace`` -> ``birth place``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name.replace("_", " "))
    return " ".join(spaced.split()).lower() if spaced.strip() else name
