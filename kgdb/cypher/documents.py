"""Statements of the document pipeline: documents, chunks, the mutual index, extracted facts.

The graph it writes::

    (:Document {id, title, source, format, hash, chunks})-[:hasChunk]->(:Chunk {id, document,
        position, text, headings, title, embedding, source?, pages?})   source and pages:
                                                    PDF, HTML, DOCX and ODT chunks
    (:Entity)-[:supporting_chunks]->(:Chunk)            KAG's mutual index
    (:Entity)-[r:<relation> {extracted, chunks}]->(:Entity)    a fact and the chunks it came from

Provenance decides what a document may delete: nodes and relationships that extraction
created carry ``extracted = true``; a triples load that meets one marks it ``asserted =
true``. Removing a document removes its chunks (and with them its mutual-index edges), its
chunk ids from every fact, the extracted facts no chunk supports any more, and the extracted
entities nothing supports any more, never what a triples or records load asserted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kgdb.cypher.params import Params
from kgdb.dialects.base import Dialect
from kgdb.statement import Statement
from kgdb.vocabulary import CHUNK, DOCUMENT, ENTITY, HAS_CHUNK, STRUCTURAL_RELATIONS
from kgdb.vocabulary import SUPPORTING_CHUNKS as SUPPORTING


def document_states(ids: Sequence[str]) -> Statement:
    """Rows ``id, hash`` of the stored documents among ``ids`` (hash null: not complete)."""
    return Statement("UNWIND $ids AS id\nMATCH (d:Document {id: id})\n"
                     "RETURN d.id AS id, d.hash AS hash", {"ids": list(ids)})


def unsupport_facts(document_ids: Sequence[str]) -> Statement:
    """Take the documents' chunk ids out of every fact's ``chunks`` (run before
    :func:`delete_unsupported_facts`, while the chunks still lead to the facts)."""
    return Statement(
        "UNWIND $ids AS doc\n"
        f"MATCH (c:{CHUNK} {{document: doc}})<-[:{SUPPORTING}]-(:{ENTITY})-[r]-(:{ENTITY})\n"
        "WHERE r.chunks IS NOT NULL\n"
        "WITH DISTINCT r, doc + '#' AS prefix\n"
        # FalkorDB 4.16 reads `x STARTS WITH a + b` as `(x STARTS WITH a) + b`: one operand
        "SET r.chunks = [x IN r.chunks WHERE NOT (x STARTS WITH prefix)]",
        {"ids": list(document_ids)}, write=True, idempotent=True)


def delete_unsupported_facts(document_ids: Sequence[str]) -> Statement:
    """Delete the extracted facts around the documents' chunks that no chunk supports any more
    (unless a triples load asserted them). Rows: ``deleted``. A statement of its own: FalkorDB
    4.16 filters on a property before a SET of the same query has written it."""
    return Statement(
        "UNWIND $ids AS doc\n"
        f"MATCH (c:{CHUNK} {{document: doc}})<-[:{SUPPORTING}]-(:{ENTITY})-[r]-(:{ENTITY})\n"
        "WHERE size(r.chunks) = 0 AND r.extracted = true AND r.asserted IS NULL\n"
        "WITH DISTINCT r\n"
        "DELETE r\n"
        "RETURN count(r) AS deleted", {"ids": list(document_ids)}, write=True, idempotent=True)


def delete_chunks(document_ids: Sequence[str]) -> Statement:
    """Delete the documents' chunks with their mutual-index edges. Rows: ``deleted``."""
    return Statement(
        f"UNWIND $ids AS doc\nMATCH (c:{CHUNK} {{document: doc}})\n"
        "DETACH DELETE c\nRETURN count(c) AS deleted",
        {"ids": list(document_ids)}, write=True, idempotent=True)


def delete_orphan_entities() -> Statement:
    """Delete the extracted entities that no chunk supports, no triples load asserted, and no
    fact connects to another entity any more. Rows: ``deleted``."""
    return Statement(
        f"MATCH (e:{ENTITY})\n"
        "WHERE e.extracted = true AND e.asserted IS NULL\n"
        f"  AND NOT (e)-[:{SUPPORTING}]->(:{CHUNK}) AND NOT (e)--(:{ENTITY})\n"
        "DETACH DELETE e\nRETURN count(e) AS deleted", write=True, idempotent=True)


