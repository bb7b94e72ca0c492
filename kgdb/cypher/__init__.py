"""Statement builders, one module per feature (``verb_noun(...) -> Statement``)."""
