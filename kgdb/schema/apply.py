"""Put a schema into the graph: indexes and constraints, the type catalog, concept trees.

Applying the same schema twice changes nothing: indexes are diffed against what the engine
reports, catalog nodes are MERGEd. The embedding model and dimension are recorded on a
``(:KgdbMeta {key: 'embedding'})`` node; a model of another dimension is refused.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from kgdb.cypher import catalog
from kgdb.dialects.base import Dialect, IndexInfo, VectorIndexOptions
from kgdb.embed.base import Embedder
from kgdb.engine.base import GraphStore, describe_indexes, wait_for_index_builds
from kgdb.errors import EmbeddingDimensionError, QueryTimeoutError, SchemaError, StatementError
from kgdb.schema.model import Schema, TypeDef
from kgdb.statement import Operation, Statement
from kgdb.vocabulary import CHUNK, CONCEPT, DOCUMENT, ENTITY, ENTITY_TYPE, EVENT, RELATION_TYPE

EMBEDDING_KEY = "embedding"

UNIQUE_KEYS = [(ENTITY, "id"), (EVENT, "id"), (CONCEPT, "id"), (CHUNK, "id"),
               (DOCUMENT, "id"), (ENTITY_TYPE, "name"), (RELATION_TYPE, "name"),
               ("KgdbMeta", "key")]
"""The identity of every kind of node kgdb writes."""

FULLTEXT = [(ENTITY, ("name", "description", "summary")), (EVENT, ("name", "description")),
            (CONCEPT, ("name", "description")), (CHUNK, ("text",))]

VECTOR_LABELS = [ENTITY, EVENT, CONCEPT, CHUNK, RELATION_TYPE, ENTITY_TYPE]
"""Labels whose ``embedding`` property has a vector index (L2)."""


@dataclass(frozen=True)
class IndexSpec:
    kind: str
    label: str
    properties: tuple[str, ...]
    dimension: int | None = None

    @property
    def key(self) -> tuple[str, str, str, tuple[str, ...]]:
        return (self.kind, "node", self.label, self.properties)

    def describe(self) -> str:
        extra = f", {self.dimension} dims" if self.dimension else ""
        noun = "constraint" if self.kind in ("unique", "exists") else "index"
        return f"{self.kind} {noun} on :{self.label}({', '.join(self.properties)}{extra})"


@dataclass
class SchemaReport:
    created: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    entity_types: int = 0
    relation_types: int = 0
    concepts: int = 0
    notes: list[str] = field(default_factory=list)
    """What the engine cannot do and was left out, each with the reason."""

    def to_json(self) -> dict[str, object]:
        return {"created": self.created, "existing": self.existing, "notes": self.notes,
                "entity_types": self.entity_types, "relation_types": self.relation_types,
                "concepts": self.concepts}


def desired_indexes(schema: Schema, dimension: int, *, unique_needs_range: bool) -> list[IndexSpec]:
    specs: list[IndexSpec] = []
    for label, prop in UNIQUE_KEYS:
        if unique_needs_range:
            specs.append(IndexSpec("range", label, (prop,)))
        specs.append(IndexSpec("unique", label, (prop,)))
    specs += [IndexSpec("range", label, ("name",)) for label in (ENTITY, CONCEPT)]
    specs.append(IndexSpec("range", CHUNK, ("document",)))  # a document's chunks
    specs += [IndexSpec("fulltext", label, props) for label, props in FULLTEXT]
    specs += [IndexSpec("vector", label, ("embedding",), dimension) for label in VECTOR_LABELS]
    for t in schema.types:
        ranged = [p.name for p in t.properties if p.index == "Range"]
        specs += [IndexSpec("range", t.name, (p,)) for p in ranged]
        texts = tuple(p.name for p in t.properties if p.index == "Text")
        if texts:
            specs.append(IndexSpec("fulltext", t.name, texts))
        for p in t.properties:
            if "Unique" in p.constraints:
                if unique_needs_range and p.index != "Range":
                    specs.append(IndexSpec("range", t.name, (p.name,)))
                specs.append(IndexSpec("unique", t.name, (p.name,)))
            if "NotNull" in p.constraints:
                specs.append(IndexSpec("exists", t.name, (p.name,)))
    return specs


def index_operations(dialect: Dialect, spec: IndexSpec,
                     vector_options: VectorIndexOptions | None = None) -> list[Operation]:
    """The statements (and engine commands) that create one index or constraint
    (``vector_options``: how a vector index is built, the engine's default if None)."""
    if spec.kind == "unique":
        return dialect.create_unique_constraint(spec.label, spec.properties[0])
    if spec.kind == "exists":
        return dialect.create_existence_constraint(spec.label, spec.properties[0])
    if spec.kind == "range":
        return dialect.create_range_index(spec.label, spec.properties[0])
    if spec.kind == "fulltext":
        return dialect.create_fulltext_index(spec.label, spec.properties)
    assert spec.dimension is not None
    return dialect.create_vector_index(spec.label, spec.properties[0], spec.dimension,
                                       options=vector_options)


_ALREADY = ("already indexed", "already exists", "equivalent index already", "equivalent constraint")
"""How the engines say that an index or constraint is there already (FalkorDB 4.16.3:
"Attribute 'id' is already indexed"; Neo4j: "An equivalent index already exists")."""


def execute_ddl(store: GraphStore, operation: Operation) -> None:
    """Create one index or constraint; one that another process created a moment ago (two
    first-time loads or schema applies on an empty graph race here) counts as created."""
    try:
        store.execute(operation)
    except StatementError as exc:
        if not any(marker in str(exc).lower() for marker in _ALREADY):
            raise


def check_embedding(store: GraphStore, embedder: Embedder,
                    indexes: list[IndexInfo] | None = None) -> bool:
    """Refuse an embedder that does not fit the graph; True when the graph has a setting."""
    indexes = store.indexes() if indexes is None else indexes
    fix = ("use the model the graph was built with (KGDB_EMBED_MODEL), or start a new graph "
           "(kgdb db reset --yes, or another KGDB_GRAPH)")
    for info in indexes:
        if info.kind == "vector" and info.dimension and info.dimension != embedder.dimension:
            raise EmbeddingDimensionError(
                f"the vector index on :{info.label}({info.properties[0]}) has {info.dimension} "
                f"dimensions but the embedding model {embedder.model_id} gives "
                f"{embedder.dimension}; {fix}")
    row = store.run(catalog.read_setting(EMBEDDING_KEY)).single()
    if row is None:
        return False
    if row["dimension"] != embedder.dimension or row["model"] != embedder.model_id:
        raise EmbeddingDimensionError(
            f"the graph's embeddings come from {row['model']} ({row['dimension']} dimensions) "
            f"but the configured model is {embedder.model_id} ({embedder.dimension} "
            f"dimensions); {fix}")
    return True


def ensure_base_schema(store: GraphStore, embedder: Embedder, *,
                       entity_vectors: VectorIndexOptions | None = None) -> None:
    """Apply the built-in schema unless the graph already has one (loaders call this);
    ``entity_vectors``: how the entities' vector index is built (the engine's default)."""
    if not check_embedding(store, embedder):
        apply_schema(store, Schema(source="<built-in>"), embedder,
                     entity_vectors=entity_vectors)


def apply_schema(store: GraphStore, schema: Schema, embedder: Embedder, *,
                 entity_vectors: VectorIndexOptions | None = None) -> SchemaReport:
    dialect = store.dialect
    report = SchemaReport()
    existing = store.indexes()
    check_embedding(store, embedder, existing)
    have = {info.key for info in existing}
    for spec in desired_indexes(schema, embedder.dimension,
                                unique_needs_range=dialect.UNIQUE_NEEDS_RANGE_INDEX):
        if spec.key in have:
            report.existing.append(spec.describe())
            continue
        if spec.kind == "exists" and not (dialect.EXISTENCE_CONSTRAINTS
                                          and store.supports_existence_constraints()):
            # Neo4j Community has only uniqueness constraints (property existence, node key
            # and property type constraints are Enterprise Edition; cypher-manual/5/constraints).
            report.notes.append(
                f"not created: {spec.describe()} (NotNull): {store.address} does not enforce "
                "property-existence constraints (Neo4j Community has only uniqueness "
                "constraints); kgdb does not check it either")
            have.add(spec.key)
            continue
        options = entity_vectors if spec.kind == "vector" and spec.label == ENTITY else None
        for op in index_operations(dialect, spec, options):
            execute_ddl(store, op)
        have.add(spec.key)
        report.created.append(spec.describe())
    store.run(catalog.merge_setting(EMBEDDING_KEY, embedder.model_id, embedder.dimension))
    _apply_catalog(store, schema, embedder, report)
    await_indexes(store)
    return report


def _apply_catalog(store: GraphStore, schema: Schema, embedder: Embedder,
                   report: SchemaReport) -> None:
    d = store.dialect
    types = list(schema.types)
    if types:
        vectors = embedder.embed([t.text for t in types])
        store.run(catalog.merge_entity_types(d, [
            {"name": t.name, "kind": t.kind, "alias": t.alias, "description": t.description,
             "parent": t.parent, "text": t.text, "embedding": v}
            for t, v in zip(types, vectors, strict=True)]))
        links = [(t.name, t.parent) for t in types if t.parent]
        if links:
            store.run(catalog.merge_hierarchy(d, ENTITY_TYPE, "name", "isA", links))
        report.entity_types = len(types)
    relations = {r.name: (t, r) for t, r in schema.relations()}
    if relations:
        pairs = list(relations.values())
        vectors = embedder.embed([r.text for _, r in pairs])
        store.run(catalog.describe_relation_types(d, [
            {"name": r.name, "text": r.text, "source": t.name, "target": r.target,
             "description": r.description, "embedding": v}
            for (t, r), v in zip(pairs, vectors, strict=True)]))
        report.relation_types = len(pairs)
    for t in types:
        report.concepts += _apply_concepts(store, t, embedder)


def concept_id(concept_type: str, name: str) -> str:
    """Concepts are identified as ``Type/Name``, as the rule language writes them."""
    return f"{concept_type}/{name}"


def _apply_concepts(store: GraphStore, t: TypeDef, embedder: Embedder) -> int:
    pairs = [pair for root in t.concepts for pair in root.walk()]
    if not pairs:
        return 0
    vectors = embedder.embed([name for name, _ in pairs])
    store.run(catalog.merge_concepts(store.dialect, t.name, [
        (concept_id(t.name, name), name, v) for (name, _), v in zip(pairs, vectors, strict=True)]))
    links = [(concept_id(t.name, n), concept_id(t.name, p)) for n, p in pairs if p]
    if links:
        store.run(catalog.merge_hierarchy(store.dialect, CONCEPT, "id", t.hypernym_predicate,
                                          links))
    return len(pairs)


def rebuild_vector_indexes(store: GraphStore) -> list[str]:
    """Drop and re-create every vector index (FalkorDB: clears stale HNSW entries that updates
    of indexed nodes leave behind; see kgdb/cypher/catalog.py)."""
    rebuilt: list[str] = []
    vectors: list[IndexInfo] = []
    for info in store.indexes():
        if info.kind != "vector" or not info.dimension:
            continue
        for op in store.dialect.drop_index(info):
            store.execute(op)
        for op in store.dialect.create_vector_index(
                info.label, info.properties[0], info.dimension,
                relationship=info.entity == "relationship"):
            store.execute(op)
        rebuilt.append(f"-[:{info.label}]-({info.properties[0]})"
                       if info.entity == "relationship" else
                       f":{info.label}({info.properties[0]})")
        vectors.append(info)
    await_indexes(store, vectors=vectors)
    return rebuilt


POPULATING_LIMIT_S = 12 * 3600.0
"""How long an index may keep populating before await_indexes gives up (a bulk import of 10M
entities builds its vector index after the import, on the imported data)."""


def _await_populating(store: GraphStore, wait: Statement) -> None:
    """Run the engine's wait statement (Neo4j: ``db.awaitIndexes``, which gives up after its
    timeout), again while an index it timed out on is still populating, not failed: a
    large index built on imported data takes longer than one call's timeout."""
    deadline = time.monotonic() + POPULATING_LIMIT_S
    while True:
        try:
            store.run(wait)
            return
        except (StatementError, QueryTimeoutError):
            pending = [i for i in store.indexes() if i.state != "ONLINE"]
            if (not pending or any(i.state == "FAILED" for i in pending)
                    or time.monotonic() > deadline):
                raise


def await_indexes(store: GraphStore, timeout_s: float = 600.0,
                  vectors: Sequence[IndexInfo] = ()) -> None:
    """Wait until every index is online (Neo4j: db.awaitIndexes; FalkorDB: poll db.indexes)
    and each of ``vectors`` answers a query (a re-created FalkorDB index can be listed before
    its procedure accepts calls)."""
    wait = store.dialect.await_indexes()
    if wait is not None:
        _await_populating(store, wait)
    else:
        pending = wait_for_index_builds(store, timeout_s)
        if pending:
            raise SchemaError(f"indexes made no progress for {timeout_s:.0f} s: "
                              f"{describe_indexes(pending)}")
    deadline = time.monotonic() + timeout_s
    for info in vectors:
        probe = catalog.vector_probe(store.dialect, info.label, info.properties[0],
                                     int(info.dimension or 1),
                                     relationship=info.entity == "relationship")
        while True:
            try:
                store.run(probe)
                break
            except StatementError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