def delete_orphan_concepts() -> Statement:
    """Delete the concepts extraction created that no entity belongs to any more."""
    return Statement(
        "MATCH (c:Concept)\nWHERE c.extracted = true AND NOT ()-[:belongTo]->(c)\n"
        "DETACH DELETE c\nRETURN count(c) AS deleted", write=True, idempotent=True)


def delete_documents(ids: Sequence[str]) -> Statement:
    """Delete the Document nodes (their chunks are deleted first). Rows: ``deleted``."""
    return Statement(f"UNWIND $ids AS id\nMATCH (d:{DOCUMENT} {{id: id}})\n"
                     "DETACH DELETE d\nRETURN count(d) AS deleted",
                     {"ids": list(ids)}, write=True, idempotent=True)


def documents_named(names: Sequence[str]) -> Statement:
    """The documents whose id or title is one of ``names``. Rows: ``wanted``, ``id``."""
    return Statement(f"UNWIND $names AS wanted\nMATCH (d:{DOCUMENT})\n"
                     "WHERE d.id = wanted OR d.title = wanted\nRETURN wanted, d.id AS id",
                     {"names": list(names)})


def merge_documents(documents: Sequence[Mapping[str, Any]]) -> Statement:
    """``documents``: {id, title, source, format}; the hash is set last
    (:func:`set_document_hashes`), so an interrupted write is redone on the next load."""
    return Statement(
        f"UNWIND $rows AS row\nMERGE (d:{DOCUMENT} {{id: row.id}})\n"
        "SET d.title = row.title, d.source = row.source, d.format = row.format, "
        "d.hash = null, d.chunks = null",
        {"rows": [dict(d) for d in documents]}, write=True, idempotent=True)


def merge_chunks(dialect: Dialect, chunks: Sequence[Mapping[str, Any]]) -> Statement:
    """``chunks``: {id, document, position, text, headings, title, embedding, source, pages},
    each linked from its document by ``hasChunk {position}`` (``title``: the document's title
    and the heading path, which the lexical index reads; kgdb/cypher/lexical.py). ``source``
    (``libtasn1.pdf p. 12``) and ``pages`` are null, so not stored, for text, Markdown and
    JSON chunks."""
    return Statement(
        f"UNWIND $rows AS row\nMATCH (d:{DOCUMENT} {{id: row.document}})\n"
        f"MERGE (c:{CHUNK} {{id: row.id}})\n"
        "SET c.document = row.document, c.position = row.position, c.text = row.text, "
        "c.headings = row.headings, c.title = row.title, "
        f"c.embedding = {dialect.vector_value('row.embedding')}, "
        "c.source = row.source, c.pages = row.pages\n"
        f"MERGE (d)-[h:{HAS_CHUNK}]->(c)\nSET h.position = row.position",
        {"rows": [dict(c) for c in chunks]}, write=True, idempotent=True)


def entity_names(dialect: Dialect, label: str = ENTITY) -> Statement:
    """Rows ``id, name, synonyms`` of every ``label`` node (the gazetteer's dictionary)."""
    return Statement(f"MATCH (e:{dialect.ident(label)}) WHERE e.name IS NOT NULL\n"
                     "RETURN e.id AS id, e.name AS name, e.synonyms AS synonyms")


def schema_relation_types() -> Statement:
    """Rows ``name`` of the relation types a schema declared (they have a source type; a
    triples load catalogues its predicates without one)."""
    return Statement("MATCH (r:RelationType) WHERE r.source IS NOT NULL\n"
                     "RETURN r.name AS name ORDER BY name")


