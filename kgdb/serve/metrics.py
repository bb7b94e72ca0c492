"""The service's Prometheus metrics (``GET /metrics``), written by ``prometheus_client``.

Each application has its own registry (two apps in one process, as in the tests, never share
counters). The names and labels are a contract with dashboards and the load test: they are
listed in docs/operations.md and changed only with it. Labels never carry a graph name, a
token or a question (unbounded, and another tenant's business).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from kgdb.graph_cache import CacheStats

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Seconds: from a kept-graph ``ppr`` retrieval (milliseconds: docs/design/ppr-latency.md)
to a streamed LLM answer near the default ``--timeout`` (30 s) and beyond it."""

NO_SOLVER = "none"
OTHER_ENDPOINT = "other"


class Metrics:
    """The metrics of one service (see docs/operations.md for each)."""

    def __init__(self, caches: Callable[[], Iterable[CacheStats]]) -> None:
        self.registry = registry = CollectorRegistry()
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
        self.requests = Counter(
            "kgdb_http_requests", "Requests answered, by endpoint, method, solver and status.",
            ["endpoint", "method", "solver", "status"], registry=registry)
        self.duration = Histogram(
            "kgdb_http_request_duration_seconds",
            "Time from a request's first byte to its response's last, by endpoint and solver.",
            ["endpoint", "solver"], buckets=BUCKETS, registry=registry)
        self.in_flight = Gauge("kgdb_http_requests_in_flight", "Requests being answered now.",
                               registry=registry)
        self.errors = Counter(
            "kgdb_http_errors", "Requests that failed on the server's side (status >= 500, "
            "streams ending with an error event of such a status).", ["endpoint", "status"],
            registry=registry)
        self.llm_requests = Counter("kgdb_llm_requests", "Requests sent to the LLM.",
                                    ["endpoint"], registry=registry)
        self.llm_tokens = Counter(
            "kgdb_llm_tokens", "LLM tokens as its usage reports them (in: prompt, out: "
            "completion).", ["endpoint", "direction"], registry=registry)
        self.disconnects = Counter(
            "kgdb_stream_disconnects", "Streamed answers whose client went away before the "
            "end (the LLM request is cancelled).", registry=registry)
        self.tokens = Gauge("kgdb_tokens", "Tokens in the token file the server uses.",
                            registry=registry)
        self.token_reloads = Counter(
            "kgdb_token_reloads", "Reads of a changed token file: reloaded or refused.",
            ["result"], registry=registry)
        self.draining = Gauge("kgdb_draining", "1 once the server was told to stop and is "
                              "finishing its requests.", registry=registry)
        for result in ("reloaded", "refused"):
            self.token_reloads.labels(result)
        registry.register(_CacheCollector(caches))

    def observe(self, endpoint: str, method: str, solver: str | None, status: int,
                seconds: float) -> None:
        solver = solver or NO_SOLVER
        self.requests.labels(endpoint, method, solver, str(status)).inc()
        self.duration.labels(endpoint, solver).observe(seconds)
        if status >= 500:
            self.errors.labels(endpoint, str(status)).inc()

    def llm(self, endpoint: str, requests: int, tokens_in: int, tokens_out: int) -> None:
        if requests:
            self.llm_requests.labels(endpoint).inc(requests)
        if tokens_in:
            self.llm_tokens.labels(endpoint, "in").inc(tokens_in)
        if tokens_out:
            self.llm_tokens.labels(endpoint, "out").inc(tokens_out)

    def render(self) -> tuple[bytes, str]:
        """The exposition text and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class _CacheCollector(Collector):
    """The caches' counts, read when scraped (the caches count for themselves)."""

    def __init__(self, caches: Callable[[], Iterable[CacheStats]]) -> None:
        self.caches = caches

    def collect(self) -> Iterable[Any]:
        hits = CounterMetricFamily("kgdb_cache_hits", "Lookups a cache answered.",
                                   labels=["cache"])
        misses = CounterMetricFamily("kgdb_cache_misses", "Lookups a cache did not answer "
                                     "(the value was read or computed).", labels=["cache"])
        evictions = CounterMetricFamily("kgdb_cache_evictions", "Entries dropped to stay "
                                        "within a cache's size.", labels=["cache"])
        entries = GaugeMetricFamily("kgdb_cache_entries", "Entries a cache holds now.",
                                    labels=["cache"])
        for s in self.caches():
            hits.add_metric([s.name], s.hits)
            misses.add_metric([s.name], s.misses)
            evictions.add_metric([s.name], s.evictions)
            entries.add_metric([s.name], s.entries)
        return [hits, misses, evictions, entries]
