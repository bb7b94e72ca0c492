"""The API reference (make docs): pdoc renders kgdb's stable names from their docstrings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import kgdb


def test_stable_names_are_exported() -> None:
    assert set(kgdb.__all__) == {"SOLVERS", "Answer", "Evidence", "EvidenceRow", "KgdbError",
                                 "KnowledgeBase", "MissingFileError", "NotReadyError",
                                 "PatternSpec", "__version__", "connect", "example",
                                 "parse_options"}
    for name in kgdb.__all__:
        assert getattr(kgdb, name) is not None


def test_pdoc_builds_the_reference(tmp_path: Path) -> None:
    pytest.importorskip("pdoc")
    subprocess.run([sys.executable, "-m", "pdoc", "--docformat", "restructuredtext",
                    "-o", str(tmp_path), "kgdb"], check=True, capture_output=True, timeout=300)
    page = (tmp_path / "kgdb.html").read_text()
    for method in ("connect", "KnowledgeBase.retrieve", "KnowledgeBase.logical_form",
                   "KnowledgeBase.apply_rules", "KnowledgeBase.close", "KnowledgeBase.load",
                   "KnowledgeBase.load_documents", "KnowledgeBase.index"):
        assert f'id="{method}"' in page, method
    assert "lower is closer" in page  # the docstrings are rendered, not just the names
