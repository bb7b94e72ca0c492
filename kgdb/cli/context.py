"""The store and embedder of one ``kgdb`` invocation, shared by every command module."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from kgdb.config import Settings
from kgdb.engine.base import GraphStore

F = TypeVar("F", bound=Callable[..., Any])


class Context:
    """Lazily opened store and embedder shared by the commands of one invocation."""

    def __init__(self, uri: str | None, graph: str | None, *, verbose: bool = False) -> None:
        self.settings = Settings.from_env(uri=uri, graph=graph)
        self.verbose = verbose
        self._store: GraphStore | None = None
        self._embedder: Any = None

    @property
    def store(self) -> GraphStore:
        if self._store is None:
            from kgdb.engine import connect

            self._store = connect(self.settings)
            if self.verbose:
                click.echo(f"kgdb: database: {self._store.address}", err=True)
        return self._store

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from kgdb.embed import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def current_context() -> Context:
    """The :class:`Context` of the running command (its ``--uri``/``--graph``). A command
    invoked outside the ``kgdb`` group (tests, embedding) gets one from the environment,
    closed with its click context."""
    ctx = click.get_current_context()
    found = ctx.find_object(Context)
    if found is not None:
        return found
    root = ctx.find_root()
    own = root.meta.get("kgdb.context")
    if own is None:
        own = root.meta["kgdb.context"] = Context(None, None)
        root.call_on_close(own.close)
    return own


def pass_context(func: F) -> F:
    """Pass the invocation's :class:`Context` as the first argument (the one way commands get
    the store, the embedder and the settings)."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(current_context(), *args, **kwargs)
    return wrapper  # type: ignore[return-value]
