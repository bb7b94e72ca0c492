"""How fast ``kgdb load documents`` reads each format (the readers alone: no graph, no
embedding), as JSON: per format the files, pages, characters and seconds, pages/s and
characters/s, pages also per CPU second of the process (a PDF's pages are its pages; an HTML
file is one page; DOCX and ODT have no pages, so only characters/s).

Usage::

    python -m benchmarks.readers                       # Debian's manuals + generated files
    python -m benchmarks.readers FILE_OR_DIR... --out benchmarks/results/<date>-readers.json

Without arguments it reads the PDF and HTML manuals Debian installs under /usr/share/doc
(those that exist) and a DOCX, an ODT and a two-column PDF written with python-docx, odfpy
and reportlab (the test extra) into a temporary directory. Timings on shared cores are
noisy: the output carries the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from kgdb.documents.formats import RICH_SUFFIXES, read_rich_document
from kgdb.documents.readers import walk
from kgdb.errors import LoadError

DEBIAN = [
    "/usr/share/doc/libtasn1-doc/libtasn1.pdf",
    "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
    "/usr/share/doc/shared-mime-info/shared-mime-info-spec.html",
    "/usr/share/doc/libffi8/html",
    "/usr/share/doc/valgrind/html",
]


def _generated(folder: Path) -> list[Path]:
    from tests.support import documents as made

    out = [made.two_column_pdf(folder / "two-column.pdf"), made.html_file(folder / "page.html")]
    for i in range(20):  # many small office files: their fixed cost per file shows
        out.append(made.docx_file(folder / f"orchard-{i}.docx"))
        out.append(made.odt_file(folder / f"bees-{i}.odt"))
    return out


def _files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(p for p in walk(path) if p.suffix.lower() in RICH_SUFFIXES)
        elif path.exists():
            out.append(path)
    return out


def measure(paths: list[Path]) -> dict[str, Any]:
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    errors: list[str] = []
    for path in _files(paths):
        start, cpu = time.perf_counter(), time.process_time()
        try:
            doc = read_rich_document(path, path.name)
        except LoadError as exc:
            errors.append(str(exc))
            continue
        seconds = time.perf_counter() - start
        cpu = time.process_time() - cpu
        kind = str(doc.meta["format"])
        t = totals[kind]
        t["files"] += 1
        t["seconds"] += seconds
        t["cpu_seconds"] += cpu
        t["chars"] += sum(len(s.text) for s in doc.sections)
        t["bytes"] += path.stat().st_size
        if kind == "pdf":
            t["pages"] += int(doc.meta["pages"])
        elif kind == "html":
            t["pages"] += 1
    formats: dict[str, Any] = {}
    for kind, t in sorted(totals.items()):
        row: dict[str, Any] = {"files": int(t["files"]), "bytes": int(t["bytes"]),
                               "chars": int(t["chars"]), "seconds": round(t["seconds"], 3),
                               "cpu_seconds": round(t["cpu_seconds"], 3)}
        if t["pages"]:
            row["pages"] = int(t["pages"])
            row["pages_per_s"] = round(t["pages"] / t["seconds"], 2)
            # per second of this process's CPU: less bent by other processes on shared cores
            row["pages_per_cpu_s"] = round(t["pages"] / t["cpu_seconds"], 2)
        row["chars_per_s"] = round(t["chars"] / t["seconds"])
        row["files_per_s"] = round(t["files"] / t["seconds"], 2)
        formats[kind] = row
    return {"formats": formats, "errors": errors}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, help="also write the JSON to this file")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="kgdb-readers-") as tmp:
        paths = list(args.paths) or [Path(p) for p in DEBIAN] + _generated(Path(tmp))
        result = measure(paths)
    result["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                         "load_average_before": [round(x, 2) for x in load_before],
                         "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
