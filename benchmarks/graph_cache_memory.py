"""Memory of one graph cache entry (a NameIndex of a graph's names), to size kgdb's graph
caches (docs/operations.md, "Caches"). Prints JSON; ``--out`` also writes it to a file.

    python -m benchmarks.graph_cache_memory --out benchmarks/results/<date>-graph-cache-memory.json

Names: MuSiQue-100's capitalised spans (the shape of ``ppr``'s phrase names) and MetaQA's
entity names (``--solver chunks``' entity names), from /work/shared/data or --data."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import time
import tracemalloc
from pathlib import Path
from typing import Any

from kgdb.link.gazetteer import NameIndex


def _measure(names: list[str]) -> float:
    tracemalloc.start()
    index = NameIndex(((n, n, []) for n in names), ignore_case=True)
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(index) >= 1
    return current / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    corpus = json.loads((args.data / "musique-100" / "corpus.json").read_text())
    text = " ".join(f"{d.get('title', '')} {d.get('text', '')}" for d in corpus)
    phrases = sorted({m.group(0).lower() for m in
                      re.finditer(r"[A-Z][\w'-]*(?: [A-Z][\w'-]*)*", text)})
    entities = sorted({part for line in (args.data / "metaqa" / "kb.txt").read_text()
                       .splitlines() if line.count("|") == 2
                       for part in (line.split("|")[0], line.split("|")[2])})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    result: dict[str, Any] = {
        "what": "graph cache entry memory (tracemalloc of a NameIndex)",
        "commit": commit, "python": platform.python_version(),
        "machine": f"{os.cpu_count()} cores", "load": os.getloadavg()[0],
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "ppr_graph": {"graph": "musique-100 capitalised spans", "names": len(phrases),
                      "mb": round(_measure(phrases), 2)},
        "entity_names": {"graph": "metaqa kb entities", "names": len(entities),
                         "mb": round(_measure(entities), 2)}}
    text_out = json.dumps(result, indent=2)
    print(text_out)
    if args.out:
        args.out.write_text(text_out + "\n")


if __name__ == "__main__":
    main()
