"""Solvers: rules (concept rules compiled to Cypher); logical forms."""
