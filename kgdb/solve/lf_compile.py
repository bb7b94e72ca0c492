"""Compile a checked logical-form plan to Cypher, in two phases.

1. **Linking** (needs a database): every entity name, relation phrase and type hint of the
   plan is looked up in the graph (:func:`link_plan`) and the result is a :class:`Links`.
2. **Generation** (no database): :func:`compile_plan` turns the plan and its links into a list
   of operations for one dialect. Consecutive Retrieval steps that share node aliases form one
   :class:`kgdb.ir.Pattern` and one MATCH statement; Sort, Count, Sum and Filter over aliases
   such a pattern binds become statements on the same pattern (ORDER BY/LIMIT, count, sum,
   WHERE); Compare, Math, Deduce and Output run in Python over the bound values.

Without links (``kgdb lf compile`` with no ``--link``) names are matched exactly as written,
relation phrases are used as relationship types as written, and type hints are left out;
the compiled plan says so in its notes.

Types: the base schema labels instances ``(:Entity:<EntityType>)``. A type hint becomes a
label condition only when linking finds an ``EntityType`` of that name (or one reached
through ``isA``/``contains``) that labels at least one entity; otherwise - as on MetaQA,
whose schema has a type catalog but whose instances carry no type labels - it is ignored
and a note in the trace says so.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kgdb.cypher import logical_form as cy
from kgdb.dialects.base import Dialect
from kgdb.dsl.lf_ast import (
    CountStep,
    FilterStep,
    Literal,
    Plan,
    RetrievalStep,
    SortStep,
    Step,
    SumStep,
)
from kgdb.errors import DslError, InvalidIdentifierError
from kgdb.ir import Constraint, EdgeRef, NodeRef, Pattern, PatternError


class CompileError(DslError):
    """A plan that parses and checks but cannot be compiled (names the step and the cause)."""


# ---------------------------------------------------------------------------------- links

@dataclass(frozen=True)
class Links:
    """What the database said about the plan's names. Missing keys mean "not linked"."""

    entities: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Entity name as written -> entity ids (empty tuple: nothing found)."""
    relations: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Relation phrase as written -> relationship types."""
    types: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Type hint as written -> labels (empty tuple: the graph has no such type)."""
    notes: tuple[str, ...] = ()


class Linker(Protocol):
    """Finds graph names for plan names (the interface of ``kgdb.link``, reduced to names)."""

    def entities(self, names: Sequence[str]) -> dict[str, tuple[str, ...]]: ...

    def relations(self, phrases: Sequence[str]) -> dict[str, tuple[str, ...]]: ...

    def types(self, names: Sequence[str]) -> dict[str, tuple[str, ...]]: ...


def plan_names(plan: Plan) -> tuple[list[str], list[str], list[str]]:
    """Entity names, relation phrases and type hints a plan mentions (first-seen order)."""
    names: dict[str, None] = {}
    phrases: dict[str, None] = {}
    types: dict[str, None] = {}
    for step in plan.steps:
        if isinstance(step, RetrievalStep):
            for node in (step.s, step.o):
                if node.name:
                    names[node.name] = None
                for t in node.types:
                    types[t] = None
            for r in step.p.relations:
                phrases[r] = None
    return list(names), list(phrases), list(types)


def link_plan(plan: Plan, linker: Linker) -> Links:
    """Phase 1: look the plan's names up through ``linker``."""
    names, phrases, types = plan_names(plan)
    entities = linker.entities(names) if names else {}
    relations = linker.relations(phrases) if phrases else {}
    linked_types = linker.types(types) if types else {}
    notes = []
    for t in types:
        if not linked_types.get(t):
            notes.append(f"type {t!r} labels no entity in this graph; it is ignored")
    for n in names:
        if not entities.get(n):
            notes.append(f"no entity named {n!r} was found")
    for p in phrases:
        if not relations.get(p):
            notes.append(f"no relation like {p!r} was found")
    return Links(dict(entities), dict(relations), dict(linked_types), tuple(notes))


