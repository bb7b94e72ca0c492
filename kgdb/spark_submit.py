"""The file spark-submit runs for ``kgdb spark load-documents``::

    spark-submit [SPARK OPTIONS] "$(python -m kgdb.spark_submit --path)" PATH... [OPTIONS]

(docs/spark.md). spark-submit puts this file's folder first on ``sys.path``; it is taken off
before anything is imported, so kgdb's modules never shadow top-level ones."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--path"]:  # where this file is, for spark-submit's command line
        print(Path(__file__).resolve())
        return
    sys.path[:] = [p for p in sys.path if (Path(p or ".").resolve()) != _HERE]
    from kgdb.cli import main as kgdb_main

    kgdb_main(["spark", "load-documents", *args])


if __name__ == "__main__":
    main()
