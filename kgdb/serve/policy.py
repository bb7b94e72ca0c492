"""Serving policy, decided once for every front end that starts the service (``kgdb serve``,
``kgdb neo4j start --with-service``, the Python API): where the token file is, who may listen
where, and the token a first local start creates."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from kgdb.errors import ConfigError
from kgdb.serve.tokens import TokenFile

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def default_token_file(home: Path) -> Path:
    """``$KGDB_HOME/tokens.json``."""
    return home / "tokens.json"


def is_loopback(host: str) -> bool:
    """True for an address of this machine only (``localhost``, ``127.x``, ``::1``)."""
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serving_tokens(path: Path, host: str, *, allow_writes: bool) -> tuple[TokenFile, str | None]:
    """The token file a service on ``host`` uses, and the secret of a token created now (None
    when the file existed). Listening beyond this machine needs an existing file; on loopback a
    missing file is created with one token, ``local``, for every graph (read, and write when
    writes are allowed)."""
    if not is_loopback(host) and not path.exists():
        raise ConfigError(f"listening on {host} (beyond this machine) needs a token file "
                          f"({path} is missing): create one with kgdb tokens add")
    secret = None
    if not path.exists():
        secret = TokenFile(path, []).add(
            "local", ("read", "write") if allow_writes else ("read",), ("*",))
    return TokenFile.load(path), secret
