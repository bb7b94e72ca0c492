"""``kgdb index ppr`` on one document of N look-alike names (issue 35): how many synonym edges
it makes and how long each phase takes, as JSON, on the embedded FalkorDB (or the engine
``KGDB_URI`` names). Before the synonym bound, 1,000 names made 496,496 synonym edges and
3,000 names took 842 s; the bound (kgdb/documents/ppr_graph.py: SYNONYM_NEIGHBOURS) keeps the
edges linear in N.

Usage::

    python -m benchmarks.ppr_lookalikes --names 1000 --names 3000 \\
        --out benchmarks/results/$(date +%F)-ppr-lookalikes.json

Embeddings are cached (``$KGDB_HOME``'s cache), so a second run measures the graph alone.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any


def lookalikes(n: int) -> list[str]:
    syllables = ["ba", "ke", "lo", "mi", "nu", "ra", "te", "vo", "si", "da", "go", "pe"]
    parts = ["".join(p).capitalize() for p in itertools.product(syllables, repeat=4)]
    random.Random(35).shuffle(parts)
    return [f"Archduke Maximilian Vornhelm von Kesselburg {p}" for p in parts[:n]]


def run(n: int) -> dict[str, Any]:
    from kgdb.config import Settings
    from kgdb.cypher import pagerank as cy
    from kgdb.documents.pipeline import DocumentOptions, load_documents
    from kgdb.documents.ppr_graph import build_graph
    from kgdb.embed import default_embedder
    from kgdb.engine import connect

    store = connect(Settings.from_env(graph=f"bench_lookalikes_{uuid.uuid4().hex[:8]}"))
    embedder = default_embedder()
    try:
        store.reset()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "court.json"
            path.write_text(json.dumps([{"id": "court", "title": "The Kesselburg Court",
                                         "text": " ".join(f"{x} attended the court."
                                                          for x in lookalikes(n))}]),
                            encoding="utf-8")
            t0 = time.perf_counter()
            load_documents(store, embedder, [path], options=DocumentOptions(), progress=False)
            loaded = time.perf_counter() - t0
        report = build_graph(store, embedder)
        synonyms = int(store.run(f"MATCH (:{cy.PHRASE})-[r:{cy.SYNONYM}]->(:{cy.PHRASE}) "
                                 "RETURN count(r) AS n").value(0))
        return {"names": n, "phrases": report.phrases_created, "synonym_edges": synonyms,
                "projection_edges": report.projection_edges, "load_s": round(loaded, 3),
                "index_s": report.seconds, "engine": store.dialect.NAME}
    finally:
        store.drop()
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--names", type=int, action="append", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = [run(n) for n in (args.names or [1000])]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=False).stdout.strip()
    result = {"what": "kgdb index ppr on one document of look-alike names", "commit": commit,
              "load_average": os.getloadavg(), "cpus": os.cpu_count(), "runs": rows}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
