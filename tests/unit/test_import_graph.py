"""The house is arranged by role: no package imports one above it, and no import cycle.

Every ``import`` in ``kgdb/`` counts, including those inside functions (a lazy import is still
a dependency). Layers, lowest first; a module may import its own layer or any lower one.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import kgdb

ROOT = Path(kgdb.__file__).parent

LAYERS: list[set[str]] = [
    {"errors", "text", "statement", "config", "vocabulary", "measure", "results", "package",
     "progress", "graph_cache"},
    # leaves: errors, text contract, settings, the graph vocabulary, percentiles and timers,
    # results files, the installed package (its name, version and bundled examples), progress,
    # the per-graph caches
    {"ir"},                                         # the pattern and the linked pattern
    {"dsl"},                                        # front-ends: logical forms, rules, patterns
    {"dialects"},                                   # what differs between engines
    {"cypher"},                                     # every statement kgdb sends
    {"engine", "embed", "llm"},                     # talking to databases and models
    {"schema"},                                     # the SPG schema and its DDL
    {"stored"},                                     # what ingestion writes, retrieval reads
    {"link"},                                       # the one linker
    {"load", "documents", "retrieve", "solve", "procedures"},  # loaders, algorithms, in-database shims
    {"bench", "demo", "scale", "serve", "spark"},  # spark: the document pipeline on Spark
    {"api"},                                        # the Python API (kgdb.connect)
    {"cli", "__main__", "docs_gen", "spark_submit"},  # every command; reference pages from them
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def unit_of(module: str) -> str:
    """``kgdb.cypher.pattern`` -> ``cypher``; ``kgdb.errors`` -> ``errors``."""
    return module.split(".")[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)
    return {m for m in found if m.startswith("kgdb.") and m.count(".") >= 1}


def edges() -> set[tuple[str, str, str]]:
    """``(importing unit, imported unit, importing module)`` for every cross-unit import."""
    out = set()
    for path in sorted(ROOT.rglob("*.py")):
        mod = module_name(path)
        if mod == "kgdb":
            continue
        for target in imports_of(path):
            a, b = unit_of(mod), unit_of(target)
            if a != b:
                out.add((a, b, mod))
    return out


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(module_name(p)) for p in ROOT.rglob("*.py") if module_name(p) != "kgdb"}
    assert units - set(RANK) == set(), "give these packages/modules a layer in LAYERS"


def test_no_package_imports_one_above_it() -> None:
    upward = sorted(f"{mod} imports kgdb.{b} ({a} is layer {RANK[a]}, {b} is layer {RANK[b]})"
                    for a, b, mod in edges() if a in RANK and RANK[b] > RANK[a])
    assert upward == []


def test_no_import_cycle_between_units() -> None:
    graph: dict[str, set[str]] = {}
    for a, b, _ in edges():
        graph.setdefault(a, set()).add(b)
    cycles = []

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(graph.get(start, ()))
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(graph.get(n, ()))
        return seen

    for unit in graph:
        if unit in reach(unit):
            cycles.append(unit)
    assert cycles == [], f"units on an import cycle: {sorted(cycles)}"


def test_retrieval_does_not_import_ingestion() -> None:
    """What retrieval and ingestion both need lives below both (stored, link, cypher)."""
    found = sorted(mod for a, b, mod in edges() if a == "retrieve" and b in ("documents", "load"))
    assert found == []


CYPHER_HOMES = {"cypher", "dialects"}
CYPHER_TEXT = re.compile(
    r"\b(MATCH|OPTIONAL MATCH|MERGE|UNWIND|DETACH DELETE|CREATE (INDEX|CONSTRAINT|VECTOR)|"
    r"CALL [a-z]+\.|RETURN [a-z_]+(\.|\)| AS))|\$(?!(ref|defs)\b)[a-z_][a-z0-9_]*\b")
"""Cypher keywords and ``$parameters``; JSON Schema's ``$ref`` and ``$defs`` keys are not."""


def string_literals(path: Path) -> list[tuple[int, str]]:
    """String constants of a module, docstrings (any bare string statement) excluded."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_cypher_text_lives_in_cypher_and_dialects() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if module_name(path) == "kgdb" or unit_of(module_name(path)) in CYPHER_HOMES:
            continue
        for line, text in string_literals(path):
            if CYPHER_TEXT.search(text):
                found.append(f"{path.relative_to(ROOT.parent)}:{line}: {text[:60]!r}")
    assert found == []
