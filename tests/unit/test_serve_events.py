"""Server-sent events and the token file's reload, without a server (issue 35)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx

from kgdb.serve.streaming import event
from kgdb.serve.tokens import TokenFile


def test_no_line_separator_goes_out_raw() -> None:
    """U+2028, U+2029 and U+0085 in a value are JSON escapes: a client splitting lines
    there (httpx's iter_lines, str.splitlines) still reads one event with one data line."""
    text = "a\u2028event: done\u2029data: {}\u0085b\r\nc"
    raw = event("token", {"text": text})
    assert not any(ch in raw.decode() for ch in "\u2028\u2029\u0085")
    lines = [line for line in httpx.Response(200, content=raw).iter_lines() if line]
    assert lines[0] == "event: token" and len(lines) == 2
    assert json.loads(lines[1][len("data: "):]) == {"text": text}


def test_reload_sees_adds_removes_and_refuses_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    writer = TokenFile(path, [])
    writer.add("a", ("read",), ("g",))
    served = TokenFile.load(path)
    assert served.reload() is None  # unchanged
    TokenFile.load(path).add("b", ("read",), ("g",))
    done = served.reload()
    assert done is not None and (done.result, done.added, done.removed) == (
        "reloaded", ("b",), ())
    assert [t.name for t in served.tokens] == ["a", "b"]
    os.chmod(path, 0o644)  # readable by others: refused, the tokens in use stay
    os.utime(path, ns=(1, 1))
    refused = served.reload()
    assert refused is not None and refused.result == "refused" and "readable by others" \
        in refused.reason
    assert served.reload() is None  # reported once per change
    assert [t.name for t in served.tokens] == ["a", "b"]
    os.chmod(path, 0o600)
    loaded = TokenFile.load(path)
    loaded.remove("a")
    done = served.reload()
    assert done is not None and done.removed == ("a",)
    assert [t.name for t in served.tokens] == ["b"]
    assert TokenFile(path, []).reload() is None  # a file never read is not watched
