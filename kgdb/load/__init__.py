"""Loaders: files -> nodes and relationships (batched, idempotent MERGE on id)."""
