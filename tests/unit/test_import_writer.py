"""The files ``kgdb neo4j import`` writes: Arrow's writer (threads, vectorised float text) and
the csv module's give the same rows, every float32 reads back as itself, and ``kgdb bench
scale --bulk`` writes its generated graph as importing its triples file would. The import
itself: tests/live/test_neo4j_import.py."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np
import pytest

from kgdb.dialects.base import VectorIndexOptions
from kgdb.dialects.falkordb import FalkorDBDialect
from kgdb.dialects.neo4j import Neo4jDialect
from kgdb.embed import default_embedder
from kgdb.errors import UnsupportedFeatureError
from kgdb.load.neo4j_import import (
    ENTITY_HEADER,
    FACT_HEADER,
    QUANTIZED,
    has_pyarrow,
    vector_index_for,
    vector_text,
    write_import_files,
)
from kgdb.scale import ComposedEmbedder, exact_nearest_ids, generate, recall_at
from kgdb.scale import write_import_files as write_graph_files

pytestmark = pytest.mark.skipif(not has_pyarrow(), reason="pyarrow is not installed")

HOSTILE = ['say "hi"|rel|x', "a,b;c|rel|x", "back\\slash|rel|Zoë Ünïcode", "x|rel|a,b;c",
           "a,b;c|rel|x", "tab\tin|rel|semi;colon", "plain|ns:weird type|x"]


def _rows(path: Path) -> list[list[str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:  # type: ignore[operator]
        return list(csv.reader(f))


def _parsed(folder: Path, suffix: str = ".csv") -> tuple[list, list]:
    entities = _rows(folder / f"entities{suffix}")
    facts = _rows(folder / f"facts{suffix}")
    assert tuple(entities[0]) == ENTITY_HEADER and tuple(facts[0]) == FACT_HEADER
    parsed = [(i, n, np.array(e.split(";"), dtype=np.float32).view(np.uint32).tolist())
              for i, n, e in entities[1:]]
    return parsed, facts[1:]


@pytest.mark.parametrize("compress", [False, True])
def test_arrow_and_csv_writers_write_the_same_rows(tmp_path: Path, compress: bool) -> None:
    triples = tmp_path / "kb.txt"
    triples.write_text("\n".join(HOSTILE * 3) + "\n", encoding="utf-8")
    embedder = default_embedder()
    out = {}
    for fast in (True, False):
        folder = tmp_path / str(fast)
        folder.mkdir()
        files = write_import_files(triples, embedder, Neo4jDialect(), folder, sep="|",
                                   progress=False, compress=compress, fast=fast, batch_size=3)
        out[fast] = (_parsed(folder, ".csv.gz" if compress else ".csv"), files.relationships,
                     files.report.entities_seen)
    assert out[True] == out[False]
    (entities, facts), relationships, seen = out[True]
    assert seen == len(entities) == 8 and relationships == len(facts) == 6
    assert {'say "hi"', "a,b;c", "Zoë Ünïcode"} <= {name for _, name, _ in entities}
    expected = np.asarray(embedder.embed([e[1] for e in entities]), dtype=np.float32)
    assert [e[2] for e in entities] == expected.view(np.uint32).tolist()  # bit for bit
    assert ["plain", "x", "ns:weird type"] in facts


def test_vector_text_is_the_shortest_exact_decimal() -> None:
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**32, size=(300, 16), dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    values[~np.isfinite(values)] = 0.25
    values[0, :6] = [0.0, -0.0, 1e-45, np.finfo(np.float32).max, 1.0, -0.1]
    text = vector_text(values).to_pylist()
    back = np.array([row.split(";") for row in text], dtype=np.float32)
    assert np.array_equal(back.view(np.uint32), values.view(np.uint32))
    assert text[0].split(";")[:6] == ["0", "-0", "1e-45", "3.4028235e+38", "1", "-0.1"]
    assert len(text[1]) <= len(";".join(["%.9g"] * 16) % tuple(values[1].tolist()))


def test_generated_graph_files_equal_its_triples_files(tmp_path: Path) -> None:
    graph = generate(300, 900, seed=3)
    embedder = ComposedEmbedder(default_embedder(), sorted({w for n in graph.names
                                                            for w in n.split()[:-1]}))
    tsv = tmp_path / "facts.tsv"
    graph.write_tsv(tsv)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    direct = write_graph_files(graph, embedder, tmp_path / "a", batch=70, progress=False)
    parsed = write_import_files(tsv, embedder, Neo4jDialect(), tmp_path / "b", sep="|",
                                progress=False)
    a, b = _parsed(tmp_path / "a"), _parsed(tmp_path / "b")
    assert sorted(a[0]) == sorted(b[0]) and sorted(map(tuple, a[1])) == sorted(map(tuple, b[1]))
    assert direct.relationships == parsed.relationships == graph.facts
    assert direct.report.entities_seen == parsed.report.entities_seen == len(a[0])
    assert direct.report.predicates == parsed.report.predicates
    (tmp_path / "c").mkdir()
    gz = write_graph_files(graph, embedder, tmp_path / "c", progress=False, compress=True)
    assert gz.entities.name == "entities.csv.gz" and _parsed(tmp_path / "c", ".csv.gz") == a


def test_brute_force_nearest_and_recall() -> None:
    graph = generate(400, 1200, seed=4)
    embedder = ComposedEmbedder(default_embedder(), sorted({w for n in graph.names
                                                            for w in n.split()[:-1]}))
    used = np.unique(np.concatenate([graph.heads, graph.tails]))
    vectors = np.asarray(embedder.embed([graph.names[i] for i in used]), dtype=np.float64)
    queries = np.asarray(embedder.embed([graph.names[used[0]], "a text of the model"]))
    found = exact_nearest_ids(graph, embedder, queries, 10, chunk=37)
    for q, names in zip(queries, found, strict=True):
        d = np.linalg.norm(vectors - q.astype(np.float64), axis=1)
        assert names[:10] == [graph.names[used[i]] for i in np.argsort(d, kind="stable")[:10]]
    assert found[0][0] == graph.names[used[0]]
    assert recall_at(found[0], found[0], 10) == 1.0
    assert recall_at(found[0][:5] + ["x"] * 5, found[0], 10) == 0.5


def test_vector_index_choice() -> None:
    assert vector_index_for(10) == vector_index_for(10, "exact") != QUANTIZED
    assert vector_index_for(5_000_000) == vector_index_for(1, "quantized") == QUANTIZED
    statement = Neo4jDialect().create_vector_index("Entity", "embedding", 384,
                                                   options=QUANTIZED)[0]
    assert ("`vector.quantization.enabled`: true, `vector.hnsw.m`: 16, "
            "`vector.hnsw.ef_construction`: 200}}") in statement.text
    plain = Neo4jDialect().create_vector_index("Entity", "embedding", 384)[0]
    assert "`vector.quantization.enabled`: false}}" in plain.text and "hnsw" not in plain.text
    falkordb = FalkorDBDialect()
    assert falkordb.create_vector_index("Entity", "embedding", 384,
                                        options=VectorIndexOptions())
    with pytest.raises(UnsupportedFeatureError, match="vector index options"):
        falkordb.create_vector_index("Entity", "embedding", 384, options=QUANTIZED)
