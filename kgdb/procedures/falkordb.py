"""``kgdb procedures install|status|drop`` on FalkorDB: the ``kgdb`` JavaScript UDF library
(``kgdb.js``, package data), loaded with ``GRAPH.UDF LOAD REPLACE``.

What it holds, and why only that: candidate ranking (``kgdb.topk``: ORDER BY distance, id;
``kgdb.rrf``: reciprocal rank fusion, the hybrid mode's ``fusion=rrf``) and ``kgdb.version()``.
Each is proved equal to kgdb's Python/Cypher computation by tests/live/test_udf.py.
Left out: vector maths (slower in JS than FalkorDB's ``vec.*``, so distances are passed in);
KG-CQR's beam as one UDF call (slower than the per-level Cypher statements, and
``getNeighbors`` with ``direction: 'both'`` returns only outgoing edges on 4.16.3; see
docs/design/ppr-projection.md); the rules' ask-time evaluation
(the compiled Cypher statement already runs in FalkorDB: a JS copy would be a second
implementation of the rule semantics). Libraries are server-wide and survive restarts.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any

from kgdb.engine.base import GraphStore
from kgdb.errors import KgdbError, StatementError
from kgdb.statement import EngineCommand

LIBRARY = "kgdb"
FUNCTIONS = ("version", "topk", "rrf", "ppr", "pprKnown", "pprHasBlock", "pprStored")


class UdfError(KgdbError):
    """The UDF library cannot be installed, checked or dropped."""


def script() -> str:
    """The shipped library's source."""
    return resources.files("kgdb.procedures").joinpath("kgdb.js").read_text(encoding="utf-8")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load(store: GraphStore, code: str) -> None:
    """Load ``code`` as the ``kgdb`` library (replacing it)."""
    try:
        store.execute(EngineCommand("GRAPH.UDF", ("LOAD", "REPLACE", LIBRARY, code),
                                    description="GRAPH.UDF LOAD kgdb"))
    except StatementError as exc:
        if "unknown command" in str(exc).lower() or "unknown subcommand" in str(exc).lower():
            raise UdfError(f"{store.address} has no JavaScript UDFs (FalkorDB 4.16 or later "
                           "is needed)") from exc
        raise


def install(store: GraphStore) -> dict[str, Any]:
    """Load the shipped library and check that every function answers."""
    code = script()
    load(store, code)
    found = store.run(f"RETURN {LIBRARY}.version() AS version").value(0)
    listed = _listed(store)
    missing = [f for f in FUNCTIONS if f not in (listed or {}).get("functions", [])]
    if missing:
        raise UdfError(f"the kgdb library loaded without {', '.join(missing)}")
    return {"engine": "falkordb", "library": LIBRARY, "version": found,
            "functions": [f"{LIBRARY}.{f}" for f in FUNCTIONS], "sha256": _sha(code)}


def status(store: GraphStore) -> dict[str, Any]:
    """Whether the library is loaded and equal to the shipped script."""
    listed = _listed(store)
    expected = _sha(script())
    if listed is None:
        return {"engine": "falkordb", "library": LIBRARY, "installed": [],
                "missing": [f"{LIBRARY}.{f}" for f in FUNCTIONS], "changed": [],
                "up_to_date": False}
    code = str(listed.get("library_code", ""))
    same = _sha(code) == expected
    functions = [f"{LIBRARY}.{f}" for f in listed.get("functions", [])]
    return {"engine": "falkordb", "library": LIBRARY, "installed": functions,
            "missing": [f"{LIBRARY}.{f}" for f in FUNCTIONS
                        if f"{LIBRARY}.{f}" not in functions],
            "changed": [] if same else [LIBRARY], "sha256": _sha(code),
            "up_to_date": same}


def drop(store: GraphStore) -> dict[str, Any]:
    if _listed(store) is None:
        return {"engine": "falkordb", "dropped": []}
    store.execute(EngineCommand("GRAPH.UDF", ("DELETE", LIBRARY),
                                description="GRAPH.UDF DELETE kgdb"))
    return {"engine": "falkordb", "dropped": [f"{LIBRARY}.{f}" for f in FUNCTIONS]}


def _listed(store: GraphStore) -> dict[str, Any] | None:
    reply = store.execute(EngineCommand("GRAPH.UDF", ("LIST", LIBRARY, "WITHCODE"),
                                        description="GRAPH.UDF LIST", write=False))
    for entry in reply or []:
        fields = {_text(entry[i]): entry[i + 1] for i in range(0, len(entry) - 1, 2)}
        if _text(fields.get("library_name")) == LIBRARY:
            return {"functions": [_text(f) for f in fields.get("functions") or []],
                    "library_code": _text(fields.get("library_code"))}
    return None


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
