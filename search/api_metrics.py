"""Prometheus metrics of the HTTP API (`GET /metrics`), through prometheus-client.

prometheus-client is the Prometheus project's own Python client: the text format, histograms
and the multi-process mode that `--workers N` needs, with nothing else. Its FastAPI wrapper,
prometheus-fastapi-instrumentator, adds only the request middleware, which is twenty lines
here, and a second dependency.

What it exports (names and labels are a contract for dashboards; docs/api.md lists them):
- `semsearch_http_requests_total{route, method, status}` and
  `semsearch_http_request_duration_seconds{route, method}`: every request, labelled by its
  route's template (`/search`, not the query), "unmatched" for paths the API does not have, so
  that a scanner cannot grow the label set.
- `semsearch_search_stage_seconds{stage}`: encode, retrieve and rerank of every search (a batch
  counts each of its queries).
- Read when scraped, from the index's newest build: `semsearch_collection_documents`,
  `semsearch_collection_passages` and `semsearch_collection_info{build_id, model, index_type}`
  per `collection` (the index folder's name), and `semsearch_index_state{collection, state}`
  (1 for the state /health reports: loading, ready, missing or unreadable) with
  `semsearch_model_loaded{collection}`, for every collection the service serves.
- `semsearch_writes_total{collection, op}`: documents written over HTTP and committed, by op:
  added, updated, unchanged (sent again as stored: left alone), deleted.

With `--workers N`, `python -m search.api` points PROMETHEUS_MULTIPROC_DIR at a fresh folder
before the workers start, and every worker's counters and histograms are summed into each
scrape (prometheus-client's multi-process mode); the gauges read at scrape time come from the
worker that answers, which serves the same index as the others.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from search.hits import SearchResult

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
INDEX_STATES = ("loading", "ready", "missing", "unreadable")
# Latency buckets from 5 ms (a cached BM25 search) to 30 s (a reranked batch on a busy CPU).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


Figures = tuple[str, str, bool, Any]


class CollectionFigures(Collector):
    """The gauges read when scraped: `figures()` returns, for every collection, (its name, state,
    model loaded, stats or None), stats having documents, passages, build_id, model_label and
    vector_index."""

    def __init__(self, figures: Callable[[], list[Figures]]) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Any]:
        every = self.figures()
        states = GaugeMetricFamily("semsearch_index_state", "1 for the state /health reports for the index",
                                   labels=["collection", "state"])
        loaded = GaugeMetricFamily("semsearch_model_loaded", "1 once the index's bi-encoder has loaded",
                                   labels=["collection"])
        documents = GaugeMetricFamily("semsearch_collection_documents", "documents in the newest build",
                                      labels=["collection"])
        passages = GaugeMetricFamily("semsearch_collection_passages", "passages in the newest build",
                                     labels=["collection"])
        info = InfoMetricFamily("semsearch_collection", "the newest build: its id, model and vector index",
                                labels=["collection"])
        for name, state, model_loaded, stats in every:
            for each in INDEX_STATES:
                states.add_metric([name, each], 1.0 if each == state else 0.0)
            loaded.add_metric([name], 1.0 if model_loaded else 0.0)
            if stats is None:
                continue
            documents.add_metric([name], float(stats.documents))
            passages.add_metric([name], float(stats.passages))
            info.add_metric([name], {"build_id": str(stats.build_id), "model": str(stats.model_label),
                                     "index_type": str(stats.vector_index)})
        yield from (states, loaded, documents, passages, info)


class ApiMetrics:
    """The service's metrics and their registry. One per app: tests build many apps in one process."""

    def __init__(self, figures: Callable[[], list[Figures]]) -> None:
        self.registry = CollectorRegistry()
        multiprocess = bool(os.environ.get(MULTIPROC_ENV))
        own = None if multiprocess else self.registry  # multi-process values live in files, summed at scrape
        self.requests = Counter("semsearch_http_requests", "HTTP requests answered",
                                ["route", "method", "status"], registry=own)
        self.latency = Histogram("semsearch_http_request_duration_seconds", "time to answer an HTTP request",
                                 ["route", "method"], buckets=BUCKETS, registry=own)
        self.stages = Histogram("semsearch_search_stage_seconds", "time of each stage of a search",
                                ["stage"], buckets=BUCKETS, registry=own)
        self.writes = Counter("semsearch_writes", "documents written over HTTP, by collection and op: "
                              "added, updated, unchanged (sent again as stored), deleted",
                              ["collection", "op"], registry=own)
        if multiprocess:
            from prometheus_client import multiprocess as mp

            mp.MultiProcessCollector(self.registry)
        self.registry.register(CollectionFigures(figures))

    def observe_search(self, result: SearchResult) -> None:
        timings = result.timings
        for stage, seconds in (("encode", timings.encode_s), ("retrieve", timings.retrieve_s),
                               ("rerank", timings.rerank_s)):
            self.stages.labels(stage).observe(seconds)

    def count_writes(self, collection: str, counts: dict[str, int]) -> None:
        """Count one committed write's documents, by op."""
        for op, count in counts.items():
            if count:
                self.writes.labels(collection, op).inc(count)

    def exposition(self) -> tuple[bytes, str]:
        """(the scrape's body, its content type)."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class RequestMetrics:
    """ASGI middleware: counts and times every HTTP request by its matched route template."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None) or "unmatched"
            method = scope.get("method", "")
            self.metrics.requests.labels(path, method, str(status)).inc()
            self.metrics.latency.labels(path, method).observe(time.perf_counter() - started)