def merge_extracted_entities(dialect: Dialect, entities: Sequence[Mapping[str, Any]],
                             type_label: str | None = None) -> Statement:
    """``entities``: {id, name, type, description, synonyms, embedding}: entities extraction
    found.
    A new one is marked ``extracted``; an existing one gains the synonyms and a description
    it lacks. ``type_label`` (the schema's entity type) is added as a label."""
    label = f", e:{dialect.ident(type_label)}" if type_label else ""
    # An existing node is written only when something changes (FalkorDB 4.16 leaves a stale
    # vector-index entry behind on every update of an embedded node: kgdb/cypher/catalog.py).
    return Statement(
        f"UNWIND $rows AS row\nMERGE (e:{ENTITY} {{id: row.id}})\n"
        "ON CREATE SET e.name = row.name, e.extracted = true, e.type = row.type, "
        "e.description = row.description, e.described = CASE WHEN row.description IS NULL "
        "THEN null ELSE true END, "
        f"e.synonyms = row.synonyms, e.embedding = {dialect.vector_value('row.embedding')}{label}\n"
        "WITH e, row\n"
        "WHERE (e.description IS NULL AND row.description IS NOT NULL)\n"
        "   OR any(s IN row.synonyms WHERE NOT s IN coalesce(e.synonyms, []))\n"
        # `described`: the description came from extraction (a document's delete may take it
        # back); evaluated before the description is set
        "SET e.described = CASE WHEN e.description IS NULL AND row.description IS NOT NULL "
        "THEN true ELSE e.described END, "
        "e.description = coalesce(e.description, row.description), "
        "e.synonyms = coalesce(e.synonyms, []) + "
        "[s IN row.synonyms WHERE NOT s IN coalesce(e.synonyms, [])]",
        {"rows": [dict(e) for e in entities]}, write=True, idempotent=True)


def link_mentions(mentions: Sequence[tuple[str, str]]) -> Statement:
    """``mentions``: (entity id, chunk id): ``(entity)-[:supporting_chunks]->(chunk)``."""
    return Statement(
        f"UNWIND $rows AS row\nMATCH (e:{ENTITY} {{id: row.entity}})\n"
        f"MATCH (c:{CHUNK} {{id: row.chunk}})\nMERGE (e)-[:{SUPPORTING}]->(c)",
        {"rows": [{"entity": e, "chunk": c} for e, c in mentions]}, write=True,
        idempotent=True)


def merge_extracted_facts(dialect: Dialect, relation: str,
                          facts: Sequence[tuple[str, str, str]]) -> Statement:
    """``facts``: (head id, tail id, chunk id) for one ``relation``; the chunk is added to the
    fact's ``chunks`` (a new fact is marked ``extracted``)."""
    return Statement(
        f"UNWIND $rows AS row\nMATCH (h:{ENTITY} {{id: row.h}})\nMATCH (t:{ENTITY} {{id: row.t}})\n"
        f"MERGE (h)-[r:{dialect.ident(relation)}]->(t)\n"
        "ON CREATE SET r.extracted = true, r.chunks = []\n"
        "SET r.chunks = CASE WHEN row.chunk IN coalesce(r.chunks, []) THEN r.chunks "
        "ELSE coalesce(r.chunks, []) + row.chunk END",
        {"rows": [{"h": h, "t": t, "chunk": c} for h, t, c in facts]}, write=True,
        idempotent=True)


def merge_concept_links(links: Sequence[tuple[str, str, str, str]]) -> Statement:
    """``links``: (entity id, concept id, concept name, chunk id):
    ``(entity)-[:belongTo {chunks}]->(:Concept)``; a new concept and a new edge are marked
    ``extracted``, and the chunk is added to the edge's ``chunks`` (as for facts)."""
    return Statement(
        f"UNWIND $rows AS row\nMATCH (e:{ENTITY} {{id: row.entity}})\n"
        "MERGE (c:Concept {id: row.concept})\n"
        "ON CREATE SET c.name = row.name, c.extracted = true\n"
        "MERGE (e)-[b:belongTo]->(c)\n"
        f"ON CREATE SET b.extracted = true, b.chunks = []\n{_ADD_CHUNK.format(r='b')}",
        {"rows": [{"entity": e, "concept": c, "name": n, "chunk": k}
                  for e, c, n, k in links]}, write=True, idempotent=True)


def merge_broader_concepts(links: Sequence[tuple[str, str, str]]) -> Statement:
    """``links``: (concept id, broader concept id, chunk id):
    ``(concept)-[:isA {chunks}]->(broader)``, supported by the chunks as facts are."""
    return Statement(
        "UNWIND $rows AS row\nMATCH (c:Concept {id: row.narrow})\n"
        "MATCH (b:Concept {id: row.broad})\nMERGE (c)-[r:isA]->(b)\n"
        f"ON CREATE SET r.extracted = true, r.chunks = []\n{_ADD_CHUNK.format(r='r')}",
        {"rows": [{"narrow": n, "broad": b, "chunk": k} for n, b, k in links]}, write=True,
        idempotent=True)


_ADD_CHUNK = ("SET {r}.chunks = CASE WHEN row.chunk IN coalesce({r}.chunks, []) THEN {r}.chunks "
              "ELSE coalesce({r}.chunks, []) + row.chunk END")


