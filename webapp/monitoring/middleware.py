"""Times every HTTP request and files it under its view's URL name (``<unresolved>`` for 404s
before routing), so latency is per page or endpoint rather than per raw path."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from webapp.monitoring.metrics import HTTP_LATENCY

KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestLatencyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        start = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        view = match.view_name if match is not None else "<unresolved>"
        method = request.method if request.method in KNOWN_METHODS else "other"  # clients pick it
        HTTP_LATENCY.labels(view=view, method=method, status=str(response.status_code)).observe(
            time.perf_counter() - start
        )
        return response
