"""The ``/api/v1/`` application: routers, docs, errors, the audit of writes and the security log
of refusals (rate limits are checked by the auth, see :mod:`webapp.api.auth`).

Served at ``/api/v1/``: the OpenAPI 3 schema at ``openapi.json`` and the browsable docs at
``docs`` (Swagger UI from django-ninja's own static files, no CDN and no inline script), both
readable without a token; every operation needs ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, re_path
from ninja import NinjaAPI
from ninja.openapi.docs import Swagger
from ninja.parser import Parser

from webapp.api.endpoints import audit, deployments, evaluations, me, mines, operations, review, training
from webapp.api.errors import error_body, install_handlers
from webapp.api.models import ApiToken
from webapp.api.services import refusal_record, token_use_record

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def _refusal_message(response: HttpResponse) -> str:
    try:
        return str(json.loads(response.content).get("error", ""))
    except (ValueError, AttributeError):
        return ""


def audit_writes(run: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Around every operation: a state-changing request made with a token and carried out is
    audited with the token, the path and the answer's status. Refused and throttled requests
    (4xx) go to the bounded security log instead: a client can make those as fast as it likes,
    and the audit log keeps every row forever."""

    @functools.wraps(run)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = run(request, *args, **kwargs)
        token = getattr(request, "auth", None)
        token = token if isinstance(token, ApiToken) else None
        if 400 <= response.status_code < 500:
            refusal_record(
                request=request, token=token, status=response.status_code, detail=_refusal_message(response)
            )
        elif request.method not in SAFE_METHODS and token is not None:
            token_use_record(
                token=token, method=request.method, path=request.path, status=response.status_code
            )
        return response

    return wrapper


class JsonObjectParser(Parser):
    """Bodies are JSON objects: anything else (a list, a number) is refused, not read as empty."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        data = json.loads(request.body)
        if not isinstance(data, dict):
            raise ValueError(f"the body is a JSON {type(data).__name__}, not an object")
        return data


class GridAceApi(NinjaAPI):
    def get_openapi_operation_id(self, operation: Any) -> str:
        # short, stable ids for generated clients: the endpoint function's name
        return operation.view_func.__name__


api = GridAceApi(
    title="GridACE API",
    version="1",
    description=(
        "Decision support for power-grid control: live sessions (start, control, their "
        "recommendations and alarms), training runs, their evaluations and deployment, mines of "
        "expert decisions, the review of LLM refinements, the audit log.\n\n"
        "Authenticate with a personal API token (create one on the **API tokens** page): "
        "`Authorization: Bearer gat_...`. Each operation needs the permission named in its "
        "`x-gridace-permission`, the same the pages need. Every refusal is "
        '`{"error": ..., "field": ..., "accepted": ...}`.'
    ),
    urls_namespace="api_v1",
    openapi_url="/openapi.json",
    docs_url="/docs",
    docs=Swagger(settings={"persistAuthorization": False}),
    parser=JsonObjectParser(),
)
install_handlers(api)
api.add_decorator(audit_writes, mode="view")
for module in (operations, training, evaluations, mines, deployments, review, audit, me):
    api.add_router("/", module.router)


def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    """Any other path under /api/v1/: a 404 in the API's error shape, not the site's HTML page."""
    body = error_body(f"no API operation at {request.path}", accepted="the paths of /api/v1/openapi.json")
    return JsonResponse(body, status=404)


def json_not_allowed(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """django-ninja answers a method a path does not have with a plain-text 405: give it the
    API's error shape (keeping the Allow header)."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = view(request, *args, **kwargs)
        if response.status_code != 405 or response.get("Content-Type", "").startswith("application/json"):
            return response
        allowed = response.get("Allow", "")
        refused = JsonResponse(
            error_body(f"{request.method} is not allowed here", accepted=allowed), status=405
        )
        refused["Allow"] = allowed
        return refused

    return wrapper


def urls() -> tuple[list, str, str]:
    """The API's URL patterns (405s in the error shape) with the JSON 404 after them, for
    ``webapp.urls``."""
    patterns, app_name, namespace = api.urls
    wrapped = [
        URLPattern(p.pattern, json_not_allowed(p.callback), p.default_args, p.name)
        if not inspect.iscoroutinefunction(p.callback)
        else p
        for p in patterns
    ]
    return [*wrapped, re_path(r"^(?P<rest>.*)$", not_found, name="not_found")], app_name, namespace
