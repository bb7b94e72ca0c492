"""Cypher builders, one module per feature (logical_form, simgrag, rules...)."""
