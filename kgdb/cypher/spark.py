"""The Cypher the Neo4j Connector for Apache Spark runs for ``kgdb spark load-documents``.

Most of the job's writes use the connector's own statements (``labels`` + ``node.keys`` for
nodes, ``relationship.save.strategy = keys`` for relationships: MERGE on the keys, then
``SET += `` the other columns). The title entities need the pipeline's own rule instead (an
existing entity keeps its name and embedding and only gains what it lacks), so the job gives
the connector :func:`title_entities_query`: the statement of
:func:`kgdb.cypher.documents.merge_extracted_entities`, fed one connector ``event`` per row.
"""

from __future__ import annotations

from kgdb.cypher.documents import merge_extracted_entities
from kgdb.dialects.base import Dialect

_UNWIND = "UNWIND $rows AS row\n"


def title_entities_query(dialect: Dialect) -> str:
    """The connector's ``query`` write of title entities ({id, name, description, synonyms,
    embedding} columns): the connector wraps it as ``UNWIND $events AS event ...``."""
    text = merge_extracted_entities(dialect, []).text
    if not text.startswith(_UNWIND):  # kgdb/cypher/documents.py changed its shape
        raise AssertionError("merge_extracted_entities no longer starts with its UNWIND")
    return "WITH event AS row\n" + text[len(_UNWIND):]
