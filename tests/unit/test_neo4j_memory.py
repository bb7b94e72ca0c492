"""`kgdb neo4j start --heap auto --pagecache auto`: Neo4j's own sizing rule, the page cache
capped by the store (kgdb/engine/neo4j_memory.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kgdb.cli import cli
from kgdb.engine import neo4j_memory as mem

GIB, MIB = mem.GIB, mem.MIB


@pytest.mark.parametrize(("machine", "heap", "pagecache"), [
    # neo4j-admin server memory-recommendation --memory=<machine> of Neo4j 5.26.5, run here
    # (it prints the heap rounded to 100m: 3600m for 3584m)
    (24 * GIB, 8 * GIB, 10 * GIB),
    (8 * GIB, 3584 * MIB, 2 * GIB),
    (4 * GIB, 2 * GIB, 512 * MIB),
])
def test_neo4j_rule_matches_neo4j_admin(machine: int, heap: int, pagecache: int) -> None:
    _, got_heap, got_pagecache = mem.neo4j_recommendation(machine)
    assert (got_heap, got_pagecache) == (heap, pagecache)


def test_interpolates_between_brackets_and_caps_the_heap() -> None:
    os_reserve, heap, _ = mem.neo4j_recommendation(20 * GIB)  # between 16 (4, 5) and 24 (6, 8)
    assert (os_reserve, heap) == (5 * GIB, 6656 * MIB)
    assert mem.neo4j_recommendation(4096 * GIB)[1] == 31 * GIB


def test_pagecache_is_the_store_and_growth_within_neo4js(tmp_path: Path) -> None:
    empty = mem.plan(tmp_path, memory=24 * GIB)
    assert (empty.heap, empty.pagecache, empty.store) == (8 * GIB, mem.MIN_PAGECACHE, 0)
    store = tmp_path / "data" / "databases" / "neo4j"
    store.mkdir(parents=True)
    with open(store / "neostore.nodestore.db", "wb") as f:
        f.truncate(2 * GIB)  # sparse: a size on disk without the bytes
    grown = mem.plan(tmp_path, memory=24 * GIB)
    assert grown.store == 2 * GIB and grown.pagecache == 2560 * MIB
    assert mem.plan(tmp_path, memory=8 * GIB).pagecache == 2 * GIB  # Neo4j's cap
    # the plugin's quarter of an 8g heap: 926k 384-d rows as float32, 5.3 M as int8
    assert (grown.float32_rows, grown.int8_rows) == (925_639, 5_368_709)
    assert "heap 8g, page cache 2560m" in grown.summary()
    assert mem.jvm_size(3584 * MIB) == "3584m" and mem.jvm_size(8 * GIB) == "8g"


@pytest.mark.parametrize("args", [["--heap", "lots"], ["--memory", "auto"], ["--pagecache", "0g"]])
def test_bad_sizes_are_one_line_usage_errors(args: list[str], tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["neo4j", "start", "--home", str(tmp_path / "n"), *args])
    assert done.exit_code == 2, done.output
    assert "Traceback" not in done.output
    assert "size like" in done.output
