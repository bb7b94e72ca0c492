"""kgdb: knowledge-augmented retrieval that lives inside a graph database.

The Python API is :func:`connect` and the :class:`KnowledgeBase` it opens (:mod:`kgdb.api`);
the names below are the stable ones. See the README's Python quick start; :func:`example` is the
path of a bundled example program (:mod:`kgdb.package`)."""

from kgdb.api import KnowledgeBase, PatternSpec, connect
from kgdb.errors import KgdbError
from kgdb.package import example
from kgdb.retrieve.evidence import Evidence, EvidenceRow
from kgdb.retrieve.registry import SOLVERS, parse_options
from kgdb.retrieve.solver import Answer

__version__ = "0.1.0"

__all__ = ["SOLVERS", "Answer", "Evidence", "EvidenceRow", "KgdbError", "KnowledgeBase",
           "PatternSpec", "__version__", "connect", "example", "parse_options"]
