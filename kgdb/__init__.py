"""kgdb: knowledge-augmented retrieval that lives inside a graph database.

The Python API is :func:`connect` and the :class:`KnowledgeBase` it opens (:mod:`kgdb.api`);
the names below are the stable ones. docs/python.md has a quick start and the reference;
:func:`example` is the path of a bundled example program (:mod:`kgdb.package`)."""

from kgdb.api import KnowledgeBase, PatternSpec, connect
from kgdb.errors import KgdbError, MissingFileError
from kgdb.package import example
from kgdb.retrieve.evidence import Evidence, EvidenceRow
from kgdb.retrieve.readiness import NotReadyError
from kgdb.retrieve.registry import SOLVERS, parse_options
from kgdb.retrieve.solver import Answer

__version__ = "0.1.0"

__all__ = ["SOLVERS", "Answer", "Evidence", "EvidenceRow", "KgdbError", "KnowledgeBase",
           "MissingFileError", "NotReadyError", "PatternSpec", "__version__", "connect",
           "example", "parse_options"]