def note_mentions(notes: Sequence[Mapping[str, Any]]) -> Statement:
    """``notes``: {entity, chunk, description, synonyms, rank}: what a chunk said about an
    entity, kept on its ``supporting_chunks`` edge (``rank`` orders the chunks as they were
    loaded), so that the entity's description and synonyms can be recomputed from the chunks
    that remain when a document goes."""
    return Statement(
        f"UNWIND $rows AS row\nMATCH (e:{ENTITY} {{id: row.entity}})-[m:{SUPPORTING}]->"
        f"(:{CHUNK} {{id: row.chunk}})\n"
        "SET m.description = row.description, m.synonyms = row.synonyms, m.rank = row.rank",
        {"rows": [dict(n) for n in notes]}, write=True, idempotent=True)


def unsupport_concepts(document_ids: Sequence[str]) -> Statement:
    """Take the documents' chunk ids out of the extracted ``belongTo`` edges of the entities
    their chunks mention and the extracted ``isA`` edges between concepts."""
    return Statement(
        "UNWIND $ids AS doc\n"
        f"MATCH (:{CHUNK} {{document: doc}})<-[:{SUPPORTING}]-(:{ENTITY})-[b:belongTo]->"
        "(c:Concept)\n"
        "WHERE b.chunks IS NOT NULL\n"
        "WITH DISTINCT b, c, doc + '#' AS prefix\n"
        "SET b.chunks = [x IN b.chunks WHERE NOT (x STARTS WITH prefix)]\n"
        "WITH c, prefix\n"
        "OPTIONAL MATCH (c)-[r:isA]-(:Concept)\n"
        "WHERE r.chunks IS NOT NULL\n"
        "WITH DISTINCT r, prefix WHERE r IS NOT NULL\n"
        "SET r.chunks = [x IN r.chunks WHERE NOT (x STARTS WITH prefix)]",
        {"ids": list(document_ids)}, write=True, idempotent=True)


def delete_unsupported_concept_edges() -> Statement:
    """Delete the extracted ``belongTo`` and ``isA`` edges no chunk supports any more (a
    statement of its own, as for facts). Rows: ``deleted``."""
    return Statement(
        "MATCH ()-[r:belongTo|isA]->(:Concept)\n"
        "WHERE r.extracted = true AND size(r.chunks) = 0\n"
        "DELETE r\nRETURN count(r) AS deleted", write=True, idempotent=True)


def noted_entities(document_ids: Sequence[str]) -> Statement:
    """Rows ``id, said``: the entities the documents' chunks said something about (a
    description, synonyms), with the synonyms they said (a list per chunk)."""
    return Statement(
        "UNWIND $ids AS doc\n"
        f"MATCH (:{CHUNK} {{document: doc}})<-[m:{SUPPORTING}]-(e:{ENTITY})\n"
        "WHERE m.description IS NOT NULL OR size(coalesce(m.synonyms, [])) > 0\n"
        "RETURN e.id AS id, collect(coalesce(m.synonyms, [])) AS said",
        {"ids": list(document_ids)})


def entity_notes(ids: Sequence[str]) -> Statement:
    """Rows ``id, description, described, synonyms, notes``: the entities' description (and
    whether extraction gave it), synonyms, and what their remaining chunks said, as
    ``[rank, description, synonyms]`` lists."""
    return Statement(
        f"UNWIND $ids AS id\nMATCH (e:{ENTITY} {{id: id}})\n"
        f"OPTIONAL MATCH (e)-[m:{SUPPORTING}]->(:{CHUNK})\n"
        "WHERE m.rank IS NOT NULL\n"
        "WITH e, collect([m.rank, m.description, m.synonyms]) AS notes\n"
        "RETURN e.id AS id, e.description AS description, e.described AS described, "
        "e.synonyms AS synonyms, notes", {"ids": list(ids)})


def set_entity_notes(rows: Sequence[Mapping[str, Any]]) -> Statement:
    """``rows``: {id, description, described, synonyms}: the entities' description and
    synonyms recomputed from the chunks that remain."""
    return Statement(
        f"UNWIND $rows AS row\nMATCH (e:{ENTITY} {{id: row.id}})\n"
        "SET e.description = row.description, e.described = row.described, "
        "e.synonyms = row.synonyms",
        {"rows": [dict(r) for r in rows]}, write=True, idempotent=True)


