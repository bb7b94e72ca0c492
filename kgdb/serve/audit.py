"""The service's audit log: one JSON object per line for every request (who, which graph,
which endpoint and solver, the status, how long), token-file reloads and shutdowns.

Records go to the logger ``kgdb.audit`` (at INFO; a host application configures it as it
likes) and, when the server is given a file, to that file: created owner-only, appended to,
reopened when logrotate moves it away (:class:`logging.handlers.WatchedFileHandler`). The
token's secret is never written, the question only when the server is told to
(``--audit-questions``)."""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import sys
import time
from pathlib import Path
from typing import Any

LOGGER = "kgdb.audit"


class _PrivateFileHandler(logging.handlers.WatchedFileHandler):
    """A WatchedFileHandler whose file (and every file it reopens) is mode 0600: the log
    names tokens and graphs."""

    def _open(self) -> Any:
        descriptor = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return os.fdopen(descriptor, "a", encoding=self.encoding or "utf-8")


class Audit:
    """Writes audit records (see the module docstring). Each instance has its own file; the
    logger is shared (several services in one process each write their own file)."""

    def __init__(self, path: Path | str | None = None, *, questions: bool = False) -> None:
        self.questions = questions
        """Whether request records carry the question's text."""
        self.log = logging.getLogger(LOGGER)
        self.log.setLevel(logging.INFO)
        self._handler: logging.Handler | None = None
        if path is not None:
            if str(path) == "-":
                self._handler = logging.StreamHandler(sys.stderr)
            else:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                self._handler = _PrivateFileHandler(str(path), encoding="utf-8")
            self._handler.setFormatter(logging.Formatter("%(message)s"))

    def write(self, event: str, **fields: Any) -> None:
        now = time.time()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
        line = json.dumps({"time": stamp, "event": event, **fields}, ensure_ascii=False,
                          default=str)
        if self._handler is not None:
            self._handler.handle(self.log.makeRecord(LOGGER, logging.INFO, __file__, 0, line,
                                                     (), None))
        self.log.info(line)

    def close(self) -> None:
        if self._handler is not None:
            self._handler.close()
            self._handler = None
