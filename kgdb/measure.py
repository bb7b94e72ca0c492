"""How kgdb measures: one percentile definition and one timer for every benchmark and every
phase timing, so that figures from different commands compare."""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile (0 < p <= 100): the smallest value with at least
    ``p`` percent of the values at or below it (NIST's definition; p50 of an even count is the
    lower middle value, never an average, so every figure is a measured one)."""
    if not values:
        raise ValueError("no values")
    if not 0 < p <= 100:
        raise ValueError(f"a percentile is in (0, 100], not {p}")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def summary(values: Sequence[float], *, digits: int = 3) -> dict[str, float]:
    """``p50``, ``p90``, ``p99``, ``mean`` and ``max`` of ``values`` (empty: ``{}``)."""
    if not values:
        return {}
    return {"p50": round(percentile(values, 50), digits),
            "p90": round(percentile(values, 90), digits),
            "p99": round(percentile(values, 99), digits),
            "mean": round(statistics.fmean(values), digits),
            "max": round(max(values), digits)}


class Timings(dict[str, float]):
    """Milliseconds per named phase; ``with timings.phase("match"):`` adds to a phase."""

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self[name] = self.get(name, 0.0) + elapsed_ms(start)


def elapsed_ms(start: float) -> float:
    """Milliseconds since ``start`` (a :func:`time.perf_counter` reading)."""
    return (time.perf_counter() - start) * 1000


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or the platform's processor string."""
    import platform

    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def load_average() -> list[float] | None:
    """The 1/5/15-minute load averages: other work on the machine, beside every figure."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None
