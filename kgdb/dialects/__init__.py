"""Every difference between Neo4j and FalkorDB lives in this package and nowhere else."""

from __future__ import annotations

from kgdb.dialects.base import Dialect, IndexInfo, quote_identifier
from kgdb.dialects.falkordb import FalkorDBDialect
from kgdb.dialects.neo4j import Neo4jDialect
from kgdb.errors import ConfigError, did_you_mean

DIALECTS: dict[str, type[Dialect]] = {"neo4j": Neo4jDialect, "falkordb": FalkorDBDialect}


def get_dialect(name: str) -> Dialect:
    """Return the dialect called ``name``; an unknown name gets a did-you-mean."""
    try:
        return DIALECTS[name.lower()]()
    except KeyError as exc:
        raise ConfigError(
            f"Unknown dialect {name!r}{did_you_mean(name.lower(), DIALECTS)}; "
            f"choose one of {', '.join(sorted(DIALECTS))}"
        ) from exc


__all__ = ["DIALECTS", "Dialect", "FalkorDBDialect", "IndexInfo", "Neo4jDialect",
           "get_dialect", "quote_identifier"]