def set_document_hashes(hashes: Sequence[tuple[str, str, int]]) -> Statement:
    """``hashes``: (document id, content hash, chunk count): marks the documents complete."""
    return Statement(
        f"UNWIND $rows AS row\nMATCH (d:{DOCUMENT} {{id: row.id}})\n"
        "SET d.hash = row.hash, d.chunks = row.chunks",
        {"rows": [{"id": i, "hash": h, "chunks": n} for i, h, n in hashes]}, write=True,
        idempotent=True)


def nearest_chunk_documents(dialect: Dialect, vector: Sequence[float], k: int) -> Statement:
    """The ``k`` chunks nearest to ``vector``: rows ``chunk, document, text, source, distance`` (L2).

    Where the dialect searches chunks exactly (:meth:`Dialect.exact_search`: Neo4j with
    kgdb's plugin, ``kgdb.nearestNodes`` over an in-memory copy of the index's vectors; FalkorDB
    while the chunks are few enough to scan) it does, as the ``ppr`` solver's seeds do
    (kgdb/cypher/pagerank.py), faster than Lucene's HNSW at scale. The others take L2 from
    the vector index's score: ranking chunks does not need
    :meth:`Dialect.exact_l2_distance`, which GSD's sums do, and which is slow in Neo4j's
    Cypher (docs/design/exact-vector-search.md)."""
    if dialect.exact_search(CHUNK):
        value = dialect.vector_value('$vector')
        head = f"{dialect.nearest_top(CHUNK, 'embedding', '$k', '$vector', value)}\n"
    else:
        head = (f"{dialect.vector_search_call(CHUNK, 'embedding', '$k', '$vector')}\n"
                f"WITH node, {dialect.score_to_l2('score')} AS distance\n")
    return Statement(
        f"{head}"
        "RETURN node.id AS chunk, node.document AS document, node.text AS text, "
        "node.source AS source, distance\n"
        "ORDER BY distance ASC, chunk ASC\nLIMIT $k", {"k": int(k), "vector": vector})


def passage_search(dialect: Dialect) -> str:
    """Which search :func:`nearest_chunk_documents` runs on ``dialect``: ``kgdb.nearestNodes`` (the
    exact search of kgdb's Neo4j plugin), ``scan`` (exact, FalkorDB) or ``vector index``."""
    if dialect.NATIVE is not None:
        return "kgdb.nearestNodes"
    return "scan" if dialect.exact_search(CHUNK) else "vector index"


def count_entities() -> Statement:
    """Row ``entities``: how many entities the graph holds (a count store, O(1))."""
    return Statement(f"MATCH (e:{ENTITY}) RETURN count(e) AS entities")


def entity_documents(entity_ids: Sequence[str]) -> Statement:
    """The documents whose chunks support each entity (the mutual index): rows ``entity,
    documents`` (distinct ids, in no particular order); entities without a supported chunk
    have no row."""
    return Statement(
        f"UNWIND $ids AS id\nMATCH (e:{ENTITY} {{id: id}})-[:{SUPPORTING}]->(c:{CHUNK})\n"
        "RETURN e.id AS entity, collect(DISTINCT c.document) AS documents",
        {"ids": list(entity_ids)})


def collaborating_documents(dialect: Dialect, vector: Sequence[float], n: int, hops: int
                            ) -> Statement:
    """KG-Retriever's document-level collaboration: the ``n`` documents nearest ``vector`` (the
    seeds, by cosine) and the documents ``SIMILAR`` edges reach from them in up to ``hops``
    (1 or 2) steps. Rows ``seed, seed_sim, m1, w1, sim1, m2, w2, sim2``: each path with the edge
    scores (``w``) and every document's cosine similarity to the query (``sim``); ``m1`` and
    ``m2`` are null where a seed has no such neighbour."""
    if hops not in (1, 2):
        raise ValueError(f"hops must be 1 or 2, not {hops}")
    similar = dialect.ident("SIMILAR")
    doc = dialect.ident(DOCUMENT)
    call = dialect.vector_search_call(DOCUMENT, "embedding", "$n", "$vector")
    lines = [
        f"WITH {dialect.vector_value('$vector')} AS qv",
        call,
        f"WITH qv, node AS seed, {dialect.cosine_similarity('node.embedding', 'qv')} AS seed_sim",
        "ORDER BY seed_sim DESC, seed.id ASC",
        "LIMIT $n",
        f"OPTIONAL MATCH (seed)-[r1:{similar}]->(m1:{doc})",
        f"WITH qv, seed, seed_sim, m1, r1.score AS w1, "
        f"{dialect.cosine_similarity('m1.embedding', 'qv')} AS sim1",
    ]
    if hops == 2:
        lines += [f"OPTIONAL MATCH (m1)-[r2:{similar}]->(m2:{doc})",
                  "RETURN seed.id AS seed, seed_sim, m1.id AS m1, w1, sim1, m2.id AS m2, "
                  f"r2.score AS w2, {dialect.cosine_similarity('m2.embedding', 'qv')} AS sim2"]
    else:
        lines.append("RETURN seed.id AS seed, seed_sim, m1.id AS m1, w1, sim1, null AS m2, "
                     "null AS w2, null AS sim2")
    return Statement("\n".join(lines), {"vector": vector, "n": int(n)})


