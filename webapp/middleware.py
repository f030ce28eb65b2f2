"""Oversized bodies sent to JSON endpoints get the JSON error shape.

Django refuses a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` when it is first read, with its HTML
400 page. A request that speaks JSON (the API under ``/api/``, or one that sends or accepts JSON,
as the live console's buttons do) is answered ``413 {"error", "field", "accepted"}`` instead,
before anything reads the body.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse

JSON = "application/json"


def _speaks_json(request: HttpRequest) -> bool:
    return (
        request.path.startswith("/api/")
        or request.META.get("CONTENT_TYPE", "").startswith(JSON)
        or JSON in request.META.get("HTTP_ACCEPT", "")
    )


def _too_large(length: int | None, limit: int) -> JsonResponse:
    size = f"{length} bytes long" if length is not None else "too long"
    body = {"error": f"the request body is {size}", "field": None, "accepted": f"at most {limit} bytes"}
    return JsonResponse(body, status=413)


class JsonBodyLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and _speaks_json(request):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0  # Django answers a malformed length itself
            if length > limit:
                return _too_large(length, limit)
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """A body without a Content-Length that turned out too large while a view read it."""
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if isinstance(exception, RequestDataTooBig) and limit is not None and _speaks_json(request):
            return _too_large(None, limit)
        return None
