"""The main job on the embedded engine, with no LLM and nothing to install: load a movie
sample, then answer a misspelt question with SimGRAG retrieval inside the database (the
pattern graph a model would write, top-k isomorphic subgraphs by Graph Semantic Distance,
the Cypher that ran)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from kgdb.config import Settings
from kgdb.errors import ConfigError


def sample_file(name: str) -> Path:
    """A file of the bundled movie sample (``movies.txt``: 442 MetaQA facts, the films directed
    by William Dieterle or starring Marlene Dietrich; ``metaqa.schema``: its schema), shipped
    in the package (linked from ``loaders/`` in the repository)."""
    return Path(str(resources.files("kgdb").joinpath("data", "samples", name)))


DEFAULT_SCHEMA = sample_file("metaqa.schema")
DEFAULT_TRIPLES = sample_file("movies.txt")
DEMO_GRAPH = "demo"
QUESTION = "Who directed the film Kismit, and who starred in it?"
PATTERN = [("kismit", "directed by", "UNKNOWN director 1"),
           ("kismit", "starred", "UNKNOWN actor 1")]
"""The pattern graph SimGRAG's prompt asks a model to write for QUESTION (misspelling kept)."""


def run_demo(settings: Settings, echo: Callable[[str], None] = print,
             schema_file: Path = DEFAULT_SCHEMA, triples_file: Path = DEFAULT_TRIPLES,
             show_cypher: bool = False) -> None:
    from kgdb.dsl.pattern import pattern_from_triples
    from kgdb.embed import default_embedder
    from kgdb.engine import connect
    from kgdb.load.triples import load_triples
    from kgdb.retrieve.pattern_search import describe, search
    from kgdb.schema import apply_schema, parse_schema_file

    for path in (schema_file, triples_file):
        if not path.exists():
            raise ConfigError(f"{path} not found: the kgdb package is incomplete "
                              "(reinstall it)")
    if settings.embedded:
        settings = dataclasses.replace(settings, graph=DEMO_GRAPH)
    embedder = default_embedder()
    with connect(settings) as store:
        where = store.address
        echo(f"database: {where}")
        report = apply_schema(store, parse_schema_file(schema_file), embedder)
        echo(f"schema {schema_file}: {len(report.created)} indexes/constraints created, "
             f"{len(report.existing)} already present")
        loaded = load_triples(store, embedder, triples_file, progress=False)
        echo(f"loaded {loaded.triples} triples, {loaded.entities_seen} entities, "
             f"{len(loaded.predicates)} relation types from {triples_file} "
             f"in {loaded.seconds:.1f} s")
        echo(f"\nquestion: {QUESTION}")
        echo("pattern graph: " + ", ".join(f"({h!r}, {r!r}, {t!r})" for h, r, t in PATTERN))
        result = search(store, embedder, pattern_from_triples(PATTERN), k=3)
        echo("top-3 subgraphs by Graph Semantic Distance (lower is closer):\n")
        for line in describe(result, cypher=show_cypher):
            echo(line)
    graph = f"--graph {settings.graph} " if settings.embedded else ""
    echo(f"\nThe sample is in the {where}. Next, try:")
    for command in (f"kgdb {graph}stats",
                    f"kgdb {graph}retrieve 'Who directed Kismet?' "
                    "--pattern 'Kismet|directed_by|UNKNOWN director 1'",
                    "kgdb examples copy kgdb-examples   (the example programs, from the package)",
                    f"kgdb {graph}lf run kgdb-examples/one_hop_director.lf",
                    "kgdb demo --cypher   (the Cypher that ran, re-runnable as printed)"):
        echo(f"  {command}")
