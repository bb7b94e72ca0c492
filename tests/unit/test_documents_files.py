"""The documents loader at its edges (issue 24): the size limits as documented (a file may be
large, a line may not), directory trees of any depth (no recursion), unreadable directories
reported instead of skipped."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kgdb.documents.readers import read_documents
from kgdb.errors import LoadError

ROOT = Path(__file__).resolve().parents[2]


def test_a_large_file_of_short_lines_loads(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    line = "Kismet was directed by William Dieterle in 1944, says this line.\n"
    path.write_text(line * (2_100_000 // len(line)), encoding="utf-8")
    assert path.stat().st_size > 2_000_000  # above KGDB_MAX_VALUE_BYTES (1 MiB)
    [doc] = read_documents([path])
    assert sum(len(s.text) for s in doc.sections) > 2_000_000 - 50_000


def test_a_long_line_is_refused_with_its_number(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGDB_MAX_LINE_BYTES", "1000")
    path = tmp_path / "long.txt"
    path.write_text("short\n" * 3 + "x" * 1001 + "\n", encoding="utf-8")
    with pytest.raises(LoadError, match=rf"^{path}:4: the line is 1001 bytes long.*"
                                        "KGDB_MAX_LINE_BYTES"):
        read_documents([path])
    bad = tmp_path / "bad.txt"
    bad.write_text("fine\nnot \x01 fine\n", encoding="utf-8")
    with pytest.raises(LoadError, match=rf"^{bad}:2: the text contains the control character"):
        read_documents([bad])


def test_a_deep_directory_tree_is_walked() -> None:
    deep = Path(tempfile.mkdtemp(prefix="kgdb-deep-"))
    levels = [deep]
    try:
        for _ in range(1100):  # deeper than Python's recursion limit
            levels.append(levels[-1] / "d")
            levels[-1].mkdir()
        (levels[-1] / "bottom.txt").write_text("At the bottom.\n", encoding="utf-8")
        (deep / "top.md").write_text("# Top\n\nAt the top.\n", encoding="utf-8")
        docs = read_documents([deep])
        assert sorted(d.id for d in docs) == ["bottom", "top"]
    finally:  # bottom up, without recursion (shutil.rmtree recurses)
        (levels[-1] / "bottom.txt").unlink(missing_ok=True)
        (deep / "top.md").unlink(missing_ok=True)
        for level in reversed(levels):
            level.rmdir()


def test_an_unreadable_directory_is_reported(tmp_path: Path) -> None:
    base = Path(tempfile.mkdtemp(prefix="kgdb-unreadable-"))
    try:
        os.chmod(base, 0o755)
        (base / "ok.txt").write_text("Readable.\n", encoding="utf-8")
        (base / "locked").mkdir()
        (base / "locked" / "hidden.txt").write_text("Not readable.\n", encoding="utf-8")
        os.chmod(base / "locked", 0o000)
        code = ("import sys\nfrom kgdb.documents.readers import read_documents\n"
                "from kgdb.errors import LoadError\n"
                "try:\n    read_documents([sys.argv[1]])\nexcept LoadError as e:\n"
                "    print(e)\n    sys.exit(3)\n")
        # root reads every directory: the check then runs without root's capabilities
        drop: list[str] = []
        if os.getuid() == 0:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("running as root without setpriv: no directory is unreadable")
            drop = [setpriv, "--bounding-set=-all", "--inh-caps=-all"]
        done = subprocess.run([*drop, sys.executable, "-c", code, str(base)],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 3, done.stderr[-2000:]
        assert done.stdout.startswith(f"{base / 'locked'}: cannot read this directory")
    finally:
        os.chmod(base / "locked", 0o755)
        shutil.rmtree(base)
