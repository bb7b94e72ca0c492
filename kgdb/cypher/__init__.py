"""Statement builders, one module per feature; Cypher text lives here and in kgdb/dialects/."""
