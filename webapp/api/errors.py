"""One JSON shape for every refusal of the API: ``{"error": ..., "field": ..., "accepted": ...}``.

``error`` says what was wrong, ``field`` names the input at fault (or null), ``accepted`` says
what would be accepted (or null). The services' messages end with "; accepted: ..." where they
know: that part becomes ``accepted``. :func:`install_handlers` maps django-ninja's own refusals
(validation, authentication, throttling, 404) and the apps' errors onto this shape.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError, HttpError, Throttled
from ninja.errors import ValidationError as NinjaValidationError

from ace_core.errors import ConfigError
from webapp.operations.errors import (
    DecisionConflictError,
    OperationsError,
    SessionStateError,
    UnknownObjectError,
)

logger = logging.getLogger("webapp.api")


class ErrorOut(Schema):
    error: str
    field: str | None = None
    accepted: str | None = None


class TokenError(Exception):
    """A token that cannot be created, revoked or used; the message says why."""


class ApiError(Exception):
    """A refusal with its HTTP status, raised by the API layer itself."""

    def __init__(
        self, status: int, error: str, *, field: str | None = None, accepted: str | None = None
    ) -> None:
        super().__init__(error)
        self.status, self.error, self.field, self.accepted = status, error, field, accepted


def error_body(message: str, field: str | None = None, accepted: str | None = None) -> dict[str, Any]:
    if accepted is None and "; accepted: " in message:
        message, accepted = message.split("; accepted: ", 1)
    return {"error": message, "field": field, "accepted": accepted}


def _loc_field(loc: list[Any]) -> str | None:
    # loc is (where, [param model,] field...): keep the field path the client sent
    parts = [str(p) for p in loc[1:] if p not in ("payload", "filters")]
    return ".".join(parts) or None


ACCEPTED_BY_TYPE = {
    "literal_error": lambda ctx: ctx.get("expected"),
    "enum": lambda ctx: ctx.get("expected"),
    "greater_than_equal": lambda ctx: f">= {ctx.get('ge')}",
    "less_than_equal": lambda ctx: f"<= {ctx.get('le')}",
    "greater_than": lambda ctx: f"> {ctx.get('gt')}",
    "string_too_long": lambda ctx: f"at most {ctx.get('max_length')} characters",
    "int_parsing": lambda ctx: "an integer",
    "int_type": lambda ctx: "an integer",
    "float_parsing": lambda ctx: "a number",
    "dict_type": lambda ctx: "a JSON object",
    "model_attributes_type": lambda ctx: "a JSON object",
    "json_invalid": lambda ctx: "a JSON object",
    "extra_forbidden": lambda ctx: "only the keys the API documents (see /api/v1/docs)",
    "bool_type": lambda ctx: "true or false",
    "string_type": lambda ctx: "text",
    "float_type": lambda ctx: "a number",
}


def validation_body(errors: list[dict[str, Any]]) -> dict[str, Any]:
    """django-ninja's list of pydantic errors as one error: all messages, the first field. Unknown
    keys come first: ``{"speed": 1}`` for ``speed_seconds`` is a misspelt key more than a
    missing one."""
    errors = sorted(errors, key=lambda error: error.get("type") != "extra_forbidden")
    first = errors[0] if errors else {}
    field = _loc_field(list(first.get("loc", [])))
    accepted_of = ACCEPTED_BY_TYPE.get(first.get("type", ""))
    accepted = accepted_of(first.get("ctx") or {}) if accepted_of else None
    text = "; ".join(
        f"{_loc_field(list(e.get('loc', []))) or e.get('loc', ['body'])[0]}: {e.get('msg', 'invalid')}"
        for e in errors[:5]
    )
    return {"error": text or "invalid request", "field": field, "accepted": accepted}


def install_handlers(api: NinjaAPI) -> None:
    def respond(request: HttpRequest, body: dict[str, Any], status: int) -> HttpResponse:
        return api.create_response(request, body, status=status)

    @api.exception_handler(ApiError)
    def _api_error(request, exc: ApiError):
        response = respond(request, error_body(exc.error, exc.field, exc.accepted), exc.status)
        if exc.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="gridace"'
        return response

    @api.exception_handler(NinjaValidationError)
    def _validation(request, exc: NinjaValidationError):
        return respond(request, validation_body(exc.errors), 422)

    @api.exception_handler(Throttled)
    def _throttled(request, exc: Throttled):
        wait = max(1, math.ceil(exc.wait)) if exc.wait is not None else 1
        scope = getattr(exc, "scope", "token")
        rate = getattr(exc, "rate", None) or getattr(settings, "GRIDACE_API_RATE", "")
        whose = "this token" if scope == "token" else "this address"
        response = respond(
            request, error_body(f"too many requests for {whose}; retry in {wait} s", accepted=rate), 429
        )
        response["Retry-After"] = str(wait)
        return response

    @api.exception_handler(AuthenticationError)
    def _unauthenticated(request, exc: AuthenticationError):
        response = respond(
            request, error_body("authentication required", accepted="Authorization: Bearer <token>"), 401
        )
        response["WWW-Authenticate"] = 'Bearer realm="gridace"'
        return response

    @api.exception_handler(HttpError)
    def _http_error(request, exc: HttpError):
        if exc.status_code == 400 and "parse" in str(exc).lower():  # ninja's JSON parser refused the body
            return respond(
                request, error_body("the request body is not a JSON object", accepted="a JSON object"), 400
            )
        return respond(request, error_body(str(exc)), exc.status_code)

    @api.exception_handler(Http404)
    def _not_found(request, exc: Http404):
        return respond(request, error_body(str(exc) or "not found"), 404)

    @api.exception_handler(RequestDataTooBig)
    def _too_big(request, exc: RequestDataTooBig):
        return respond(request, error_body("the request body is too large"), 413)

    _install_app_handlers(api, respond)


def _install_app_handlers(api: NinjaAPI, respond: Any) -> None:
    """The apps' own refusals (conflicts, bad settings, states that forbid an action) and the
    last resort for anything unexpected."""

    @api.exception_handler(DecisionConflictError)
    def _conflict(request, exc: DecisionConflictError):
        return respond(request, error_body(str(exc)), 409)

    @api.exception_handler(SessionStateError)
    def _session_state(request, exc: SessionStateError):
        return respond(request, error_body(str(exc), exc.field), 409)

    @api.exception_handler(UnknownObjectError)
    def _unknown(request, exc: UnknownObjectError):
        return respond(request, error_body(str(exc), exc.field), 404)

    @api.exception_handler(OperationsError)
    def _refused(request, exc: OperationsError):
        return respond(request, error_body(str(exc), exc.field), 400)

    @api.exception_handler(ConfigError)
    def _config(request, exc: ConfigError):
        return respond(request, error_body(str(exc)), 400)

    @api.exception_handler(DjangoValidationError)
    def _state(request, exc: DjangoValidationError):
        # the training and review services raise these for a state that forbids the action
        return respond(request, error_body(" ".join(exc.messages)), 409)

    @api.exception_handler(Exception)
    def _unexpected(request, exc: Exception):
        logger.exception("API request %s %s failed", request.method, request.path)
        return respond(request, error_body("internal error; the server logged the details"), 500)
