"""Bearer tokens of the knowledge service: a JSON file readable by its owner only, one entry
per token with its scopes (``read``, ``write``) and the graphs (FalkorDB) or databases (Neo4j)
it may use. The file keeps a SHA-256 of each secret, never the secret; ``kgdb serve token
add`` prints a new secret once."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgdb.errors import ConfigError

SCOPES = ("read", "write")
ANY_GRAPH = "*"
TENANT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
"""A graph or database name a token may name and a request may ask for: letters, digits,
``_ . -``, at most 63 (Neo4j's database names are narrower still; the engine says so)."""
TOKEN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,62}$")


@dataclass(frozen=True)
class Token:
    name: str
    sha256: str
    scopes: tuple[str, ...]
    graphs: tuple[str, ...]

    def may_use(self, graph: str) -> bool:
        return ANY_GRAPH in self.graphs or graph in self.graphs

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "scopes": list(self.scopes),
                "graphs": list(self.graphs)}


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def check_tenant(name: str, what: str = "graph") -> str:
    if not TENANT_NAME.match(name):
        raise ConfigError(f"invalid {what} name {name[:80]!r}: use letters, digits, '_', '.' "
                          "and '-' (at most 63, starting with a letter or digit)")
    return name


@dataclass(frozen=True)
class Reload:
    """What :meth:`TokenFile.reload` did: ``reloaded`` (the file's tokens are in use now) or
    ``refused`` (the file is unreadable or invalid: the tokens in use stay, ``reason`` says
    why)."""

    result: str
    tokens: int
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    """Tokens whose secret, scopes or graphs changed."""
    reason: str = ""


class TokenFile:
    """The tokens of one file; :meth:`find` compares digests in constant time. A file read
    by :meth:`load` (or written by :meth:`save`) is watched: :meth:`reload` reads it again
    when its modification time, size or inode changed (a running service calls it before
    every request, so a token added or removed works or is refused from the next request)."""

    def __init__(self, path: Path, tokens: list[Token]) -> None:
        self.path = path
        self.tokens = tokens
        self._stamp: tuple[int, int, int] | None = None
        """The file's (mtime ns, size, inode) when it was read or written (None: not
        watched)."""
        self._lock = threading.Lock()

    def _file_stamp(self) -> tuple[int, int, int] | None:
        try:
            info = self.path.stat()
        except OSError:
            return None
        return (info.st_mtime_ns, info.st_size, info.st_ino)

    def reload(self, *, force: bool = False) -> Reload | None:
        """Read the file again if it changed since it was read (or ``force``); None when
        nothing changed (or the file is not watched). A file that became invalid is refused
        once per change, and the tokens in use stay."""
        if self._stamp is None and not force:
            return None
        stamp = self._file_stamp()
        if stamp == self._stamp and not force:
            return None
        with self._lock:
            if self._file_stamp() == self._stamp and not force:
                return None  # another thread took it meanwhile
            try:
                fresh = TokenFile.load(self.path)
            except ConfigError as exc:
                self._stamp = stamp  # reported once; the next change is read again
                return Reload("refused", len(self.tokens), reason=str(exc))
            before = {t.name: t for t in self.tokens}
            after = {t.name: t for t in fresh.tokens}
            self.tokens = fresh.tokens
            self._stamp = fresh._stamp
            return Reload("reloaded", len(fresh.tokens),
                          tuple(sorted(after.keys() - before.keys())),
                          tuple(sorted(before.keys() - after.keys())),
                          tuple(sorted(n for n in after.keys() & before.keys()
                                       if after[n] != before[n])))

    @classmethod
    def load(cls, path: Path) -> TokenFile:
        """Read ``path``; refuse it when others may read it (it grants access to graphs)."""
        try:
            info = path.stat()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the token file: {exc.strerror}") from exc
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(f"{path}: the token file is readable by others (mode "
                              f"{stat.S_IMODE(info.st_mode):o}): chmod 600 {path}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            tokens = [_token(entry) for entry in data["tokens"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path}: not a kgdb token file ({exc})") from exc
        names = [t.name for t in tokens]
        if len(set(names)) != len(names):
            raise ConfigError(f"{path}: a token name is used twice")
        loaded = cls(path, tokens)
        loaded._stamp = (info.st_mtime_ns, info.st_size, info.st_ino)
        return loaded

    @classmethod
    def open_or_new(cls, path: Path) -> TokenFile:
        return cls.load(path) if path.exists() else cls(path, [])

    def find(self, secret: str) -> Token | None:
        wanted = digest(secret)
        found = None
        for token in self.tokens:
            if hmac.compare_digest(token.sha256, wanted):
                found = token
        return found

    def add(self, name: str, scopes: tuple[str, ...], graphs: tuple[str, ...], *,
            secret: str | None = None) -> str:
        """Add a token, write the file (mode 0600) and return its secret (a new random one
        unless ``secret`` is given: a token already configured elsewhere, e.g. apoc.conf)."""
        if not TOKEN_NAME.match(name):
            raise ConfigError(f"invalid token name {name[:80]!r}: letters, digits, '_.@-'")
        if any(t.name == name for t in self.tokens):
            raise ConfigError(f"{self.path}: a token named {name!r} exists; remove it first")
        if secret is not None and len(secret) < 16:
            raise ConfigError("a token must have at least 16 characters")
        secret = secret or "kgdb_" + secrets.token_urlsafe(32)
        self.tokens.append(_token({"name": name, "sha256": digest(secret),
                                   "scopes": list(scopes), "graphs": list(graphs)}))
        self.save()
        return secret

    def remove(self, name: str) -> None:
        if not any(t.name == name for t in self.tokens):
            raise ConfigError(f"{self.path}: no token named {name!r}")
        self.tokens = [t for t in self.tokens if t.name != name]
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump({"tokens": [t.to_json() for t in self.tokens]}, out, indent=2)
        os.chmod(temporary, 0o600)
        os.replace(temporary, self.path)
        self._stamp = self._file_stamp()


def _token(entry: dict[str, Any]) -> Token:
    scopes = tuple(entry["scopes"])
    graphs = tuple(entry["graphs"])
    bad = [s for s in scopes if s not in SCOPES]
    if bad or not scopes:
        raise ValueError(f"token {entry.get('name')!r}: scopes must be among {SCOPES}")
    if not graphs:
        raise ValueError(f"token {entry.get('name')!r}: name at least one graph (or '*')")
    for graph in graphs:
        if graph != ANY_GRAPH:
            check_tenant(str(graph))
    if not re.fullmatch(r"[0-9a-f]{64}", str(entry["sha256"])):
        raise ValueError(f"token {entry.get('name')!r}: sha256 is not a hex digest")
    return Token(str(entry["name"]), str(entry["sha256"]), scopes, graphs)
