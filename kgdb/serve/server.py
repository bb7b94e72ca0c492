"""Running the service under uvicorn: SIGTERM drains, SIGHUP re-reads the token file.

On the first SIGTERM (or Ctrl-C) the application's :class:`~kgdb.serve.streaming.Drain`
begins (``/readyz`` answers 503 ``draining``, streams learn when they must end) and uvicorn
stops accepting connections and waits up to ``grace`` seconds for the requests in flight
(``timeout_graceful_shutdown``); a second signal stops at once.
"""

from __future__ import annotations

import math
import signal
from typing import Any

import uvicorn


class DrainingServer(uvicorn.Server):
    """uvicorn's server, telling the application when its drain begins."""

    def __init__(self, config: uvicorn.Config, app: Any, grace: float) -> None:
        super().__init__(config)
        self.kgdb_app = app
        self.grace = grace

    def handle_exit(self, sig: int, frame: Any) -> None:
        drain = self.kgdb_app.state.drain
        if drain.draining:
            self.force_exit = True  # a second signal: now
        else:
            drain.begin(self.grace)
        super().handle_exit(sig, frame)


def run(app: Any, *, host: str, port: int, grace: float) -> None:
    """Serve ``app`` on ``host:port`` until SIGTERM or SIGINT (see the module docstring)."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            timeout_graceful_shutdown=max(1, math.ceil(grace)))
    server = DrainingServer(config, app, grace)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, lambda *_: app.state.reload_tokens("signal"))
    server.run()
