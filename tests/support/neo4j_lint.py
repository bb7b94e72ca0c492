"""Python wrapper around the offline Neo4j Cypher linter (``tests/neo4j_lint/lint.mjs``).

The linter is Neo4j's own front-end (npm ``@neo4j-cypher/language-support``, pinned in
``tests/neo4j_lint/package.json``) run under Node.js with the Neo4j 5.26 procedure and
function signatures of ``tests/neo4j_lint/neo4j5_signatures.json`` and the CYPHER 5
language. It needs no Neo4j server.

Install its node dependencies once with::

    npm ci --prefix tests/neo4j_lint --no-audit --no-fund

Every diagnostic it returns (error *or* warning) is meant to be treated as a failure.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

LINT_DIR = Path(__file__).resolve().parent.parent / "neo4j_lint"
LINT_SCRIPT = LINT_DIR / "lint.mjs"
PACKAGE_NAME = "@neo4j-cypher/language-support"
MIN_NODE_MAJOR = 18
INSTALL_HINT = "run `make lint-deps` / npm ci --prefix tests/neo4j_lint --no-audit --no-fund"

# node start-up + package load + warm-up, then per-query time (tens of ms each).
_BASE_TIMEOUT_S = 120.0
_PER_QUERY_TIMEOUT_S = 1.0


class LintDiagnostic(NamedTuple):
    severity: str  # "error" | "warning" | "information" | "hint"
    message: str
    line: int  # 1-based
    column: int  # 1-based


def _node_binary() -> str | None:
    return shutil.which("node")


@functools.lru_cache(maxsize=8)
def _node_major(node: str) -> int | None:
    try:
        out = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.match(r"v?(\d+)\.", out.strip())
    return int(m.group(1)) if m else None


def _installed_package_dir() -> Path:
    return LINT_DIR / "node_modules" / Path(*PACKAGE_NAME.split("/"))


def lint_available() -> str | None:
    """Return None if the linter can run here, else a human-readable reason why not."""
    node = _node_binary()
    if node is None:
        return f"node not found on PATH (Node.js >= {MIN_NODE_MAJOR} is needed)"
    major = _node_major(node)
    if major is None:
        return f"`{node} --version` failed"
    if major < MIN_NODE_MAJOR:
        return f"node {major} is too old (Node.js >= {MIN_NODE_MAJOR} is needed)"
    installed = _installed_package_dir() / "package.json"
    if not installed.is_file():
        return f"{PACKAGE_NAME} is not installed: {INSTALL_HINT}"
    try:
        wanted = json.loads((LINT_DIR / "package.json").read_text())["dependencies"][PACKAGE_NAME]
        have = json.loads(installed.read_text())["version"]
    except (OSError, ValueError, KeyError) as exc:
        return f"cannot read the linter's package.json files ({exc}): {INSTALL_HINT}"
    if have != wanted:
        return f"{PACKAGE_NAME} {have} is installed but {wanted} is pinned: {INSTALL_HINT}"
    return None


def lint_queries(queries: list[str], *, timeout: float | None = None) -> list[list[LintDiagnostic]]:
    """Lint each query (one node process for the whole list).

    Returns, in the same order, the list of diagnostics of each query; an empty list
    means the query is clean. Raises RuntimeError if the linter is unavailable or fails.
    """
    queries = list(queries)
    if not queries:
        return []
    for i, q in enumerate(queries):
        if not isinstance(q, str):
            raise TypeError(f"query #{i} is not a str: {q!r}")
    reason = lint_available()
    if reason is not None:
        raise RuntimeError(f"Neo4j Cypher linter unavailable: {reason}")
    node = _node_binary()
    assert node is not None
    if timeout is None:
        timeout = _BASE_TIMEOUT_S + _PER_QUERY_TIMEOUT_S * len(queries)
    try:
        proc = subprocess.run(
            [node, str(LINT_SCRIPT)],
            input=json.dumps(queries),
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=timeout,
            cwd=LINT_DIR,
            env={**os.environ, "NODE_NO_WARNINGS": "1"},
        )
    except subprocess.TimeoutExpired as exc:
        stderr = (
            exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
        )
        raise RuntimeError(
            f"Neo4j Cypher linter timed out after {timeout:.0f}s on {len(queries)} queries; "
            f"stderr:\n{stderr or ''}"
        ) from exc
    if proc.returncode != 0:
        raise RuntimeError(
            f"Neo4j Cypher linter failed (exit {proc.returncode}); stderr:\n{proc.stderr}"
        )
    try:
        raw = json.loads(proc.stdout)
    except ValueError as exc:
        raise RuntimeError(
            f"Neo4j Cypher linter printed invalid JSON ({exc}); stdout starts with "
            f"{proc.stdout[:500]!r}; stderr:\n{proc.stderr}"
        ) from exc
    if not isinstance(raw, list) or len(raw) != len(queries):
        raise RuntimeError(
            f"Neo4j Cypher linter returned {type(raw).__name__} of length "
            f"{len(raw) if isinstance(raw, list) else '?'} for {len(queries)} queries"
        )
    return [
        [
            LintDiagnostic(
                severity=str(d["severity"]),
                message=str(d["message"]),
                line=int(d["line"]),
                column=int(d["column"]),
            )
            for d in diags
        ]
        for diags in raw
    ]


def format_diagnostics(query: str, diagnostics: list[LintDiagnostic]) -> str:
    """Human-readable rendering of one query's diagnostics (for assertion messages)."""
    lines = [f"query: {query}"]
    lines += [f"  {d.severity} at {d.line}:{d.column}: {d.message}" for d in diagnostics]
    return "\n".join(lines)
