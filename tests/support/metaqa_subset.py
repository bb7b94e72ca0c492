"""A MetaQA subgraph in the loader's shape, for logical-form tests until ``metaqa_store``
lands: ``(:Entity {id, name})`` nodes (id == name) and relationships typed by predicate,
subject -> object, exactly as in kb.txt. Every triple of every movie in the chosen set is
loaded, so chains that start from the seeds return what the full graph returns."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SEED_MOVIES = ("Kismet", "Forrest Gump")
SEED_PEOPLE = ("William Dieterle", "Robert Zemeckis", "Tom Hanks")


def read_kb(path: Path) -> list[tuple[str, str, str]]:
    triples = []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("|")
        if len(parts) == 3:
            triples.append((parts[0], parts[1], parts[2]))
    return triples


def subset(triples: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    movies = set(SEED_MOVIES)
    movies |= {s for s, p, o in triples
               if p in ("directed_by", "starred_actors") and o in SEED_PEOPLE}
    return [t for t in triples if t[0] in movies]


def load(store: Any, triples: list[tuple[str, str, str]]) -> None:
    d = store.dialect
    names = sorted({s for s, _, _ in triples} | {o for _, _, o in triples})
    for op in d.create_range_index("Entity", "id"):
        store.execute(op)
    store.run("UNWIND $names AS n CREATE (:Entity {id: n, name: n})", {"names": names},
              write=True)
    by_type: dict[str, list[dict[str, str]]] = defaultdict(list)
    for s, p, o in triples:
        by_type[p].append({"s": s, "o": o})
    for p, rows in by_type.items():
        store.run(f"UNWIND $rows AS row MATCH (a:Entity {{id: row.s}}), (b:Entity {{id: row.o}}) "
                  f"CREATE (a)-[:{d.ident(p)}]->(b)", {"rows": rows}, write=True)


@pytest.fixture(scope="session")
def metaqa_graph(request: pytest.FixtureRequest, embedded_home: Path) -> Iterator[Any]:
    """MetaQA on the embedded FalkorDB, read-only: the full graph (the ``metaqa_store``
    session fixture) when the test suite has it, else this module's subgraph."""
    try:
        yield request.getfixturevalue("metaqa_store")
        return
    except pytest.FixtureLookupError:
        pass
    from kgdb.config import Settings
    from kgdb.engine import connect
    from tests.conftest import shared_data

    triples = subset(read_kb(shared_data("metaqa", "kb.txt")))
    store = connect(Settings.from_env(graph=f"lf_metaqa_{uuid.uuid4().hex[:8]}"))
    load(store, triples)
    try:
        yield store
    finally:
        store.reset()
        store.close()