class StoreLinker:
    """Links by name through the graph itself.

    Entities: exact name, then the same name ignoring case, then (when ``kgdb.link`` and an
    embedder are available) the nearest names in the entity vector index. Relations: the
    graph's relationship types matched exactly, ignoring case and ``_``/space, by closeness
    of spelling (``brithPlace`` -> ``birthPlace``), then by meaning through ``kgdb.link``
    (``director`` -> ``directed_by``). Types: ``EntityType`` names, widened through
    ``isA``/``contains``.
    """

    def __init__(self, store: Any, embedder: Any = None, *, k: int = 5,
                 max_distance: float = 0.9) -> None:
        self.store = store
        self.embedder = embedder
        self.k = k
        self.max_distance = max_distance
        self._rel_types: list[str] | None = None

    def _link_module(self) -> Any:
        try:
            from kgdb import link
        except ImportError:
            return None
        return link if self.embedder is not None else None

    def entities(self, names: Sequence[str]) -> dict[str, tuple[str, ...]]:
        dialect = self.store.dialect
        found: dict[str, list[str]] = {n: [] for n in names}
        rows = self.store.run(cy.find_entities_exact(dialect).with_params(names=list(names)))
        for rec in rows.records():
            found.setdefault(rec["wanted"], []).append(str(rec["id"]))
        missing = [n for n in names if not found[n]]
        if missing:
            stmt = cy.find_entities_by_name(dialect).with_params(
                names=missing, limit=len(missing) * 20)
            for rec in self.store.run(stmt).records():
                found.setdefault(rec["wanted"], []).append(str(rec["id"]))
        missing = [n for n in names if not found[n]]
        link = self._link_module()
        if missing and link is not None:
            for text, cands in link.link_entities(self.store, self.embedder, missing,
                                                  self.k).items():
                close = [c for c in cands if c.distance <= self.max_distance]
                if close:
                    best = close[0].distance
                    found[text] = [str(c.id) for c in close if c.distance <= best + 1e-6]
        return {n: tuple(dict.fromkeys(ids)) for n, ids in found.items()}

    def relation_types(self) -> list[str]:
        if self._rel_types is None:
            rows = self.store.run(cy.list_relationship_types()).records()
            self._rel_types = [str(r["type"]) for r in rows
                               if str(r["type"]) not in cy.STRUCTURAL_RELATIONS]
        return self._rel_types

    def relations(self, phrases: Sequence[str]) -> dict[str, tuple[str, ...]]:
        types = self.relation_types()
        out: dict[str, tuple[str, ...]] = {}
        link = self._link_module()
        for phrase in phrases:
            out[phrase] = lexical_relation(phrase, types)
        missing = [p for p in phrases if not out[p]]
        if missing and link is not None:
            for text, cands in link.link_relations(self.store, self.embedder, missing,
                                                   self.k).items():
                # Candidate.id is the RelationType's name, i.e. the relationship type.
                close = [c for c in cands if c.distance <= self.max_distance
                         and str(c.id) in types]
                if close:
                    out[text] = (str(close[0].id),)
        return out

    def types(self, names: Sequence[str]) -> dict[str, tuple[str, ...]]:
        found = self._catalog_types(names)
        labelled: dict[str, bool] = {}
        out: dict[str, tuple[str, ...]] = {}
        for name, labels in found.items():
            for label in labels:
                if label not in labelled:
                    stmt = cy.count_labelled_entities(self.store.dialect, label)
                    labelled[label] = bool(self.store.run(stmt).value(0))
            out[name] = tuple(lb for lb in labels if labelled[lb])
        return out

    def _catalog_types(self, names: Sequence[str]) -> dict[str, tuple[str, ...]]:
        rows = self.store.run(cy.list_entity_types()).records()
        catalog = {str(r["name"]): [str(x) for x in (r["narrower"] or []) + (r["contained"] or [])
                                    if x] for r in rows}
        out: dict[str, tuple[str, ...]] = {}
        lower = {k.lower(): k for k in catalog}
        for name in names:
            key = catalog and (name if name in catalog else lower.get(name.lower()))
            if key:
                out[name] = tuple(dict.fromkeys([key, *catalog[key]]))
            else:
                out[name] = ()
        link = self._link_module()
        missing = [n for n in names if not out[n]]
        if missing and link is not None and catalog:
            for text, cands in link.link_types(self.store, self.embedder, missing,
                                               self.k).items():
                close = [c for c in cands if c.distance <= self.max_distance
                         and str(c.id) in catalog]
                if close:
                    key = str(close[0].id)
                    out[text] = tuple(dict.fromkeys([key, *catalog[key]]))
        return out


