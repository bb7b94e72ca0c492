"""The main job on the embedded engine: load a sample, link a question to the graph, show facts."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from kgdb.config import Settings
from kgdb.errors import ConfigError

DEFAULT_SCHEMA = Path("loaders/schemas/metaqa.schema")
DEFAULT_TRIPLES = Path("loaders/samples/movies.txt")
QUESTION_ENTITY = "Kismet"


def run_demo(settings: Settings, echo: Callable[[str], None] = print,
             schema_file: Path = DEFAULT_SCHEMA, triples_file: Path = DEFAULT_TRIPLES) -> None:
    from kgdb.cypher.explore import entity_facts
    from kgdb.embed import default_embedder
    from kgdb.engine import connect
    from kgdb.link import link_entities, link_relations
    from kgdb.load.triples import load_triples
    from kgdb.schema import apply_schema, parse_schema_file

    for path in (schema_file, triples_file):
        if not path.exists():
            raise ConfigError(f"{path} not found: run the demo from the repository root "
                              "(make demo)")
    if settings.embedded:
        settings = dataclasses.replace(settings, graph="demo")
    store = connect(settings)
    embedder = default_embedder()
    echo(f"engine: {store.address}")
    report = apply_schema(store, parse_schema_file(schema_file), embedder)
    echo(f"schema {schema_file}: {len(report.created)} indexes/constraints created, "
         f"{len(report.existing)} already present")
    loaded = load_triples(store, embedder, triples_file, progress=False)
    echo(f"loaded {loaded.triples} triples, {loaded.entities_seen} entities, "
         f"{len(loaded.predicates)} relation types from {triples_file} "
         f"in {loaded.seconds:.1f} s")

    question = "who directed the film kismit and who starred in it?"
    echo(f"\nquestion: {question}")
    entity = link_entities(store, embedder, ["kismit"], k=3)["kismit"]
    echo("entity candidates for 'kismit' (vector index, L2 distance): " +
         ", ".join(f"{c.name} ({c.distance:.3f})" for c in entity))
    relations = link_relations(store, embedder, ["directed by", "starred"], k=2)
    for phrase, cands in relations.items():
        echo(f"relation candidates for {phrase!r}: " +
             ", ".join(f"{c.id} ({c.distance:.3f})" for c in cands))
    wanted = {relations["directed by"][0].id, relations["starred"][0].id}
    statement = entity_facts()
    rows = store.run(statement, {"id": entity[0].id, "limit": 50}).records()
    echo(f"\nfacts about {entity[0].name} ({statement.text.splitlines()[0]} ...):")
    for row in rows:
        if row["relation"] in wanted:
            arrow = "->" if row["outgoing"] else "<-"
            echo(f"  {entity[0].name} {arrow}[{row['relation']}] {row['other']}")
    store.close()
