"""Compile a checked logical-form plan to Cypher, in three phases (:func:`compile_plan`).

1. **Patterns** (no database): consecutive Retrieval steps that share aliases become one
   :class:`kgdb.ir.Pattern`.
2. **Linking** (needs a database): the one linker (:mod:`kgdb.link`, ``names`` mode, see
   :func:`store_linker`) links every pattern's names, relation phrases and type hints at once.
3. **Generation** (no database): the linked patterns become a list of operations for one
   dialect. Consecutive Retrieval steps that share node aliases form one
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

from dataclasses import dataclass
from typing import Any

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
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore
from kgdb.errors import DslError, InvalidIdentifierError
from kgdb.ir import (
    Constraint,
    EdgeRef,
    LinkedNode,
    LinkedPattern,
    NodeRef,
    Pattern,
    PatternError,
    connected_groups,
    unlinked,
)
from kgdb.link import Linker, LinkSettings, PatternLinker


class CompileError(DslError):
    """A plan that parses and checks but cannot be compiled (names the step and the cause)."""


def store_linker(store: GraphStore, embedder: Embedder | None = None) -> Linker:
    """The linker logical forms use: by name first, then by meaning (see kgdb.link)."""
    return Linker(store, embedder, LinkSettings("names", k_nodes=5, k_relations=5, k_types=5,
                                                max_distance=0.9, distinct="edges"))


# ---------------------------------------------------------------------------------- ops

@dataclass(frozen=True)
class CypherOp:
    """A statement to run (the executor binds the aliases earlier steps bound, see
    :meth:`kgdb.cypher.logical_form.PatternQuery.bind`)."""

    steps: tuple[int, ...]
    """Indexes of the plan steps this statement carries out."""
    kind: str
    query: cy.PatternQuery
    linked: LinkedPattern
    target: str | None = None
    """Alias the aggregate applies to (sort/count/sum/filter)."""
    result: str | None = None
    fallback: tuple[CypherOp, ...] = ()
    """For a pattern of several steps: the same steps one statement each (run when the
    joint pattern finds nothing)."""

    @property
    def bound(self) -> dict[str, str]:
        """Parameter -> alias filled in at run time (for display)."""
        return self.query.bound_params


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
    linked: bool
    """Whether names were linked through a database (or used as written)."""
    notes: tuple[str, ...]

    def statements(self) -> list[CypherOp]:
        return [op for op in self.ops if isinstance(op, CypherOp)]


UNLINKED_NOTE = ("compiled without a database: names are matched exactly as written, relations "
                 "are used as relationship types as written, type hints are ignored "
                 "(use --link to link them through the graph)")


def compile_plan(plan: Plan, dialect: Dialect,
                 linker: PatternLinker | None = None) -> CompiledPlan:
    """Build the plan's patterns, link them all at once through ``linker`` (or use their
    names as written), and generate operations and Cypher for ``dialect``."""
    try:
        return _Compiler(plan, dialect).run(linker)
    except InvalidIdentifierError as exc:
        raise CompileError(f"{plan.file}: {exc}") from exc


@dataclass
class _Group:
    """Consecutive Retrieval steps that share aliases: one pattern, one statement."""

    indexes: list[int]
    pattern: Pattern
    bound: frozenset[str]
    """Aliases an earlier pattern bound."""


class _Compiler:
    def __init__(self, plan: Plan, dialect: Dialect) -> None:
        self.plan = plan
        self.dialect = dialect
        self.items: list[_Group | int] = []
        """In plan order: a Retrieval group, or the index of another step."""
        self.graph_aliases: set[str] = set()
        """Node aliases bound to graph entities by an executed pattern."""
        self.pred_aliases: dict[str, tuple[str, ...]] = {}
        self.component_of: dict[str, int] = {}
        """Alias -> the group (index into ``items``) whose pattern binds it."""
        self.edge_count = 0

    def error(self, step: Step, message: str) -> CompileError:
        where = f"{self.plan.file}:{step.span.line}:{step.span.column}: " if step.span else ""
        return CompileError(f"{where}{step.function}: {message}")

    def run(self, linker: PatternLinker | None) -> CompiledPlan:
        # 1. Patterns from the plan (no database).
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
            self.items.append(i)
            self.check_other(i, steps[i])
            i += 1
        # 2. Linking: every pattern at once.
        groups = [item for item in self.items if isinstance(item, _Group)]
        if linker is not None:
            linked = linker.link_all([g.pattern for g in groups])
            notes = [note for lp in linked for note in lp.notes]
        else:
            linked = [unlinked(g.pattern, "edges") for g in groups]
            notes = [UNLINKED_NOTE]
        by_group = {id(g): lp for g, lp in zip(groups, linked, strict=True)}
        # 3. Generation.
        ops: list[Op] = []
        for item in self.items:
            if isinstance(item, _Group):
                ops.append(self.pattern_op(item, by_group[id(item)]))
            else:
                ops.append(self.other(item, steps[item], by_group))
        return CompiledPlan(self.plan, self.dialect.NAME, tuple(ops), linker is not None,
                            tuple(dict.fromkeys(notes)))

    # -- Retrieval groups --------------------------------------------------------------
    def retrievals(self, indexes: list[int]) -> None:
        steps: list[RetrievalStep] = []
        for i in indexes:
            step = self.plan.steps[i]
            assert isinstance(step, RetrievalStep)
            steps.append(step)
        groups = connected_groups(
            [f"s{k}" for k in range(len(steps))],
            [(f"s{k}", f"a:{alias}") for k, st in enumerate(steps)
             for alias in (st.s.alias, st.o.alias)])
        for group in groups:
            members = [int(x[1:]) for x in group if x.startswith("s")]
            self.build_group([indexes[k] for k in members])

    def build_group(self, indexes: list[int]) -> None:
        nodes: dict[str, dict[str, Any]] = {}
        edges: list[EdgeRef] = []
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
        node_refs = [NodeRef(alias, e["name"], tuple(e["types"]), tuple(e["constraints"]))
                     for alias, e in nodes.items()]
        try:
            pattern = Pattern(tuple(node_refs), tuple(edges))
        except PatternError as exc:
            raise self.error(self.plan.steps[indexes[0]], str(exc)) from exc
        bound = frozenset(a for a in nodes if a in self.graph_aliases)
        self.items.append(_Group(indexes, pattern, bound))
        for alias in nodes:
            self.graph_aliases.add(alias)
            self.component_of[alias] = len(self.items) - 1

    def pattern_op(self, group: _Group, linked: LinkedPattern) -> CypherOp:
        query = cy.match_pattern(self.dialect, linked, bound=group.bound)
        fallback = self.step_by_step(group, linked) if len(group.indexes) > 1 else ()
        return CypherOp(tuple(group.indexes), "match", query, linked, fallback=fallback)

    def step_by_step(self, group: _Group, linked: LinkedPattern) -> tuple[CypherOp, ...]:
        """One single-edge statement per step, for when the joint pattern finds nothing:
        the steps that hold still bind their aliases and only the failing one falls back to
        chunks (KAG runs GraphRetrieval per sub-question)."""
        ops = []
        seen = set(group.bound)
        pattern = linked.pattern
        for idx, edge in zip(group.indexes, pattern.edges, strict=True):
            sub = linked.restrict(Pattern(tuple(pattern.node(v) for v in
                                                (edge.source, edge.target)), (edge,)))
            query = cy.match_pattern(self.dialect, sub,
                                     bound=[v for v in (edge.source, edge.target) if v in seen])
            ops.append(CypherOp((idx,), "match", query, sub))
            seen |= {edge.source, edge.target}
        return tuple(ops)

    # -- other steps -------------------------------------------------------------------
    def check_other(self, index: int, step: Step) -> None:
        if isinstance(step, SortStep) and step.orderby and \
                {step.set.alias, step.orderby.alias} <= self.graph_aliases and \
                self.component_of[step.set.alias] != self.component_of[step.orderby.alias]:
            raise self.error(step, f"orderby={step.orderby.alias} is not connected to "
                                   f"set={step.set.alias}: both must come from Retrievals "
                                   "that share aliases, so each value has its sort key")

    def other(self, index: int, step: Step, linked: dict[int, LinkedPattern]) -> Op:
        if isinstance(step, SortStep | CountStep | SumStep | FilterStep) and \
                self.on_graph(step):
            return self.aggregate_op(index, step, linked)
        reason = {
            "compare": "compares values already bound (no graph access needed)",
            "math": "arithmetic over bound values by kgdb's safe evaluator",
            "deduce": "greater/less/equal in Python; entailment and the other ops by the LLM",
            "output": "returns bound values",
        }.get(step.kind, "its operands are not graph entities bound by a pattern")
        return PythonOp((index,), step.kind, reason)

    def on_graph(self, step: Step) -> bool:
        refs: list[str] = []
        if isinstance(step, SortStep):
            refs = [step.set.alias] + ([step.orderby.alias] if step.orderby else [])
            if step.orderby and step.orderby.alias in self.graph_aliases and \
                    self.component_of.get(step.orderby.alias) != \
                    self.component_of.get(step.set.alias):
                return False
        elif isinstance(step, CountStep | SumStep):
            refs = [step.set.alias]
        elif isinstance(step, FilterStep):
            if not isinstance(step.right, Literal) or step.op in ("in",):
                return False
            refs = [step.left.alias]
        return bool(refs) and all(r in self.graph_aliases for r in refs)

    def aggregate_op(self, index: int, step: Step, linked: dict[int, LinkedPattern]) -> CypherOp:
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
        group = self.items[self.component_of[target]]
        assert isinstance(group, _Group)
        source = linked[id(group)]
        # Node conditions already held when the pattern ran; the current bindings (which
        # earlier Sorts and Filters may have narrowed) are bound at run time. Edges keep
        # their linked types and constraints.
        bare = Pattern(tuple(NodeRef(n.var) for n in source.pattern.nodes),
                       source.pattern.edges)
        aggregate = LinkedPattern(bare, tuple(LinkedNode(n) for n in bare.nodes),
                                  source.edges, source.distinct)
        query = cy.match_pattern(self.dialect, aggregate, tail,
                                 bound=[n.var for n in bare.nodes])
        return CypherOp((index,), step.kind, query, aggregate, target=target,
                        result=step.result)
