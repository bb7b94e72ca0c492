"""Build a corpus's graph the way ``kgdb eval retrieval`` needs it, each step timed, and write
the times (also per 1,000 passages) as a results file.

The steps, each a ``kgdb`` command run as a subprocess (wall clock, Python start-up included)::

    kgdb [GLOBAL...] load documents CORPUS --extract gazetteer --title-entity --mention-facts
    kgdb [GLOBAL...] index fulltext     # the lexical index (keyword, hybrid's and ppr's lexical part)
    kgdb [GLOBAL...] index ppr          # the retrieval graph of ppr
    kgdb [GLOBAL...] index              # every other index a solver needs, if missing
    kgdb [GLOBAL...] stats

    python benchmarks/corpus_build.py --corpus data/2wiki-1000/corpus.json --name 2wiki-1000 \\
        --graph wiki1000 [--global=--engine --global=neo4j] [--results benchmarks/results]

Writes ``<results>/<date>-build-<name>.json`` (``kgdb.results``): per step its command, seconds,
seconds per 1,000 passages and its ``--json`` report. Set KGDB_HOME as for any kgdb command.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kgdb.results import load_average, result_document, write_result

LOAD_OPTIONS = ["--extract", "gazetteer", "--title-entity", "--mention-facts"]


def steps(corpus: Path) -> list[tuple[str, list[str]]]:
    return [("load", ["load", "documents", str(corpus), *LOAD_OPTIONS]),
            ("index_fulltext", ["index", "fulltext"]),
            ("index_ppr", ["index", "ppr"]),
            ("index_rest", ["index"]),
            ("stats", ["stats"])]


def _report(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text.strip()[-2000:] or None


def step_record(name: str, command: list[str], seconds: float, output: str, passages: int,
                returncode: int) -> dict[str, Any]:
    return {"step": name, "command": command, "returncode": returncode,
            "seconds": round(seconds, 2),
            "seconds_per_1000_passages": round(seconds * 1000 / passages, 2),
            "report": _report(output)}


def build_document(name: str, corpus: Path, passages: int, records: list[dict[str, Any]],
                   engine: str | None, command: list[str], started: list[float] | None,
                   note: str | None = None) -> dict[str, Any]:
    report = {"corpus": str(corpus), "passages": passages,
              "steps": records,
              "total_seconds": round(sum(r["seconds"] for r in records), 2),
              "seconds_per_1000_passages": {r["step"]: r["seconds_per_1000_passages"]
                                            for r in records}}
    if note:
        report["note"] = note
    return result_document(f"build-{name}", report, engine=engine, command=command,
                           load_at_start=started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--name", required=True, help="results name part: build-NAME")
    parser.add_argument("--graph", required=True)
    parser.add_argument("--global", dest="global_options", action="append", default=[],
                        help="a kgdb global option word (repeat: --global=--engine --global=neo4j)")
    parser.add_argument("--engine", default="embedded FalkorDB", help="recorded as the engine")
    parser.add_argument("--results", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)

    passages = len(json.loads(args.corpus.read_text(encoding="utf-8")))
    started = load_average()
    records = []
    for name, words in steps(args.corpus):
        command = [sys.executable, "-m", "kgdb", "--graph", args.graph,
                   *args.global_options, *words, "--json"]
        print(f"{time.strftime('%H:%M:%S')} {name}: {' '.join(command[2:])}", file=sys.stderr)
        start = time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False,
                              env=os.environ.copy())
        seconds = time.perf_counter() - start
        records.append(step_record(name, ["kgdb", *command[3:]], seconds, done.stdout,
                                   passages, done.returncode))
        print(f"  {seconds:.1f} s, exit {done.returncode}", file=sys.stderr)
        if done.returncode != 0:
            break
    document = build_document(args.name, args.corpus, passages, records, args.engine,
                              ["python", "benchmarks/corpus_build.py", *(argv or sys.argv[1:])],
                              started)
    path = write_result(args.results, document)
    print(f"results written to {path}", file=sys.stderr)
    return 0 if all(r["returncode"] == 0 for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
