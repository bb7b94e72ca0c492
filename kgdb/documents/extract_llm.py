"""``--extract llm``: entities, relations and events from each chunk by an LLM (KAG 2.2.2).

One chat request per chunk through the OpenAI-compatible API (:class:`kgdb.llm.ChatClient`),
asking for JSON: entities with a ``description`` and a ``semantic_type`` (KAG's descriptive
context, which alignment and concept linking use later), ``(head, relation, tail)`` relations,
and events whose arguments map roles to entity names. With the graph's schema (KAG 2.2.3,
schema-constrained extraction) the prompt lists the declared entity and relation types and the
parser keeps only those.

What the parser does with what models really return, so that one odd reply does not cost a
retry (:func:`parse_reply`):

* JSON is found in a fenced block or among prose; ``<think>`` blocks are ignored; trailing
  commas, comments, single quotes and ``None``/``True``/``False`` are repaired; a top-level
  list (of entities, relations, events, triples) is read as well as the asked-for object; keys
  match whatever their case or spelling (``Entities``, ``semanticType``, ``subject``);
  ``null`` and missing optional fields become None; numbers as names become strings.
* Duplicates are merged by normalised name (case and whitespace ignored; the first spelling
  wins, later mentions fill fields the first left empty).
* **Kept, with a count in** :attr:`LlmExtractor.added_entities`: the endpoint of a relation
  or the argument of an event that is not among the chunk's entities is added as an entity
  with type None (models often leave out the entities they relate; dropping the relation
  would lose the fact).
* **Dropped, with a count per reason in** :attr:`LlmExtractor.dropped`: with a schema, an
  entity, relation or event whose type is not declared (the declared spelling is restored
  when only case or separators differ: ``person`` -> ``Person``, ``directed by`` ->
  ``directed_by``), then relations and event arguments that name a dropped entity; items that
  are not usable at all (no name, a name that breaks the text contract of :mod:`kgdb.text`);
  relations and event roles whose name cannot be a relationship type on every engine (a
  backtick, over 256 characters) or is one of kgdb's own structural types (``belongTo``,
  ``supporting_chunks``...). Each chunk's drops are logged as a warning naming the chunk; one
  bad item never fails the chunk, so a cached reply holding one never blocks its document.

A reply with no JSON, or JSON of no recognisable shape, is an :class:`OutputParseError`: the
model is shown the error and asked again (``attempts``, default 3). When a chunk's attempts
are used up, or the endpoint fails for it (after the ``openai`` package's own HTTP retries),
``on_error="raise"`` (the default: an extraction must not look complete when it is not) raises
an :class:`~kgdb.errors.LlmError` naming the chunk; ``on_error="skip"`` counts the chunk in
``stats.failed_chunks``, logs it, yields nothing for it and goes on, and the caller must show
the count.

Requests run on ``concurrency`` threads (``KGDB_EXTRACT_CONCURRENCY``, default 4); results are
yielded as they arrive, in any order. HTTP 429 and 5xx are retried with backoff by the
``openai`` package (``KGDB_LLM_RETRIES``, honouring ``Retry-After``). Replies that parsed are
cached (:mod:`kgdb.documents.llm_cache`), so a second run over the same chunks sends nothing.

``stats``: ``requests`` are answered chat requests (each attempt counts), ``retries`` are the
HTTP retries the ``openai`` package made plus the re-asks after unusable output, ``cached``
are chunks answered from the cache, ``tokens_in``/``tokens_out`` sum the responses' ``usage``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Literal

from kgdb.config import environment
from kgdb.cypher.link import STRUCTURAL_RELATIONS
from kgdb.dialects.base import quote_identifier
from kgdb.documents.llm_cache import ExtractionCache
from kgdb.documents.model import (
    Chunk,
    ExtractedEntity,
    ExtractedEvent,
    ExtractedRelation,
    Extraction,
    ExtractionStats,
)
from kgdb.errors import ConfigError, InvalidIdentifierError, LlmError
from kgdb.llm.client import ChatClient, ChatReply, LlmSettings, OutputParseError
from kgdb.llm.replies import fenced_bodies, strip_reasoning
from kgdb.text import text_problem

log = logging.getLogger("kgdb")

PROMPT_VERSION = "kgdb-extract-1"
"""Part of the system prompt, hence of the cache key: bump it when the prompt's meaning changes
(a change to its wording changes the key anyway)."""

OnError = Literal["raise", "skip"]

DROP_ENTITY_TYPE = "entity of an undeclared type"
DROP_RELATION_TYPE = "relation of an undeclared type"
DROP_EVENT_TYPE = "event of an undeclared type"
DROP_DANGLING_RELATION = "relation naming a dropped entity"
DROP_DANGLING_ARGUMENT = "event argument naming a dropped entity"
DROP_UNUSABLE = "unusable item"
DROP_RELATION_NAME = "relation or role whose name cannot be a relationship type"
"""The reasons counted in :attr:`LlmExtractor.dropped` / :attr:`ParsedReply.dropped`."""


# --- the prompt ---------------------------------------------------------------------------

_INSTRUCTIONS = """\
You extract knowledge from one chunk of a document, to build a knowledge graph.
Answer with one JSON object and nothing else, in this shape:
{"entities": [{"name": "...", "type": "...", "description": "...", "semantic_type": "..."}],
 "relations": [{"head": "...", "relation": "...", "tail": "..."}],
 "events": [{"name": "...", "type": "...", "arguments": {"role": "entity name"}, \
"description": "..."}]}
- entities: the people, organisations, places, works, products, dates, quantities and \
concepts the chunk is about. "name" as written in the text; "type" its class (such as \
Person, Organization, Location); "description" one sentence, from the text, saying what it \
is; "semantic_type" the fine-grained concept it is an instance of (such as "film director").
- relations: facts stated in the chunk between two entities; "head" and "tail" are names \
from "entities".
- events: things that happen or happened; "arguments" maps each role (such as agent, \
patient, place, time) to the name of an entity from "entities".
- Use null for what the chunk does not say, and [] when there is nothing of a kind."""


def _schema_block(kind: str, types: Sequence[str] | None, what: str) -> str:
    if types is None:
        return ""
    listed = ", ".join(types) if types else "(none)"
    return (f"\n{kind} types (the only ones allowed; use this exact spelling and leave out "
            f"{what} of any other type): {listed}")


# --- types declared by the schema -------------------------------------------------------------

def _fold(name: str) -> str:
    return " ".join(name.split()).casefold()


def _squash(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name).casefold()


@dataclass(frozen=True)
class Vocabulary:
    """Declared type names; :meth:`resolve` gives the declared spelling of a model's name."""

    declared: tuple[str, ...]
    _exact: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    _loose: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, names: Sequence[str] | None) -> Vocabulary | None:
        if names is None:
            return None
        if isinstance(names, str):
            raise ConfigError(f"declared types must be a list of names, not the string "
                              f"{names!r}")
        declared = tuple(dict.fromkeys(str(n).strip() for n in names if str(n).strip()))
        exact: dict[str, str] = {}
        loose: dict[str, str] = {}
        for name in declared:
            exact.setdefault(_fold(name), name)
            loose.setdefault(_squash(name), name)
        return cls(declared, exact, loose)

    def resolve(self, name: str) -> str | None:
        """The declared spelling of ``name`` (exact, then ignoring case, then also ignoring
        spaces, ``_`` and ``-``), or None when it is not declared."""
        if name in self.declared:
            return name
        return self._exact.get(_fold(name)) or self._loose.get(_squash(name))


