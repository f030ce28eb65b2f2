"""``/metrics``: the Prometheus exposition, for allowed scrapers only (see :mod:`.access`)."""

from __future__ import annotations

import os
from functools import cache

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from webapp.monitoring.access import may_scrape, metrics_enabled
from webapp.monitoring.collectors import DatabaseCollector


@cache
def scrape_registry() -> CollectorRegistry:
    """This process's metrics (or every process's, with ``PROMETHEUS_MULTIPROC_DIR``) plus the
    database's, read at each scrape."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)
    else:
        registry.register(REGISTRY)
    registry.register(DatabaseCollector())
    return registry


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not metrics_enabled():
        raise Http404("metrics are off: set GRIDACE_METRICS_ALLOWED_IPS or GRIDACE_METRICS_TOKEN")
    if not may_scrape(request):
        return HttpResponseForbidden(
            "metrics: this address is not in GRIDACE_METRICS_ALLOWED_IPS and no valid bearer token was sent",
            content_type="text/plain",
        )
    return HttpResponse(generate_latest(scrape_registry()), content_type=CONTENT_TYPE_LATEST)
