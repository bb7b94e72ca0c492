"""kgdb: knowledge-augmented retrieval that lives inside a graph database."""

__version__ = "0.1.0"
