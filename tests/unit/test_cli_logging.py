"""The CLI's log handler: warnings on the standard error of the moment, audit records not."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from kgdb.cli import _configure_logging
from kgdb.serve.audit import Audit


@pytest.fixture
def kgdb_logger():
    logger = logging.getLogger("kgdb")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield logger
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]


def test_records_go_to_the_stderr_of_the_moment_not_a_closed_one(
        kgdb_logger, monkeypatch: pytest.MonkeyPatch) -> None:
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    _configure_logging()
    _configure_logging()  # a second run in the same process adds no second handler
    first.close()
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    kgdb_logger.warning("the graph went away")
    assert second.getvalue() == "kgdb: WARNING: the graph went away\n"


def test_audit_records_stay_off_the_cli_stderr(kgdb_logger,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    _configure_logging()
    Audit(None).write("request", token="alice", status=200)
    assert err.getvalue() == ""
    Audit("-").write("request", token="alice", status=200)
    assert '"token": "alice"' in err.getvalue()
    assert "kgdb: INFO" not in err.getvalue()
