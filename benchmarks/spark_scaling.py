"""Documents/s of ``kgdb spark load-documents`` on ``local[1]`` and ``local[2]`` against
``kgdb load documents`` on the same corpus (the first N passages of MuSiQue-100), into the
Neo4j ``KGDB_URI`` names (emptied before each run), with ``--extract gazetteer
--title-entity``. Every run embeds from scratch (no embedding cache), so the three pay the
same model work. Each Spark run starts its own session (its start is reported apart); the
job's own seconds include its Python workers' start and model load, as a real job pays them.

Usage::

    python -m benchmarks.spark_scaling --passages 400 --out benchmarks/results

Timings on shared cores are noisy: the output carries the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kgdb import results
from kgdb.config import Settings
from kgdb.documents.pipeline import DocumentOptions, load_documents
from kgdb.embed.minilm import MiniLMEmbedder
from kgdb.engine import connect
from kgdb.spark.job import load_documents_spark, spark_session


def _musique() -> Path:
    """MuSiQue-100's corpus in the shared data (KGDB_SHARED_DATA, else ../shared/data next to
    the clone, else /work/shared/data), as the tests find it."""
    root = Path(__file__).resolve().parents[1]
    for folder in (os.environ.get("KGDB_SHARED_DATA"), root.parent / "shared" / "data",
                   "/work/shared/data"):
        if folder and (Path(folder) / "musique-100" / "corpus.json").is_file():
            return Path(folder) / "musique-100" / "corpus.json"
    raise SystemExit("spark_scaling: no musique-100/corpus.json (set KGDB_SHARED_DATA)")


def _corpus(folder: Path, passages: int) -> Path:
    records = json.loads(_musique().read_text("utf-8"))
    path = folder / "corpus.json"
    path.write_text(json.dumps(records[:passages]), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=400)
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--out", type=Path, default=None, help="a benchmarks/results folder")
    args = parser.parse_args(argv)
    at_start = results.load_average()
    store = connect(Settings.from_env())
    if store.dialect.NAME != "neo4j":
        print("spark_scaling: KGDB_URI must name a Neo4j", file=sys.stderr)
        return 1
    options = DocumentOptions(extract="gazetteer", title_entity=True)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus = _corpus(Path(tmp), args.passages)
        store.reset()
        cli = load_documents(store, MiniLMEmbedder(), [corpus], options=options, progress=False)
        runs.append({"how": "kgdb load documents", "documents": cli.documents,
                     "chunks": cli.chunks, "mentions": cli.mentions, "seconds": cli.seconds,
                     "embed_seconds": cli.embed_seconds,
                     "documents_per_s": round(cli.documents / cli.seconds, 1)})
        print(json.dumps(runs[-1]), file=sys.stderr)
        for master in args.masters.split(","):
            store.reset()
            t0 = time.perf_counter()
            spark = spark_session(master)
            started = round(time.perf_counter() - t0, 3)
            job = load_documents_spark(spark, store, MiniLMEmbedder(), [corpus], options=options)
            spark.stop()
            runs.append({"how": f"kgdb spark load-documents {master}",
                         "documents": job.documents, "chunks": job.chunks,
                         "mentions": job.mentions, "seconds": job.seconds,
                         "session_start_seconds": started, "partitions": job.partitions,
                         "prepare_seconds": job.prepare_seconds,
                         "write_seconds": job.write_seconds,
                         "documents_per_s": round(job.documents / job.seconds, 1)})
            print(json.dumps(runs[-1]), file=sys.stderr)
    store.reset()
    store.close()
    report = {"passages": args.passages, "extract": "gazetteer", "title_entity": True,
              "runs": runs}
    print(json.dumps(report, indent=2))
    if args.out is not None:
        doc = results.result_document("spark-scaling", report, engine="neo4j",
                                      command=["python", "-m", "benchmarks.spark_scaling",
                                               *(argv or sys.argv[1:])],
                                      load_at_start=at_start)
        print(f"wrote {results.write_result(args.out, doc)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