def entity_level_triples(dialect: Dialect, documents: Sequence[tuple[str, float]],
                         vector: Sequence[float], threshold: float, limit: int) -> Statement:
    """KG-Retriever's KG-level retrieval: the entities supported by the chunks of
    ``documents`` ((id, collaboration weight w)) whose ``w * cos(entity, query)`` exceeds
    ``threshold`` (an entity in several documents takes its largest w), then the facts around
    them, at most ``limit``, best entity score first: rows ``h, type, t, head, tail, ttr,
    chunks, score``."""
    p = Params()
    q = dialect.vector_value(p.add("vector", list(map(float, vector))))
    return Statement(
        f"UNWIND {p.add('documents', [{'id': i, 'w': float(w)} for i, w in documents])} AS doc\n"
        f"MATCH (:{dialect.ident(DOCUMENT)} {{id: doc.id}})-[:hasChunk]->(:{dialect.ident(CHUNK)})"
        f"<-[:supporting_chunks]-(e:{ENTITY})\n"
        # no `e.embedding IS NOT NULL`: on FalkorDB 4.16.3 it copies the vector
        # (docs/design/neo4j-latency.md); a missing embedding gives a null score, dropped below
        "WITH e, max(doc.w) AS w\n"
        f"WITH e, w * {dialect.cosine_similarity('e.embedding', q)} AS score\n"
        f"WHERE score > {p.add('threshold', float(threshold))}\n"
        f"MATCH (e)-[r]-(:{ENTITY})\n"
        f"WHERE NOT type(r) IN {p.add('structural', list(STRUCTURAL_RELATIONS))}\n"
        "WITH r, max(score) AS score\n"
        "WITH r, score, startNode(r) AS h, endNode(r) AS t\n"
        "RETURN h.id AS h, type(r) AS type, t.id AS t, h.name AS head, t.name AS tail,\n"
        "       r.ttr AS ttr, r.chunks AS chunks, score\n"
        f"ORDER BY score DESC, h, type, t\nLIMIT {p.add('limit', int(limit))}", p.values)


def chunks_scored(dialect: Dialect, ids: Sequence[str], question: Sequence[float],
                  context: Sequence[float]) -> Statement:
    """Rows ``id, document, text, source, question, context`` of the chunks among ``ids``: their
    text and exact cosine similarities to the ``question`` and ``context`` vectors."""
    p = Params()
    return Statement(
        f"WITH {dialect.vector_value(p.add('question', [float(x) for x in question]))} AS qv, "
        f"{dialect.vector_value(p.add('context', [float(x) for x in context]))} AS cv\n"
        f"MATCH (c:{CHUNK}) WHERE c.id IN {p.add('ids', list(ids))}\n"
        "RETURN c.id AS id, c.document AS document, c.text AS text, c.source AS source, "
        f"{dialect.cosine_similarity('c.embedding', 'qv')} AS question, "
        f"{dialect.cosine_similarity('c.embedding', 'cv')} AS context ORDER BY id", p.values)


def chunks_by_id(ids: Sequence[str]) -> Statement:
    """Rows ``id, document, text, source`` of the chunks among ``ids``."""
    p = Params()
    return Statement(
        f"MATCH (c:{CHUNK}) WHERE c.id IN {p.add('ids', list(ids))}\n"
        "RETURN c.id AS id, c.document AS document, c.text AS text, c.source AS source "
        "ORDER BY id", p.values)
