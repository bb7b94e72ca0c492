"""The front-ends sit at the bottom of the house: nothing in kgdb/dsl/ imports generation,
engines or algorithms, and the rule compiler takes its AST from kgdb/dsl/ (not from solve/)."""

from __future__ import annotations

import ast
from pathlib import Path

KGDB = Path(__file__).resolve().parents[2] / "kgdb"
DSL_MAY_IMPORT = ("kgdb.dsl", "kgdb.ir", "kgdb.errors", "kgdb.text")


def kgdb_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m == "kgdb" or m.startswith("kgdb.")}


def allowed(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_dsl_imports_nothing_above_it() -> None:
    files = [*sorted((KGDB / "dsl").glob("*.py")), KGDB / "ir.py"]
    assert len(files) > 8
    upward = {f"{f.relative_to(KGDB.parent)} imports {m}" for f in files for m in kgdb_imports(f)
              if m != "kgdb" and not allowed(m, DSL_MAY_IMPORT)}
    assert not upward, sorted(upward)


def test_generation_takes_the_rules_ast_from_dsl() -> None:
    for path in sorted((KGDB / "cypher").glob("*.py")) + sorted((KGDB / "dialects").glob("*.py")):
        upward = [m for m in kgdb_imports(path) if allowed(m, ("kgdb.solve", "kgdb.retrieve",
                                                                "kgdb.engine", "kgdb.cli"))]
        assert not upward, f"{path.name} imports {upward}"
