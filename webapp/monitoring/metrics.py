"""The metrics each process observes itself: HTTP latency, open websockets, LLM calls.

They live in prometheus_client's default registry. With several processes on one machine (daphne
and ``db_worker``s), set ``PROMETHEUS_MULTIPROC_DIR`` to one writable folder for all of them
(emptied when they start): each process writes its values there and ``/metrics`` sums them up.
Without it, ``/metrics`` shows the web process's own values: right for HTTP and websockets (they
happen there), and for LLM calls only when the worker runs inside the web process.

What the database knows (runs, queues, heartbeats, live sessions, recommendation latency) is read
at scrape time instead, by :mod:`webapp.monitoring.collectors`, so it is right whichever process
or machine wrote it.
"""

from __future__ import annotations

import re

from prometheus_client import Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
LLM_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

HTTP_LATENCY = Histogram(
    "gridace_http_request_duration_seconds",
    "Time to answer an HTTP request, by view (the URL name), method and status code",
    ["view", "method", "status"],
    buckets=LATENCY_BUCKETS,
)
WEBSOCKETS = Gauge(
    "gridace_websockets_connected",
    "Websockets open now, by route",
    ["route"],
    multiprocess_mode="livesum",
)
LLM_LATENCY = Histogram(
    "gridace_llm_call_duration_seconds",
    "Time of an LLM call (chat or label scoring), failed ones included",
    ["backend", "call"],
    buckets=LLM_BUCKETS,
)
LLM_ERRORS = Counter(
    "gridace_llm_call_errors",
    "LLM calls that raised, by exception class",
    ["backend", "call", "error"],
)

_ID_IN_PATH = re.compile(r"/\d+(?=/|$)")


def websocket_route(path: str) -> str:
    """The route of a websocket path, ids replaced (``/ws/live/7/`` -> ``/ws/live/<id>/``), so
    that the label's values stay few."""
    return _ID_IN_PATH.sub("/<id>", path)


def websocket_opened(path: str) -> None:
    WEBSOCKETS.labels(route=websocket_route(path)).inc()


def websocket_closed(path: str) -> None:
    WEBSOCKETS.labels(route=websocket_route(path)).dec()


def observe_llm_call(backend: str, call: str, seconds: float, error: BaseException | None) -> None:
    LLM_LATENCY.labels(backend=backend, call=call).observe(seconds)
    if error is not None:
        LLM_ERRORS.labels(backend=backend, call=call, error=type(error).__name__).inc()
