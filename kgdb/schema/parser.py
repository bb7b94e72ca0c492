"""Parser for schema files in SPG's schema markup (indentation-structured).

::

    namespace Movies

    Movie(film): EntityType
        desc: A motion picture
        properties:
            imdbRating(IMDb rating): Float
                index: Range
        relations:
            directed_by(directed by): Person

    Director: Person                      # a subtype of Person

    DiseaseSeverity: ConceptType
        hypernymPredicate: isA             # or locateAt: the concept -> parent relationship
        concepts:                          # a tree, by indentation
            Hypertension
                Grade 1 Hypertension

Errors name ``FILE:LINE`` and the cause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kgdb.errors import SchemaError, did_you_mean
from kgdb.schema.model import (
    BUILTIN_PROPERTIES,
    HYPERNYM_PREDICATES,
    KINDS,
    PROPERTY_CONSTRAINTS,
    PROPERTY_INDEXES,
    SCALAR_TYPES,
    UNENFORCED_CONSTRAINTS,
    ConceptNode,
    PropertyDef,
    RelationDef,
    Schema,
    TypeDef,
)
from kgdb.text import normalise_newlines, read_text_file, text_problem
from kgdb.vocabulary import CHUNK, CONCEPT, ENTITY, EVENT

_NAME = r"[A-Za-z_][A-Za-z0-9_.]*"
_DECL = re.compile(rf"^(?P<name>{_NAME})\s*(?:\((?P<alias>[^()]*)\))?\s*:\s*(?P<value>.*)$")


_COMMENT = re.compile(r"(?:^|(?<=\s))#")
"""A comment starts with ``#`` at the start of a line or after a space: ``C# Programming``
and ``F#`` are names, not a name and a comment."""


def _strip_comment(raw: str) -> str:
    found = _COMMENT.search(raw)
    return (raw[: found.start()] if found else raw).rstrip()


@dataclass
class _Line:
    number: int
    indent: int
    text: str
    children: list[_Line]


def parse_schema_file(path: str | Path) -> Schema:
    return parse_schema(read_text_file(path, what="schema file"), source=str(path))


