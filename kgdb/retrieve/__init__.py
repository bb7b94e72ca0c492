"""Retrieval methods (SimGRAG in :mod:`kgdb.retrieve.simgrag`)."""