def _squash(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text).lower()


def lexical_relation(phrase: str, types: Iterable[str]) -> tuple[str, ...]:
    """Relationship types spelled like ``phrase``: exact, ignoring case and separators,
    then the closest spelling (a misspelt ``brithPlace`` still finds ``birthPlace``)."""
    types = list(types)
    if phrase in types:
        return (phrase,)
    squashed = {_squash(t): t for t in types}
    if _squash(phrase) in squashed:
        return (squashed[_squash(phrase)],)
    close = difflib.get_close_matches(_squash(phrase), list(squashed), n=1, cutoff=0.75)
    if close:
        return (squashed[close[0]],)
    return _shared_stem(phrase, types)


_STOP_WORDS = {"has", "have", "had", "in", "by", "of", "the", "is", "a", "an", "to", "for",
               "on", "at", "with", "was", "be"}


def _words_of(text: str) -> list[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return [w for w in re.split(r"[\s_\-]+", spaced.lower()) if w and w not in _STOP_WORDS]


def _stem_match(a: str, b: str) -> bool:
    common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                  min(len(a), len(b)))
    return common >= 4 and common >= 0.6 * min(len(a), len(b))


def _shared_stem(phrase: str, types: list[str]) -> tuple[str, ...]:
    """Types sharing a word stem with the phrase (``director`` -> ``directed_by``,
    ``actor`` -> ``starred_actors``); only an unambiguous best match counts."""
    words = _words_of(phrase)
    scored = []
    for t in types:
        hits = sum(1 for w in words if any(_stem_match(w, x) for x in _words_of(t)))
        if hits:
            scored.append((hits, difflib.SequenceMatcher(None, _squash(phrase),
                                                         _squash(t)).ratio(), t))
    scored.sort(reverse=True)
    if not scored or (len(scored) > 1 and scored[0][0] == scored[1][0]):
        return ()
    return (scored[0][2],)


class ExplicitLinker:
    """Links given up front (tests, or a caller that linked by other means)."""

    def __init__(self, entities: dict[str, Sequence[str]] | None = None,
                 relations: dict[str, Sequence[str]] | None = None,
                 types: dict[str, Sequence[str]] | None = None) -> None:
        self._e = {k: tuple(v) for k, v in (entities or {}).items()}
        self._r = {k: tuple(v) for k, v in (relations or {}).items()}
        self._t = {k: tuple(v) for k, v in (types or {}).items()}

    def entities(self, names: Sequence[str]) -> dict[str, tuple[str, ...]]:
        return {n: self._e.get(n, ()) for n in names}

    def relations(self, phrases: Sequence[str]) -> dict[str, tuple[str, ...]]:
        return {p: self._r.get(p, ()) for p in phrases}

    def types(self, names: Sequence[str]) -> dict[str, tuple[str, ...]]:
        return {n: self._t.get(n, ()) for n in names}


# ---------------------------------------------------------------------------------- ops

@dataclass(frozen=True)
class CypherOp:
    """A statement to run; ``bound`` maps ``$bound_nX`` parameters to the aliases whose
    current values (entity ids) the executor fills in."""

    steps: tuple[int, ...]
    """Indexes of the plan steps this statement carries out."""
    kind: str
    query: cy.PatternQuery
    pattern: Pattern
    bound: dict[str, str]
    target: str | None = None
    """Alias the aggregate applies to (sort/count/sum/filter)."""
    result: str | None = None
    fallback: tuple[CypherOp, ...] = ()
    """For a pattern of several steps: the same steps one statement each (run when the
    joint pattern finds nothing)."""