def parse_schema(text: str, source: str = "<schema>") -> Schema:
    return _Parser(source).parse(text)


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.hypernym_lines: dict[str, int] = {}
        """Type name -> line of its ``hypernymPredicate:`` (checked once kinds are resolved)."""

    def error(self, line: int, message: str) -> SchemaError:
        return SchemaError(f"{self.source}:{line}: {message}")

    def parse(self, text: str) -> Schema:
        roots = self._tree(text)
        namespace = ""
        types: list[TypeDef] = []
        for node in roots:
            if node.text.startswith("namespace"):
                parts = node.text.split()
                if len(parts) != 2 or types or namespace:
                    raise self.error(node.number, "expected 'namespace <Name>' once, first")
                namespace = parts[1]
                continue
            types.append(self._type(node))
        schema = Schema(namespace, tuple(types), self.source)
        self._check(schema)
        return schema

    # ------------------------------------------------------------------ structure
    def _tree(self, text: str) -> list[_Line]:
        roots: list[_Line] = []
        stack: list[_Line] = []
        # Lines end at LF only (CRLF and CR normalised first): splitlines() would also break
        # at U+2028, U+0085 and other characters that belong to a name.
        for number, raw in enumerate(normalise_newlines(text).split("\n"), start=1):
            content = _strip_comment(raw) if not raw.lstrip().startswith("desc") \
                else raw.rstrip()
            if not content.strip():
                continue
            if "\t" in raw[: len(raw) - len(raw.lstrip())]:
                raise self.error(number, "indent with spaces, not tabs")
            indent = len(content) - len(content.lstrip())
            line = _Line(number, indent, content.strip(), [])
            while stack and stack[-1].indent >= indent:
                stack.pop()
            if stack:
                stack[-1].children.append(line)
            elif indent:
                raise self.error(number, "unexpected indentation at the top level")
            else:
                roots.append(line)
            stack.append(line)
        return roots

    def _decl(self, line: _Line, what: str) -> tuple[str, str, str]:
        match = _DECL.match(line.text)
        if not match:
            raise self.error(line.number, f"expected '{what}'")
        return match["name"], (match["alias"] or "").strip(), match["value"].strip()

    # ------------------------------------------------------------------ types
    def _type(self, node: _Line) -> TypeDef:
        name, alias, value = self._decl(node, "TypeName(alias): EntityType|EventType|ConceptType")
        if not value:
            raise self.error(node.number, f"type {name} needs a meta-type or parent type")
        kind = KINDS.get(value)
        parent = None if kind else value
        description, hypernym = "", "isA"
        properties: list[PropertyDef] = []
        relations: list[RelationDef] = []
        concepts: list[ConceptNode] = []
        for child in node.children:
            key, _, rest = child.text.partition(":")
            key, rest = key.strip(), rest.strip()
            if key == "desc":
                description = rest
            elif key == "hypernymPredicate":
                if rest not in HYPERNYM_PREDICATES:
                    raise self.error(child.number, f"unknown hypernymPredicate {rest!r} "
                                     f"(expected {' or '.join(HYPERNYM_PREDICATES)})"
                                     + did_you_mean(rest, HYPERNYM_PREDICATES))
                hypernym = rest
                self.hypernym_lines[name] = child.number
            elif key == "properties":
                properties += [self._property(p) for p in child.children]
            elif key == "relations":
                relations += [self._relation(r) for r in child.children]
            elif key == "concepts":
                concepts += [self._concept(c) for c in child.children]
            else:
                raise self.error(child.number, f"unknown key {key!r} in type {name} (expected "
                                 "desc, properties, relations, concepts or hypernymPredicate)")
        return TypeDef(name, kind or "", alias, parent, description, tuple(properties),
                       tuple(relations), tuple(concepts), hypernym, node.number)

    def _property(self, node: _Line) -> PropertyDef:
        name, alias, value = self._decl(node, "propertyName(alias): Type")
        if not value:
            raise self.error(node.number, f"property {name} needs a type")
        index, description, constraints = None, "", []
        for child in node.children:
            key, _, rest = child.text.partition(":")
            key, rest = key.strip(), rest.strip()
            if key == "index":
                if rest not in PROPERTY_INDEXES:
                    raise self.error(child.number, f"unsupported index {rest!r} on property "
                                     f"{name} (use one of {', '.join(sorted(PROPERTY_INDEXES))}; "
                                     "names are embedded on every instance already)")
                index = rest
            elif key == "constraint":
                constraints += self._constraints(child, name, rest)
            elif key == "desc":
                description = rest
            else:
                raise self.error(child.number, f"unknown key {key!r} in property {name}")
        return PropertyDef(name, value, alias, description, index, tuple(constraints),
                           node.number)

    def _constraints(self, line: _Line, prop: str, text: str) -> list[str]:
        """``NotNull, Unique``: the constraints kgdb applies; any other is an error, so a schema
        never applies without a constraint its author asked for."""
        found: list[str] = []
        for item in (c.strip() for c in text.split(",")):
            head, eq, _ = item.partition("=")
            head = head.strip()
            if head in UNENFORCED_CONSTRAINTS:
                shown = f"{head}=..." if head == "Regular" else head
                raise self.error(line.number, f"constraint {shown} on property {prop}: kgdb does "
                                 "not enforce it (only NotNull and Unique); remove it")
            if head not in PROPERTY_CONSTRAINTS:
                raise self.error(line.number, f"unknown constraint {item!r} on property {prop} "
                                 f"(expected {' or '.join(sorted(PROPERTY_CONSTRAINTS))})"
                                 + did_you_mean(head, PROPERTY_CONSTRAINTS | UNENFORCED_CONSTRAINTS))
            if eq:
                raise self.error(line.number, f"constraint {head} on property {prop} takes no "
                                 "value")
            found.append(head)
        return found

    def _relation(self, node: _Line) -> RelationDef:
        name, alias, value = self._decl(node, "relationName(alias): TargetType")
        if not value:
            raise self.error(node.number, f"relation {name} needs a target type")
        description = ""
        for child in node.children:
            key, _, rest = child.text.partition(":")
            if key.strip() != "desc":
                raise self.error(child.number, f"unknown key {key.strip()!r} in relation {name}")
            description = rest.strip()
        return RelationDef(name, value, alias, description, node.number)

    def _concept(self, node: _Line) -> ConceptNode:
        if ":" in node.text or "/" in node.text:
            raise self.error(node.number, "a concept line is just the concept's name")
        problem = text_problem(node.text, key=True)
        if problem:
            raise self.error(node.number, f"the concept name {problem}")
        return ConceptNode(node.text, tuple(self._concept(c) for c in node.children),
                           node.number)

    # ------------------------------------------------------------------ checks
    def _check(self, schema: Schema) -> None:
        names: dict[str, TypeDef] = {}
        for t in schema.types:
            if t.name in names:
                raise self.error(t.line, f"type {t.name} is defined twice (first at line "
                                 f"{names[t.name].line})")
            names[t.name] = t
        resolved: dict[str, str] = {}

        def kind_of(t: TypeDef, seen: tuple[str, ...] = ()) -> str:
            if t.kind:
                return t.kind
            if t.name in seen:
                raise self.error(t.line, "type inheritance cycle: " + " -> ".join((*seen, t.name)))
            parent = names.get(t.parent or "")
            if parent is None:
                raise self.error(t.line, f"type {t.name}: unknown meta-type or parent "
                                 f"{t.parent!r} (expected EntityType, EventType, ConceptType or a "
                                 "type defined in this file)")
            return kind_of(parent, (*seen, t.name))

        for t in schema.types:
            resolved[t.name] = kind_of(t)
        known_targets = set(names) | {CHUNK, CONCEPT, ENTITY, EVENT}
        for t in schema.types:
            for p in t.properties:
                if p.name in BUILTIN_PROPERTIES:
                    raise self.error(p.line, f"property {p.name} is built in; do not redeclare it")
                if p.type not in SCALAR_TYPES and p.type not in known_targets:
                    raise self.error(p.line, f"property {p.name}: unknown type {p.type!r}")
            for r in t.relations:
                if r.target not in known_targets:
                    raise self.error(r.line, f"relation {r.name}: unknown target type "
                                     f"{r.target!r}")
            if t.concepts and resolved[t.name] != "concept":
                raise self.error(t.line, f"type {t.name} lists concepts but is not a ConceptType")
            if t.name in self.hypernym_lines and resolved[t.name] != "concept":
                # Type hierarchies are always isA; only a concept tree takes another predicate.
                raise self.error(self.hypernym_lines[t.name], f"type {t.name} has a "
                                 "hypernymPredicate but is not a ConceptType (it names the "
                                 "relationship of a concept tree); remove it")
            stack = list(t.concepts)
            while stack:
                node = stack.pop()
                stack.extend(node.children)
                problem = text_problem(f"{t.name}/{node.name}", key=True)
                if problem:
                    raise self.error(node.line, f"the concept id {t.name}/{node.name[:40]}... "
                                     f"{problem}")
        object.__setattr__(schema, "types", tuple(
            TypeDef(t.name, resolved[t.name], t.alias, t.parent, t.description, t.properties,
                    t.relations, t.concepts, t.hypernym_predicate, t.line)
            for t in schema.types))
