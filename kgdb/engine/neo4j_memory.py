"""Heap and page cache for ``kgdb neo4j start --heap auto --pagecache auto`` (the default).

Neo4j's own rule first: ``neo4j-admin server memory-recommendation`` (class
``org.neo4j.dbms.MemoryRecommendation`` in Neo4j 5.26) reads a table of (machine memory, OS
reserve, heap) points in GiB and interpolates linearly between the two around the machine's
memory; the page cache gets what is left. kgdb takes its heap as is and caps its page cache at
what the graph needs: the store's files plus a quarter for growth (Neo4j's knowledge base,
"How to estimate initial memory configuration": store size + expected growth + 10%), never
under 512 MiB; memory the page cache does not need is left to the OS (whose file cache then
holds the rest of the store). The plugin's vector copies live in the heap
(``kgdb.vectors.heap_share`` of it, a quarter unless set): :func:`plan` says how many 384-d
rows fit as float32 and as int8. See docs/engines/neo4j.md, "Memory".
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

GIB = 1 << 30
MIB = 1 << 20

NEO4J_BRACKETS: tuple[tuple[float, float, float], ...] = (
    (0.01, 0.007, 0.002), (1.0, 0.65, 0.3), (2.0, 1.0, 0.5), (4.0, 1.5, 2.0), (6.0, 2.0, 3.0),
    (8.0, 2.5, 3.5), (10.0, 3.0, 4.0), (12.0, 3.5, 4.5), (16.0, 4.0, 5.0), (24.0, 6.0, 8.0),
    (32.0, 8.0, 12.0), (64.0, 12.0, 24.0), (128.0, 16.0, 31.0), (256.0, 20.0, 31.0),
    (512.0, 24.0, 31.0), (1024.0, 30.0, 31.0),
)
"""(machine GiB, OS reserve GiB, heap GiB): the data points of Neo4j 5.26's
MemoryRecommendation (the heap never beyond 31 GiB, where compressed object pointers end)."""

MIN_PAGECACHE = 512 * MIB
"""kgdb's page cache before this rule (and the floor: the system database and the indexes)."""
STORE_GROWTH = 1.25
"""The page cache holds the store and a quarter more (growth, and the 10% of Neo4j's rule)."""
FLOAT32_ROW_BYTES_384 = (384 + 192 + 2) * 4 + 8
"""A 384-d row of the plugin's float copy: its floats, its 192-axis screen, its node id."""
INT8_ROW_BYTES_384 = 384 + 8 + 8
"""A 384-d row of the plugin's int8 copy: its codes, two floats, its node id."""
DEFAULT_HEAP_SHARE = 0.25


def _mebibytes(gib: float) -> int:
    # Neo4j rounds each recommendation down to whole MiB
    return int(gib * 1024.0) * MIB


def neo4j_recommendation(total_bytes: int) -> tuple[int, int, int]:
    """(OS reserve, heap, page cache) in bytes, as ``neo4j-admin server
    memory-recommendation --memory=<total>`` computes them."""
    gib = total_bytes / GIB
    lower = upper = NEO4J_BRACKETS[-1]
    for i in range(1, len(NEO4J_BRACKETS)):
        if gib < NEO4J_BRACKETS[i][0]:
            lower, upper = NEO4J_BRACKETS[i - 1], NEO4J_BRACKETS[i]
            break
    factor = 0.0 if lower == upper else (gib - lower[0]) / (upper[0] - lower[0])
    os_bytes = _mebibytes(lower[1] + (upper[1] - lower[1]) * factor)
    heap = _mebibytes(lower[2] + (upper[2] - lower[2]) * factor)
    pagecache = min(max(8 * MIB, total_bytes - os_bytes - heap), 16 << 40)
    return os_bytes, heap, pagecache


def machine_memory() -> int:
    """The machine's physical memory in bytes (what neo4j-admin assumes is Neo4j's)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def store_bytes(home: Path) -> int:
    """Bytes of the databases' store files under a Neo4j home (data/databases; the
    transaction logs are not paged)."""
    root = home / "data" / "databases"
    total = 0
    if root.is_dir():
        for path in root.rglob("*"):
            try:
                if path.is_file() and not path.is_symlink():
                    total += path.stat().st_size
            except OSError:
                continue
    return total


def jvm_size(n: int) -> str:
    """A size for -Xmx and server.memory.pagecache.size: whole MiB (g when whole GiB)."""
    mib = max(1, n // MIB)
    return f"{mib // 1024}g" if mib % 1024 == 0 else f"{mib}m"


@dataclass(frozen=True)
class MemoryPlan:
    """What ``kgdb neo4j start`` gives Neo4j, and why."""

    machine: int
    os_reserve: int
    neo4j_heap: int
    neo4j_pagecache: int
    store: int
    heap: int
    pagecache: int
    heap_share: float

    @property
    def float32_rows(self) -> int:
        """384-d vectors whose float copy fits the plugin's share of this heap."""
        return int(self.heap * self.heap_share) // FLOAT32_ROW_BYTES_384

    @property
    def int8_rows(self) -> int:
        """384-d vectors whose int8 copy fits the plugin's share of this heap."""
        return int(self.heap * self.heap_share) // INT8_ROW_BYTES_384

    def summary(self) -> str:
        return (f"heap {jvm_size(self.heap)}, page cache {jvm_size(self.pagecache)} (Neo4j's "
                f"rule for {jvm_size(self.machine)}: heap {jvm_size(self.neo4j_heap)}, page cache "
                f"{jvm_size(self.neo4j_pagecache)}; store {jvm_size(self.store)}); the plugin's "
                f"vector copies fit {self.float32_rows:,} 384-d rows as float32, "
                f"{self.int8_rows:,} as int8")

    def as_dict(self) -> dict[str, object]:
        return {"machine_bytes": self.machine, "os_reserve_bytes": self.os_reserve,
                "neo4j_heap_bytes": self.neo4j_heap,
                "neo4j_pagecache_bytes": self.neo4j_pagecache, "store_bytes": self.store,
                "heap": jvm_size(self.heap), "pagecache": jvm_size(self.pagecache),
                "vector_heap_share": self.heap_share, "float32_rows_384": self.float32_rows,
                "int8_rows_384": self.int8_rows}


def plan(home: Path, *, memory: int | None = None,
         heap_share: float = DEFAULT_HEAP_SHARE) -> MemoryPlan:
    """Neo4j's heap for the machine (or ``memory`` bytes); a page cache of the store plus
    growth, at least :data:`MIN_PAGECACHE`, at most Neo4j's own recommendation."""
    total = memory if memory is not None else machine_memory()
    os_reserve, heap, pagecache = neo4j_recommendation(total)
    store = store_bytes(home)
    wanted = -(-int(store * STORE_GROWTH) // (64 * MIB)) * 64 * MIB  # up to a 64 MiB step
    chosen = min(pagecache, max(MIN_PAGECACHE, wanted))
    return MemoryPlan(total, os_reserve, heap, pagecache, store, max(heap, 256 * MIB), chosen,
                      heap_share)
