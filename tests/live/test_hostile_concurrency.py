"""8 concurrent clients on one graph (the `store` fixture, so every engine): first-time loads
and schema applies racing on index creation on an empty graph (finding 9), plus readers."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from kgdb.load.triples import load_triples
from kgdb.schema import Schema, apply_schema

pytestmark = pytest.mark.live

LINES = [f"movie {i}|directed_by|director {i % 7}" for i in range(60)]


def test_eight_clients_race_on_an_empty_graph(store, embedder, tmp_path: Path) -> None:
    path = tmp_path / "kb.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    errors: list[BaseException] = []
    reads: list[int] = []
    start = threading.Barrier(8)

    def loader() -> None:
        try:
            start.wait()
            load_triples(store, embedder, path, progress=False, batch_size=20)
        except BaseException as exc:
            errors.append(exc)

    def schema() -> None:
        try:
            start.wait()
            apply_schema(store, Schema(source="<built-in>"), embedder)
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        try:
            start.wait()
            for _ in range(30):
                reads.append(store.run("MATCH (n:Entity) RETURN count(n)").value())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=f) for f in
               [loader, loader, loader, schema, schema, reader, reader, reader]]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert len(reads) == 90 and all(0 <= n <= 67 for n in reads)
    assert store.run("MATCH (n:Entity) RETURN count(n)").value() == 67
    assert store.run("MATCH (n:Entity) RETURN count(DISTINCT n.id)").value() == 67
    assert store.run("MATCH (:Entity)-[r]->(:Entity) RETURN count(r)").value() == 60
    kinds = [(i.kind, i.entity, i.label, i.properties) for i in store.indexes()]
    assert len(kinds) == len(set(kinds))  # each index created once
