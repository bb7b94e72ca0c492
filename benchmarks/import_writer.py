"""Rows/s of the bulk import's file writer: the csv module path, Arrow's (both reading the
triples file as ``kgdb neo4j import`` does) and ``kgdb bench scale --bulk``'s direct writer of
the generated graph (plain and gzipped), on the synthetic graph of ``kgdb bench scale``; the
best of ``--rounds``.

    python -m benchmarks.import_writer --entities 100000 --results benchmarks/results
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kgdb.dialects.neo4j import Neo4jDialect
from kgdb.embed import default_embedder
from kgdb.load.neo4j_import import write_import_files
from kgdb.results import load_average, result_document, write_result
from kgdb.scale import ComposedEmbedder, generate, vocabulary
from kgdb.scale import write_import_files as write_graph_files


def measure(entities: int, rounds: int) -> dict[str, Any]:
    graph = generate(entities, 5 * entities)
    embedder = ComposedEmbedder(default_embedder(), vocabulary())
    out: dict[str, Any] = {"entities_requested": entities, "facts": graph.facts, "rounds": rounds}
    with tempfile.TemporaryDirectory(prefix="kgdb-writer-") as tmp:
        tsv = Path(tmp) / "facts.tsv"
        graph.write_tsv(tsv)
        for name in ("csv_module", "arrow", "direct", "direct_gzip"):
            best = float("inf")
            for r in range(rounds):
                folder = Path(tmp) / f"{name}-{r}"
                folder.mkdir()
                started = time.perf_counter()
                if name.startswith("direct"):
                    files = write_graph_files(graph, embedder, folder, progress=False,
                                              compress=name.endswith("gzip"))
                else:
                    files = write_import_files(tsv, embedder, Neo4jDialect(), folder, sep="|",
                                               progress=False, fast=name == "arrow")
                seconds = time.perf_counter() - started
                size = files.bytes
                for f in folder.iterdir():
                    f.unlink()
                best = min(best, seconds)
            rows = files.report.entities_seen + files.relationships
            out[name] = {"seconds": round(best, 2), "entities": files.report.entities_seen,
                         "relationships": files.relationships, "bytes": size,
                         "entities_per_s": round(files.report.entities_seen / best, 1),
                         "rows_per_s": round(rows / best, 1),
                         "triple_lines_per_s": round(graph.facts / best, 1),
                         "load_average": load_average()}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--results", type=Path, default=None)
    args = parser.parse_args(argv)
    load = load_average()
    report = measure(args.entities, args.rounds)
    print(report)
    if args.results:
        doc = result_document("import-writer", report, engine=None,
                              command=["python", "-m", "benchmarks.import_writer",
                                       *(argv if argv is not None else sys.argv[1:])],
                              load_at_start=load)
        print(write_result(args.results, doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