# --- parsing ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ParsedReply:
    """A reply as an extraction (without its chunk id), with what the parser dropped and
    added."""

    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()
    events: tuple[ExtractedEvent, ...] = ()
    dropped: Mapping[str, int] = field(default_factory=dict)
    added_entities: int = 0

    def extraction(self, chunk_id: str) -> Extraction:
        return Extraction(chunk_id, self.entities, self.relations, self.events)


_DECODER = json.JSONDecoder()


def _repair(text: str) -> str:
    """JSON as models write it made strict: trailing commas, ``//`` and ``/* */`` comments,
    single-quoted strings, raw newlines in strings, Python's None/True/False."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            quote, j, buf = c, i + 1, ['"']
            while j < n and text[j] != quote:
                ch = text[j]
                if ch == "\\" and j + 1 < n:
                    buf.append("'" if quote == "'" and text[j + 1] == "'" else text[j:j + 2])
                    j += 2
                    continue
                buf.append({'"': '\\"' if quote == "'" else '"', "\n": "\\n", "\r": "\\r",
                            "\t": "\\t"}.get(ch, ch))
                j += 1
            out.append("".join(buf) + '"')
            i = j + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == ",":
            k = i + 1
            while k < n and text[k].isspace():
                k += 1
            if k >= n or text[k] not in "}]":
                out.append(c)
            i += 1
        elif c.isalpha():
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append({"None": "null", "True": "true", "False": "false"}.get(word, word))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _decode_at(text: str, start: int) -> tuple[Any, str, int]:
    """The JSON value starting at ``start`` (repaired if need be), the text after it, and
    where to look for the next value (the end of the whole text after a repair)."""
    try:
        value, end = _DECODER.raw_decode(text, start)
        return value, text[end:], end
    except json.JSONDecodeError as exc:
        first = exc
    repaired = _repair(text[start:])
    try:
        value, end = _DECODER.raw_decode(repaired)
        return value, repaired[end:], len(text)
    except json.JSONDecodeError:
        # from None: the reply's own error is the one to report; the failed repair of it is
        # not its cause
        raise first from None


_OPENER = re.compile(r"[\[{]")
_MAX_STARTS = 50
"""Openers tried per candidate text: prose may hold a few brackets, not fifty."""


def _extraction_like(value: Any) -> bool:
    return isinstance(value, dict) or (
        isinstance(value, list) and any(isinstance(v, dict | list) for v in value))


def load_json(text: str) -> Any:
    """The JSON value a model's reply contains; :class:`OutputParseError` saying why not.

    Fenced blocks are tried first, then the whole reply; in each, values are decoded from
    every ``{`` or ``[`` not inside an earlier value (nor before the error of one that did not
    decode: a reply cut short is an error, never its first complete entity), and the first
    object (or list of objects or lists) wins over a list of plain values such as a ``[1]``
    in the prose."""
    candidates = [*fenced_bodies(text), strip_reasoning(text)]
    first_error: json.JSONDecodeError | None = None
    fallback: list[Any] = []
    for candidate in candidates:
        failed, resume = False, 0
        for number, match in enumerate(_OPENER.finditer(candidate)):
            if number >= _MAX_STARTS:
                break
            if match.start() < resume:
                continue
            try:
                value, rest, resume = _decode_at(candidate, match.start())
            except json.JSONDecodeError as exc:
                # What lies before the error is a piece of the broken value, not a value.
                first_error, failed, resume = first_error or exc, True, max(resume, exc.pos)
                continue
            # After a value that did not decode, this one may still be a piece of it (a
            # missing comma): take it only when nothing bracketed follows.
            if failed and re.search(r"[\[\]{}]", rest):
                continue
            if _extraction_like(value):
                return value
            fallback.append(value)
    if fallback:
        return fallback[0]
    if first_error is not None:
        raise OutputParseError(f"invalid JSON ({first_error.msg} at line {first_error.lineno}, "
                               f"column {first_error.colno})")
    raise OutputParseError("no JSON object found in the reply")


_SECTION_KEYS = {
    "entities": ("entities", "entity", "nodes", "namedentities"),
    "relations": ("relations", "relation", "relationships", "triples", "triplets", "edges",
                  "facts"),
    "events": ("events", "event"),
}
_ENTITY_FIELDS = {
    "name": ("name", "entity", "entityname", "text", "mention", "label", "value"),
    "type": ("type", "entitytype", "category", "class", "spgclass", "kind"),
    "description": ("description", "desc", "summary", "definition"),
    "semantic_type": ("semantictype", "semantic", "concept", "semanticclass"),
}
_RELATION_FIELDS = {
    "head": ("head", "subject", "source", "from", "h", "s", "headentity", "subj"),
    "relation": ("relation", "predicate", "relationtype", "rel", "p", "r", "type", "label",
                 "property"),
    "tail": ("tail", "object", "target", "to", "t", "o", "tailentity", "obj"),
}
_EVENT_FIELDS = {
    "name": ("name", "event", "eventname", "trigger", "title"),
    "type": ("type", "eventtype", "category", "class", "kind"),
    "arguments": ("arguments", "args", "argument", "roles", "participants"),
    "description": ("description", "desc", "summary"),
}
_ARGUMENT_FIELDS = {
    "role": ("role", "argumentrole", "type"),
    "entity": ("entity", "argument", "value", "entityname", "name", "text", "filler"),
}
_NULLS = {"", "null", "none", "n/a", "na", "unknown", "-"}


def _keyed(item: Mapping[Any, Any]) -> dict[str, Any]:
    """Keys folded (case, spaces, ``_``, ``-``); the first of clashing keys wins."""
    out: dict[str, Any] = {}
    for key, value in item.items():
        out.setdefault(_squash(str(key)), value)
    return out


def _field(item: dict[str, Any], names: Sequence[str]) -> Any:
    for name in names:
        if item.get(name) is not None:
            return item[name]
    return None


def _scalar(value: Any) -> str | None:
    """A name from a model's value: strings stripped (whitespace collapsed), numbers as text;
    None for null, empty, containers and booleans."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        text = " ".join(value.split())
        return text or None
    return None


def _optional(value: Any, *, key: bool) -> str | None:
    """An optional field: null-like words become None, so does text outside the contract."""
    if isinstance(value, list) and value:
        value = value[0]
    text = _scalar(value)
    if text is None or text.casefold() in _NULLS:
        return None
    return None if text_problem(text, key=key) else text


def relationship_type(name: str) -> bool:
    """Whether ``name`` can be a fact's relationship type on every engine: quotable without
    a backtick (FalkorDB cannot quote one), at most 256 characters, and none of kgdb's
    structural types (a fact named ``belongTo`` would read as a concept link)."""
    if name in STRUCTURAL_RELATIONS:
        return False
    try:
        quote_identifier(name, allow_backtick=False)
    except InvalidIdentifierError:
        return False
    return True


def _name(value: Any) -> str | None:
    text = _scalar(value)
    return None if text is None or text_problem(text, key=True) else text


class _Parser:
    def __init__(self, entity_types: Vocabulary | None, relation_types: Vocabulary | None,
                 event_types: Vocabulary | None) -> None:
        self.entity_types = entity_types
        self.relation_types = relation_types
        self.event_types = event_types
        self.dropped: Counter[str] = Counter()
        self.added = 0
        self.entities: dict[str, ExtractedEntity] = {}
        self.dropped_names: set[str] = set()
        self.relations: dict[tuple[str, str, str], ExtractedRelation] = {}
        self.events: dict[str, ExtractedEvent] = {}

    # sections

    def sections(self, value: Any) -> dict[str, list[Any]]:
        found: dict[str, list[Any]] = {"entities": [], "relations": [], "events": []}
        self._collect(value, found, depth=0)
        return found

    def _collect(self, value: Any, found: dict[str, list[Any]], depth: int) -> None:
        if isinstance(value, list):
            for item in value:
                if isinstance(item, dict) and self._section_keys(_keyed(item)):
                    self._collect(item, found, depth + 1)
                else:
                    found[self._kind_of(item)].append(item)
            return
        if not isinstance(value, dict):
            raise OutputParseError(f"expected a JSON object with \"entities\", \"relations\" "
                                   f"and \"events\", got {type(value).__name__}")
        item = _keyed(value)
        sections = self._section_keys(item)
        if sections:
            for kind, key in sections.items():
                content = item[key]
                if content is None:
                    continue
                if isinstance(content, dict):
                    content = self._section_dict(kind, content)
                if not isinstance(content, list):
                    self.dropped[DROP_UNUSABLE] += 1
                    continue
                found[kind].extend(content)
            return
        if not value:
            return
        if any(k in item for k in ("name", "head", "subject", "entity")):
            found[self._kind_of(value)].append(value)
            return
        if depth == 0 and len(item) == 1:  # a wrapper: {"result": {...}}, {"data": [...]}
            inner = next(iter(item.values()))
            if isinstance(inner, dict | list):
                self._collect(inner, found, depth + 1)
                return
        keys = ", ".join(repr(str(k)) for k in list(value)[:5])
        raise OutputParseError(f"expected a JSON object with \"entities\", \"relations\" and "
                               f"\"events\", got an object with the keys {keys}")

    @staticmethod
    def _section_keys(item: dict[str, Any]) -> dict[str, str]:
        out = {}
        for kind, names in _SECTION_KEYS.items():
            for name in names:
                value = item.get(name)
                if isinstance(value, list | dict) or (name == kind and name in item
                                                      and value is None):
                    out[kind] = name
                    break
        return out

    @staticmethod
    def _section_dict(kind: str, content: dict[Any, Any]) -> list[Any]:
        """One item, or for entities a ``{"name": "type"}`` map."""
        keyed = _keyed(content)
        if (kind == "entities" and _field(keyed, _ENTITY_FIELDS["name"]) is None
                and all(_scalar(v) is not None or v is None for v in content.values())):
            return [{"name": name, "type": kind_} for name, kind_ in content.items()]
        return [content]

    @staticmethod
    def _kind_of(item: Any) -> str:
        if isinstance(item, list):
            return "relations" if len(item) == 3 else "entities"
        if not isinstance(item, dict):
            return "entities"
        keys = _keyed(item)
        if (_field(keys, _RELATION_FIELDS["head"]) is not None
                and _field(keys, _RELATION_FIELDS["tail"]) is not None):
            return "relations"
        if _field(keys, _EVENT_FIELDS["arguments"]) is not None:
            return "events"
        return "entities"

    # items

    def entity(self, raw: Any) -> None:
        item = _keyed(raw) if isinstance(raw, dict) else {"name": raw}
        name = _name(_field(item, _ENTITY_FIELDS["name"]))
        if name is None:
            self.dropped[DROP_UNUSABLE] += 1
            return
        kind = _optional(_field(item, _ENTITY_FIELDS["type"]), key=True)
        if kind is not None and self.entity_types is not None:
            kind = self.entity_types.resolve(kind)
            if kind is None:
                self.dropped[DROP_ENTITY_TYPE] += 1
                self.dropped_names.add(_fold(name))
                return
        self._add_entity(ExtractedEntity(
            name=name, type=kind,
            description=_optional(_field(item, _ENTITY_FIELDS["description"]), key=False),
            semantic_type=_optional(_field(item, _ENTITY_FIELDS["semantic_type"]), key=True)))

    def _add_entity(self, entity: ExtractedEntity) -> None:
        key = _fold(entity.name)
        known = self.entities.get(key)
        if known is None:
            self.entities[key] = entity
            return
        self.entities[key] = ExtractedEntity(
            name=known.name, type=known.type or entity.type,
            description=known.description or entity.description,
            semantic_type=known.semantic_type or entity.semantic_type, id=known.id)

    def _endpoint(self, name: str) -> str | None:
        """The entity's name as first spelled; adds it when the model did not list it; None
        when it was dropped for its type."""
        key = _fold(name)
        if key in self.entities:
            return self.entities[key].name
        if key in self.dropped_names:
            return None
        self.entities[key] = ExtractedEntity(name=name)
        self.added += 1
        return name

    def relation(self, raw: Any) -> None:
        if isinstance(raw, list | tuple) and len(raw) == 3:
            raw = dict(zip(("head", "relation", "tail"), raw, strict=True))
        if not isinstance(raw, dict):
            self.dropped[DROP_UNUSABLE] += 1
            return
        item = _keyed(raw)
        head = _name(_field(item, _RELATION_FIELDS["head"]))
        tail = _name(_field(item, _RELATION_FIELDS["tail"]))
        relation = _name(_field(item, _RELATION_FIELDS["relation"]))
        if head is None or tail is None or relation is None:
            self.dropped[DROP_UNUSABLE] += 1
            return
        if self.relation_types is not None:
            relation = self.relation_types.resolve(relation)
            if relation is None:
                self.dropped[DROP_RELATION_TYPE] += 1
                return
        if not relationship_type(relation):
            self.dropped[DROP_RELATION_NAME] += 1
            return
        head_name, tail_name = self._endpoint(head), self._endpoint(tail)
        if head_name is None or tail_name is None:
            self.dropped[DROP_DANGLING_RELATION] += 1
            return
        key = (_fold(head_name), relation, _fold(tail_name))
        self.relations.setdefault(key, ExtractedRelation(head_name, relation, tail_name))

    def event(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            self.dropped[DROP_UNUSABLE] += 1
            return
        item = _keyed(raw)
        name = _name(_field(item, _EVENT_FIELDS["name"]))
        if name is None:
            self.dropped[DROP_UNUSABLE] += 1
            return
        kind = _optional(_field(item, _EVENT_FIELDS["type"]), key=True)
        if kind is not None and self.event_types is not None:
            kind = self.event_types.resolve(kind)
            if kind is None:
                self.dropped[DROP_EVENT_TYPE] += 1
                return
        arguments: list[tuple[str, str]] = []
        for role, value in self._arguments(_field(item, _EVENT_FIELDS["arguments"])):
            entity = self._endpoint(value)
            if entity is None:
                self.dropped[DROP_DANGLING_ARGUMENT] += 1
            elif (role, entity) not in arguments:
                arguments.append((role, entity))
        event = ExtractedEvent(name=name, type=kind, arguments=tuple(arguments),
                               description=_optional(_field(item, _EVENT_FIELDS["description"]),
                                                     key=False))
        known = self.events.get(_fold(name))
        if known is not None:
            merged = list(known.arguments) + [a for a in event.arguments
                                              if a not in known.arguments]
            event = ExtractedEvent(name=known.name, type=known.type or event.type,
                                   arguments=tuple(merged),
                                   description=known.description or event.description)
        self.events[_fold(name)] = event

    def _arguments(self, raw: Any) -> Iterator[tuple[str, str]]:
        """``(role, entity name)`` from ``{"role": "name" | [names]}``, ``[{"role": ...,
        "entity": ...}]`` or ``[["role", "name"]]``."""
        pairs: list[tuple[Any, Any]] = []
        if isinstance(raw, dict):
            pairs = list(raw.items())
        elif isinstance(raw, list):
            for item in raw:
                if isinstance(item, dict):
                    keyed = _keyed(item)
                    role = _field(keyed, _ARGUMENT_FIELDS["role"])
                    value = _field(keyed, _ARGUMENT_FIELDS["entity"])
                    if role is not None and value is not None:
                        pairs.append((role, value))
                    elif len(item) == 1:
                        pairs.extend(item.items())
                    else:
                        self.dropped[DROP_UNUSABLE] += 1
                elif isinstance(item, list | tuple) and len(item) == 2:
                    pairs.append((item[0], item[1]))
                else:
                    self.dropped[DROP_UNUSABLE] += 1
        elif raw is not None:
            self.dropped[DROP_UNUSABLE] += 1
        for role, value in pairs:
            role_name = _name(role)
            if role_name is not None and not relationship_type(role_name):
                self.dropped[DROP_RELATION_NAME] += 1
                continue
            values = value if isinstance(value, list) else [value]
            for one in values:
                if one is None or (isinstance(one, str) and one.strip().casefold() in _NULLS):
                    continue
                entity = _name(one)
                if role_name is None or entity is None:
                    self.dropped[DROP_UNUSABLE] += 1
                else:
                    yield role_name, entity


def parse_reply(text: str, *, entity_types: Vocabulary | None = None,
                relation_types: Vocabulary | None = None,
                event_types: Vocabulary | None = None) -> ParsedReply:
    """A model's reply as entities, relations and events (see the module's docstring for what
    is repaired, kept and dropped); :class:`OutputParseError` when it holds no usable JSON."""
    parser = _Parser(entity_types, relation_types, event_types)
    sections = parser.sections(load_json(text))
    # Entities first, so that relations and events find them whatever order the reply has.
    for raw in sections["entities"]:
        parser.entity(raw)
    for raw in sections["relations"]:
        parser.relation(raw)
    for raw in sections["events"]:
        parser.event(raw)
    return ParsedReply(entities=tuple(parser.entities.values()),
                       relations=tuple(parser.relations.values()),
                       events=tuple(parser.events.values()),
                       dropped=dict(parser.dropped), added_entities=parser.added)


# --- the extractor ----------------------------------------------------------------------------

@dataclass
class _Outcome:
    chunk: Chunk
    replies: list[ChatReply]
    parsed: ParsedReply | None = None
    error: LlmError | None = None


class LlmExtractor:
    """The ``llm`` :class:`~kgdb.documents.model.Extractor`: one chat request per chunk.

    ``entity_types`` / ``relation_types`` / ``event_types``: the schema's declared names, or
    None for open extraction of that kind. ``on_error``: ``"raise"`` (default) or ``"skip"``
    (count the chunk in ``stats.failed_chunks`` and go on). ``cache``: True for the cache in
    ``KGDB_HOME``, False for none, or an :class:`ExtractionCache`. ``concurrency``: requests
    in flight (default ``KGDB_EXTRACT_CONCURRENCY``). ``attempts``: requests per chunk when
    the output cannot be parsed.
    """

    name = "llm"

    def __init__(self, *, entity_types: Sequence[str] | None = None,
                 relation_types: Sequence[str] | None = None,
                 event_types: Sequence[str] | None = None,
                 client: ChatClient | None = None, settings: LlmSettings | None = None,
                 cache: ExtractionCache | bool = True, concurrency: int | None = None,
                 attempts: int = 3, on_error: OnError = "raise") -> None:
        if on_error not in ("raise", "skip"):
            raise ConfigError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
        if concurrency is None:
            concurrency = environment().KGDB_EXTRACT_CONCURRENCY
        if concurrency < 1:
            raise ConfigError(f"extraction concurrency must be at least 1, not {concurrency}")
        if attempts < 1:
            raise ConfigError(f"extraction attempts must be at least 1, not {attempts}")
        self.entity_types = Vocabulary.of(entity_types)
        self.relation_types = Vocabulary.of(relation_types)
        self.event_types = Vocabulary.of(event_types)
        self._client = client
        self._client_lock = threading.Lock()
        self.settings = client.settings if client is not None else \
            (settings or LlmSettings.from_env())
        self.cache: ExtractionCache | None = (
            cache if isinstance(cache, ExtractionCache) else ExtractionCache() if cache else None)
        self.concurrency = concurrency
        self.attempts = attempts
        self.on_error: OnError = on_error
        self.stats = ExtractionStats()
        self.dropped: Counter[str] = Counter()
        """What the parser left out, per reason (the ``DROP_*`` constants)."""
        self.added_entities = 0
        """Entities added because a relation or an event named them without listing them."""
        self.system_prompt = (
            f"{_INSTRUCTIONS}"
            f"{_schema_block('Entity', self._declared(self.entity_types), 'entities')}"
            f"{_schema_block('Relation', self._declared(self.relation_types), 'relations')}"
            f"{_schema_block('Event', self._declared(self.event_types), 'events')}"
            f"\n(prompt {PROMPT_VERSION})")

    @property
    def fingerprint(self) -> dict[str, str]:
        """What decides this extractor's output (the model, and the prompt with its version
        and the schema's types), for callers that redo a document when it changes."""
        digest = hashlib.sha256(self.system_prompt.encode("utf-8", "surrogatepass"))
        return {"name": self.name, "model": self.settings.model,
                "prompt": digest.hexdigest()[:16]}

    @staticmethod
    def _declared(vocabulary: Vocabulary | None) -> Sequence[str] | None:
        return None if vocabulary is None else vocabulary.declared

    @property
    def client(self) -> ChatClient:
        """Made on first use, so a run answered from the cache needs no endpoint."""
        with self._client_lock:
            if self._client is None:
                self._client = ChatClient(self.settings)
            return self._client

    def chunk_message(self, chunk: Chunk) -> str:
        where = f"Section: {' > '.join(chunk.headings)}\n" if chunk.headings else ""
        return f"{where}Chunk:\n{chunk.text}"

    def messages(self, chunk: Chunk) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system_prompt},
                {"role": "user", "content": self.chunk_message(chunk)}]

    def parse(self, text: str) -> ParsedReply:
        return parse_reply(text, entity_types=self.entity_types,
                           relation_types=self.relation_types, event_types=self.event_types)

    def extract(self, chunks: Sequence[Chunk]) -> Iterator[Extraction]:
        """One extraction per chunk, as results arrive (cached ones at once)."""
        window = 2 * self.concurrency  # queued work for every thread, without running ahead
        in_flight: set[Future[_Outcome]] = set()
        pool: ThreadPoolExecutor | None = None
        try:
            for chunk in chunks:
                cached = self._from_cache(chunk)
                if cached is not None:
                    yield cached
                    continue
                client = self.client
                if pool is None:
                    pool = ThreadPoolExecutor(max_workers=self.concurrency,
                                              thread_name_prefix="kgdb-extract")
                while len(in_flight) >= window:
                    done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
                    for future in done:
                        yield from self._finish(future.result())
                in_flight.add(pool.submit(self._request, client, chunk))
                done = {future for future in in_flight if future.done()}
                in_flight -= done
                for future in done:
                    yield from self._finish(future.result())
            while in_flight:
                done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    yield from self._finish(future.result())
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    def is_cached(self, chunk: Chunk) -> bool:
        """Whether a reply for ``chunk`` is cached (a dry run counts the requests left)."""
        return self.cache is not None and self.cache.get(
            self.settings.model, self.system_prompt, self.chunk_message(chunk)) is not None

    def _from_cache(self, chunk: Chunk) -> Extraction | None:
        if self.cache is None:
            return None
        reply = self.cache.get(self.settings.model, self.system_prompt,
                               self.chunk_message(chunk))
        if reply is None:
            return None
        try:
            parsed = self.parse(reply)
        except OutputParseError:  # cached by an older, more lenient parser: ask again
            return None
        self.stats.cached += 1
        self._count(parsed, chunk.id)
        return parsed.extraction(chunk.id)

    def _request(self, client: ChatClient, chunk: Chunk) -> _Outcome:
        """Runs on a pool thread; touches no shared state but the (locked) cache."""
        outcome = _Outcome(chunk, replies=[])
        user = self.chunk_message(chunk)
        try:
            text, outcome.parsed = client.complete_parsed(
                self.messages(chunk), lambda reply: (reply, self.parse(reply)),
                attempts=self.attempts, what="extraction JSON", on_reply=outcome.replies.append)
        except LlmError as exc:
            outcome.error = exc
            return outcome
        if self.cache is not None:
            try:
                self.cache.put(self.settings.model, self.system_prompt, user, text)
            except sqlite3.Error as exc:  # the cache saves money; it must not fail a load
                log.warning("extraction cache %s not updated: %s", self.cache.path, exc)
        return outcome

    def _finish(self, outcome: _Outcome) -> Iterator[Extraction]:
        """On the caller's thread: counts the outcome, yields its extraction or fails."""
        self.stats.requests += len(outcome.replies)
        self.stats.retries += max(0, len(outcome.replies) - 1)
        for reply in outcome.replies:
            self.stats.retries += reply.http_retries
            self.stats.tokens_in += reply.prompt_tokens
            self.stats.tokens_out += reply.completion_tokens
        if outcome.error is not None:
            self.stats.failed_chunks += 1
            message = f"LLM extraction failed for chunk {outcome.chunk.id!r}: {outcome.error}"
            if self.on_error == "raise":
                raise LlmError(message) from outcome.error
            log.warning("%s (skipped)", message)
            return
        assert outcome.parsed is not None
        self._count(outcome.parsed, outcome.chunk.id)
        yield outcome.parsed.extraction(outcome.chunk.id)

    def _count(self, parsed: ParsedReply, chunk_id: str) -> None:
        if parsed.dropped:
            log.warning("chunk %r: dropped %s", chunk_id, "; ".join(
                f"{n} {reason}" for reason, n in sorted(parsed.dropped.items())))
        self.dropped.update(parsed.dropped)
        self.added_entities += parsed.added_entities
