"""MetaQA kb.txt as plain triples, for expected answers computed independently of kgdb."""

from __future__ import annotations

from pathlib import Path


def read_kb(path: Path) -> list[tuple[str, str, str]]:
    triples = []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("|")
        if len(parts) == 3:
            triples.append((parts[0], parts[1], parts[2]))
    return triples

