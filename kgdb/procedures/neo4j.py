"""``kgdb procedures install|status|drop`` on Neo4j: APOC Extended custom procedures
``custom.kgdb.*`` (the catalogue and bodies are in :mod:`kgdb.cypher.procedures`).

Install runs on the system database (APOC stores custom procedures there), for the store's
database; then it waits until every procedure is callable (APOC refreshes them every
``apoc.custom.procedures.refresh`` ms) and records them as ``(:KgdbMeta {key:
'procedure/<name>'})`` nodes. Not available on Aura (no APOC Extended there).
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable, Collection
from typing import Any

from kgdb.cypher import procedures as cy
from kgdb.dsl.rules_ast import RuleSet
from kgdb.engine.base import GraphStore
from kgdb.errors import EngineError, KgdbError
from kgdb.package import version

WAIT_S = 90.0
"""How long install waits for APOC to make the procedures callable."""
RELAYED = ("kgdb.embed", "kgdb.relations", "kgdb.chunks", "kgdb.ask", "kgdb.askEvidence")
"""What needs the kgdb service (left out by ``--no-service``)."""


class ProcedureError(KgdbError):
    """Procedures cannot be installed, checked or dropped (the message says why)."""


def expected(store: GraphStore, rulesets: dict[str, RuleSet], *,
             service: bool = True) -> list[cy.Procedure]:
    """What this kgdb installs on ``store``: chunk procedures only where a chunk vector index
    exists; relayed ones only with ``service``."""
    chunks = any(i.kind == "vector" and i.label == cy.CHUNK and i.entity == "node"
                 for i in store.indexes())
    found = cy.catalogue(store.dialect, rulesets, chunks=chunks)
    return [p for p in found if service or p.name not in RELAYED]


def install(store: Any, rulesets: dict[str, RuleSet], *, service: bool = True,
            wait_s: float = WAIT_S) -> dict[str, Any]:
    """Install every procedure of :func:`expected`, replace changed ones, drop kgdb's others;
    wait until they are callable and record them."""
    _require_apoc_extended(store)
    if service:
        _require_service(store)
    database = str(store.run(cy.current_database()).value(0))
    wanted = expected(store, rulesets, service=service)
    system = store.on_database("system")
    present = {r["name"]: r for r in store.run(cy.installed()).records()
               if str(r["name"]).startswith(cy.NAMESPACE + ".")}
    stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds")

    def write(names: Collection[str]) -> None:
        with _administration(store):
            for procedure in wanted:
                if procedure.called_as in names:
                    system.run(cy.install(procedure, database, stamp))

    write({p.called_as for p in wanted})
    with _administration(store):
        for name, row in present.items():
            if name not in {p.name for p in wanted}:
                system.run(cy.drop(str(row["kind"]), name, database))
    _wait_registered(store, {p.called_as: cy.installed_description(p, stamp) for p in wanted},
                     wait_s, write)
    at = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    store.run(cy.record(wanted, version(), at))
    return {"database": database, "installed": [p.called_as for p in wanted],
            "dropped": sorted(set(present) - {p.name for p in wanted}), "installed_at": at}


def status(store: Any, rulesets: dict[str, RuleSet] | None = None, *,
           service: bool = True) -> dict[str, Any]:
    """What is installed against what this kgdb would install: ``missing``, ``changed``
    (body or mode differ), ``extra`` (kgdb's, no longer wanted), ``same``; and the catalog."""
    present = {str(r["name"]): r for r in store.run(cy.installed()).records()
               if str(r["name"]).startswith(cy.NAMESPACE + ".")}
    recorded = store.run(cy.recorded()).records()
    out: dict[str, Any] = {"engine": "neo4j", "installed": sorted("custom." + n for n in present),
                           "recorded": recorded, "plugin": plugin_status(store)}
    if rulesets is None:  # only what is there
        rulesets_known = {str(n).removeprefix("kgdb.rules.") for n in present
                          if str(n).startswith("kgdb.rules.")}
        out["rulesets"] = sorted(rulesets_known)
        return out
    # No rule sets given: the installed ones are listed, not compared (kgdb cannot rebuild a
    # rule set's procedure without its rules), so `status` right after `install --rules` is
    # up to date.
    installed_rules = sorted(str(n).removeprefix("kgdb.rules.") for n in present
                             if str(n).startswith("kgdb.rules."))
    out["rulesets"] = sorted(rulesets) if rulesets else installed_rules
    uncompared = set() if rulesets else {f"kgdb.rules.{n}" for n in installed_rules}
    wanted = {p.name: p for p in expected(store, rulesets, service=service)}
    digests = {str(r["name"]): r["sha256"] for r in recorded}
    missing, changed, same = [], [], []
    for name, procedure in wanted.items():
        row = present.get(name)
        if row is None:
            missing.append(procedure.called_as)
        elif (str(row["body"]) != procedure.body
              or (procedure.kind == "procedure" and str(row["mode"]).lower() != procedure.mode)
              or digests.get(procedure.called_as) != procedure.digest):
            changed.append(procedure.called_as)
        else:
            same.append(procedure.called_as)
    extra = sorted("custom." + n for n in present if n not in wanted and n not in uncompared)
    out.update(missing=missing, changed=changed, same=same, extra=extra,
               up_to_date=not missing and not changed and not extra)
    return out


def plugin_status(store: Any) -> dict[str, Any]:
    """kgdb's Java plugin on the server (``neo4j-plugin/``) against this kgdb: ``version``
    (None: not loaded), ``kgdb``, ``matches``, and whether this store uses it (``native``)."""
    from kgdb.engine.neo4j_plugin import VERSION

    loaded = getattr(store, "plugin_version", None)
    return {"version": loaded, "kgdb": VERSION, "matches": loaded == VERSION,
            "native": store.dialect.NATIVE is not None}


def drop(store: Any) -> dict[str, Any]:
    """Remove every ``custom.kgdb.*`` procedure and function and their catalog nodes."""
    _require_apoc_extended(store)
    database = str(store.run(cy.current_database()).value(0))
    present = [r for r in store.run(cy.installed()).records()
               if str(r["name"]).startswith(cy.NAMESPACE + ".")]
    system = store.on_database("system")
    with _administration(store):
        for row in present:
            system.run(cy.drop(str(row["kind"]), str(row["name"]), database))
    store.run(cy.forget())
    # Neo4j keeps listing a dropped custom procedure until it restarts; calling it fails
    # ("Unknown function"), and apoc.custom.list() no longer has it.
    return {"database": database, "dropped": sorted("custom." + str(r["name"]) for r in present)}


# ---------------------------------------------------------------------- checks
def _require_apoc_extended(store: GraphStore) -> None:
    names = {p["name"] for p in store.plugins()}
    if "apoc-extended" not in names:
        raise ProcedureError(
            f"APOC Extended is not installed on {store.address}: kgdb's procedures are APOC "
            "custom procedures (put apoc-extended-5.26.x.jar in the plugins folder; not "
            "available on Aura)")


def _require_service(store: GraphStore) -> None:
    row = store.run(cy.service_settings()).single() or {}
    if not row.get("url") or not row.get("token"):
        raise ProcedureError(
            f"the kgdb service is not configured on {store.address}: add "
            "apoc.static.kgdb.url=http://HOST:PORT and apoc.static.kgdb.token=TOKEN to "
            "apoc.conf and restart Neo4j (or install with --no-service)")


class _administration:
    """Permission failures of install and drop as one line naming the user."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if isinstance(exc, EngineError) and any(
                word in str(exc) for word in ("Forbidden", "not allowed", "Permission denied",
                                              "AccessMode", "Unauthorized")):
            raise ProcedureError(
                f"user {getattr(self.store, 'username', '?')!r} may not install procedures on "
                f"{self.store.address}: an admin must run kgdb procedures install "
                f"({str(exc).splitlines()[0][:200]})") from exc


REINSTALL_S = 5.0
"""How long install waits before writing a procedure that is still not callable again."""


def _wait_registered(store: GraphStore, wanted: dict[str, str], wait_s: float,
                     reinstall: Callable[[list[str]], None]) -> None:
    """Wait until the database has registered this install of every procedure (its
    description carries the install's stamp).

    APOC can miss a write for good: its refresh job notes the time, then reads the system
    database, and the next refresh runs only if an install's ``lastUpdated`` is later than
    that time; an install that set ``lastUpdated`` before the refresh noted its time but
    committed after the refresh read is never registered (seen once in CI: one procedure
    not callable after 90 s with ``apoc.custom.procedures.refresh=250``). So a
    procedure still not callable after :data:`REINSTALL_S` is written again, which sets a
    later ``lastUpdated``.
    """
    started = time.monotonic()
    deadline, rewrite_at = started + wait_s, started + REINSTALL_S
    while True:
        found = {str(r["name"]): str(r["description"]) for statement in cy.callable_names()
                 for r in store.run(statement).records()}
        waiting = sorted(n for n, d in wanted.items() if found.get(n) != d)
        if not waiting:
            return
        now = time.monotonic()
        if now > deadline:
            raise ProcedureError(
                f"installed, but {len(waiting)} procedure(s) are not callable after "
                f"{wait_s:.0f} s (e.g. {waiting[0]}): APOC refreshes them every "
                "apoc.custom.procedures.refresh ms (set it lower in apoc.conf)")
        if now > rewrite_at:
            reinstall(waiting)
            rewrite_at = now + REINSTALL_S
        time.sleep(0.25)