@dataclass(frozen=True)
class PythonOp:
    """A step that runs in Python over bound values (Compare, Math, Deduce, Output...)."""

    steps: tuple[int, ...]
    kind: str
    reason: str


Op = CypherOp | PythonOp


@dataclass(frozen=True)
class CompiledPlan:
    plan: Plan
    dialect: str
    ops: tuple[Op, ...]
    links: Links | None
    notes: tuple[str, ...]

    def statements(self) -> list[CypherOp]:
        return [op for op in self.ops if isinstance(op, CypherOp)]


def compile_plan(plan: Plan, dialect: Dialect, links: Links | None = None) -> CompiledPlan:
    """Phase 2: generate operations and Cypher for ``dialect`` (no database needed)."""
    try:
        return _Compiler(plan, dialect, links).run()
    except InvalidIdentifierError as exc:
        raise CompileError(f"{plan.file}: {exc}") from None


class _Compiler:
    def __init__(self, plan: Plan, dialect: Dialect, links: Links | None) -> None:
        self.plan = plan
        self.dialect = dialect
        self.links = links
        self.notes: list[str] = list(links.notes) if links else [
            "compiled without a database: names are matched exactly as written, relations "
            "are used as relationship types as written, type hints are ignored "
            "(use --link to link them through the graph)"]
        self.ops: list[Op] = []
        self.graph_aliases: set[str] = set()
        """Node aliases bound to graph entities by an executed pattern."""
        self.pred_aliases: dict[str, tuple[str, ...]] = {}
        self.component_of: dict[str, Pattern] = {}
        self.edge_count = 0

    def error(self, step: Step, message: str) -> CompileError:
        where = f"{self.plan.file}:{step.span.line}:{step.span.column}: " if step.span else ""
        return CompileError(f"{where}{step.function}: {message}")

    def run(self) -> CompiledPlan:
        steps = list(self.plan.steps)
        i = 0
        while i < len(steps):
            if isinstance(steps[i], RetrievalStep):
                j = i
                while j < len(steps) and isinstance(steps[j], RetrievalStep):
                    j += 1
                self.retrievals(list(range(i, j)))
                i = j
                continue
            self.other(i, steps[i])
            i += 1
        return CompiledPlan(self.plan, self.dialect.NAME, tuple(self.ops), self.links,
                            tuple(dict.fromkeys(self.notes)))

    # -- Retrieval groups --------------------------------------------------------------
    def retrievals(self, indexes: list[int]) -> None:
        steps = [self.plan.steps[i] for i in indexes]
        parent: dict[str, str] = {}

        def find(a: str) -> str:
            parent.setdefault(a, a)
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for step in steps:
            assert isinstance(step, RetrievalStep)
            parent[find(step.s.alias)] = find(step.o.alias)
        groups: dict[str, list[int]] = {}
        for idx, step in zip(indexes, steps, strict=True):
            assert isinstance(step, RetrievalStep)
            groups.setdefault(find(step.s.alias), []).append(idx)
        for group in groups.values():
            self.pattern_op(group)

    def pattern_op(self, indexes: list[int]) -> None:
        nodes: dict[str, dict[str, Any]] = {}
        edges: list[EdgeRef] = []
        links: dict[str, cy.VarLinks] = {}
        for idx in indexes:
            step = self.plan.steps[idx]
            assert isinstance(step, RetrievalStep)
            for spec in (step.s, step.o):
                entry = nodes.setdefault(spec.alias, {"name": None, "types": [],
                                                      "constraints": []})
                if spec.name:
                    if entry["name"] and entry["name"] != spec.name:
                        raise self.error(step, f"alias {spec.alias!r} is given two names "
                                               f"({entry['name']!r} and {spec.name!r})")
                    entry["name"] = spec.name
                entry["types"] += [t for t in spec.types if t not in entry["types"]]
            self.edge_count += 1
            edge_var = step.p.alias
            if any(e.var == edge_var for e in edges) or edge_var in self.pred_aliases:
                edge_var = f"{step.p.alias}#{self.edge_count}"
            relations = step.p.relations or self.pred_aliases.get(step.p.alias, ())
            if step.p.relations:
                self.pred_aliases[step.p.alias] = step.p.relations
            edge_cons: list[Constraint] = []
            for c in step.constraints:
                constraint = Constraint(c.prop, c.op, c.value)
                if c.target == step.p.alias:
                    edge_cons.append(constraint)
                else:
                    nodes[c.target]["constraints"].append(constraint)
            edges.append(EdgeRef(edge_var, step.s.alias, step.o.alias,
                                 relations[0] if relations else None, tuple(relations[1:]),
                                 tuple(edge_cons), directed=True))
            links[edge_var] = cy.VarLinks(relation_types=self.relation_types(step, relations))
        node_refs = []
        bound: dict[str, str] = {}
        for alias, entry in nodes.items():
            node_refs.append(NodeRef(alias, entry["name"], tuple(entry["types"]),
                                     tuple(entry["constraints"])))
            links[alias] = self.node_links(alias, entry, alias in self.graph_aliases)
        try:
            pattern = Pattern(tuple(node_refs), tuple(edges))
        except PatternError as exc:
            raise self.error(self.plan.steps[indexes[0]], str(exc)) from None
        query = cy.match_pattern(self.dialect, pattern, links)
        bound = self.bound_map(pattern, links)
        fallback = self.step_by_step(indexes, pattern, links) if len(indexes) > 1 else ()
        self.ops.append(CypherOp(tuple(indexes), "match", query, pattern, bound,
                                 fallback=fallback))
        for alias in nodes:
            self.graph_aliases.add(alias)
            self.component_of[alias] = pattern

    def step_by_step(self, indexes: list[int], pattern: Pattern,
                     links: dict[str, cy.VarLinks]) -> tuple[CypherOp, ...]:
        """One single-edge statement per step, for when the joint pattern finds nothing:
        the steps that hold still bind their aliases and only the failing one falls back to
        chunks (KAG runs GraphRetrieval per sub-question)."""
        ops = []
        seen = {a for a in self.graph_aliases}
        for idx, edge in zip(indexes, pattern.edges, strict=True):
            nodes = tuple(pattern.node(v) for v in (edge.source, edge.target))
            sub = Pattern(nodes, (edge,))
            sub_links = {edge.var: links[edge.var]}
            for n in nodes:
                base = links[n.var]
                sub_links[n.var] = cy.VarLinks(base.ids, base.name, base.labels,
                                               base.relation_types, n.var in seen)
            query = cy.match_pattern(self.dialect, sub, sub_links)
            ops.append(CypherOp((idx,), "match", query, sub, self.bound_map(sub, sub_links)))
            seen |= {edge.source, edge.target}
        return tuple(ops)

    def relation_types(self, step: RetrievalStep,
                       relations: tuple[str, ...]) -> tuple[str, ...] | None:
        if not relations:
            return None
        if self.links is None:
            return relations
        out: list[str] = []
        for r in relations:
            out += list(self.links.relations.get(r, ()))
        if not out:
            # Nothing in the graph is like this relation: the statement must find nothing
            # (and the executor then falls back to chunks), not match any relation.
            return tuple(relations)
        return tuple(dict.fromkeys(out))

    def node_links(self, alias: str, entry: dict[str, Any], bound: bool) -> cy.VarLinks:
        labels: list[str] = []
        if self.links is not None:
            for t in entry["types"]:
                labels += list(self.links.types.get(t, ()))
        if entry["name"] is None:
            return cy.VarLinks(labels=tuple(dict.fromkeys(labels)), bound=bound)
        if self.links is None:
            return cy.VarLinks(name=entry["name"], bound=bound)
        ids = self.links.entities.get(entry["name"])
        if ids is None:
            return cy.VarLinks(name=entry["name"], labels=tuple(dict.fromkeys(labels)),
                               bound=bound)
        return cy.VarLinks(ids=tuple(ids), labels=tuple(dict.fromkeys(labels)), bound=bound)

    @staticmethod
    def bound_map(pattern: Pattern, links: dict[str, cy.VarLinks]) -> dict[str, str]:
        return {f"bound_n{i}": n.var for i, n in enumerate(pattern.nodes)
                if links.get(n.var, cy.VarLinks()).bound}

    # -- other steps -------------------------------------------------------------------
    def other(self, index: int, step: Step) -> None:
        if isinstance(step, SortStep) and step.orderby and \
                {step.set.alias, step.orderby.alias} <= self.graph_aliases and \
                self.component_of[step.set.alias] is not self.component_of[step.orderby.alias]:
            raise self.error(step, f"orderby={step.orderby.alias} is not connected to "
                                   f"set={step.set.alias}: both must come from Retrievals "
                                   "that share aliases, so each value has its sort key")
        if isinstance(step, SortStep | CountStep | SumStep | FilterStep) and \
                self.on_graph(step):
            self.aggregate_op(index, step)
            return
        reason = {
            "compare": "compares values already bound (no graph access needed)",
            "math": "arithmetic over bound values by kgdb's safe evaluator",
            "deduce": "greater/less/equal in Python; entailment and the other ops by the LLM",
            "output": "returns bound values",
        }.get(step.kind, "its operands are not graph entities bound by a pattern")
        self.ops.append(PythonOp((index,), step.kind, reason))

    def on_graph(self, step: Step) -> bool:
        refs: list[str] = []
        if isinstance(step, SortStep):
            refs = [step.set.alias] + ([step.orderby.alias] if step.orderby else [])
            if step.orderby and step.orderby.alias in self.graph_aliases and \
                    self.component_of.get(step.orderby.alias) is not \
                    self.component_of.get(step.set.alias):
                return False
        elif isinstance(step, CountStep | SumStep):
            refs = [step.set.alias]
        elif isinstance(step, FilterStep):
            if not isinstance(step.right, Literal) or step.op in ("in",):
                return False
            refs = [step.left.alias]
        return bool(refs) and all(r in self.graph_aliases for r in refs)

    def aggregate_op(self, index: int, step: Step) -> None:
        if isinstance(step, SortStep):
            target = step.set.alias
            tail = cy.Tail("sort", var=target,
                           key_var=step.orderby.alias if step.orderby else None,
                           key_prop=(step.orderby.prop if step.orderby else step.set.prop),
                           descending=step.direction == "max", limit=step.limit)
        elif isinstance(step, CountStep):
            target = step.set.alias
            tail = cy.Tail("count", var=target)
        elif isinstance(step, SumStep):
            target = step.set.alias
            tail = cy.Tail("sum", var=target, prop=step.set.prop)
        else:
            assert isinstance(step, FilterStep) and isinstance(step.right, Literal)
            target = step.left.alias
            tail = cy.Tail("filter", var=target, prop=step.left.prop, op=step.op,
                           value=step.right.value)
        pattern = self.component_of[target]
        links = {n.var: cy.VarLinks(bound=True) for n in pattern.nodes}
        for e in pattern.edges:
            links[e.var] = cy.VarLinks(relation_types=self.edge_types(e))
        # Node conditions already held when the pattern ran; the current bindings (which
        # earlier Sorts and Filters may have narrowed) are passed as $bound_* parameters.
        bare = Pattern(tuple(NodeRef(n.var) for n in pattern.nodes),
                       tuple(EdgeRef(e.var, e.source, e.target, e.relation, e.alternatives,
                                     e.constraints, e.directed) for e in pattern.edges))
        query = cy.match_pattern(self.dialect, bare, links, tail)
        self.ops.append(CypherOp((index,), step.kind, query, bare, self.bound_map(bare, links),
                                 target=target, result=step.result))

    def edge_types(self, edge: EdgeRef) -> tuple[str, ...] | None:
        phrases = edge.phrases
        if not phrases:
            return None
        if self.links is None:
            return phrases
        out: list[str] = []
        for p in phrases:
            out += list(self.links.relations.get(p, ()))
        return tuple(dict.fromkeys(out)) or phrases
