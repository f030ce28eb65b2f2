"""Bearer-token authentication and the role gate of every API endpoint.

Each endpoint is declared with ``**gate(permission)``: its auth resolves the token (401 with the
reason when it is missing, malformed, unknown, revoked or expired), makes the token's user the
request's user, checks the same permission the pages check (403 naming the roles that hold it),
and refuses bodies over ``GRIDACE_API_MAX_BODY_BYTES`` before they are read (413). Every request
counts against its address's rate limit, before the token is even read, and every request with a
valid token against the token's (429 with Retry-After), refused ones included. The permission
is also written into the OpenAPI schema (``x-gridace-permission``), where clients and the
schema-driven tests read it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.security import HttpBearer

from webapp.accounts.permissions import user_may
from webapp.accounts.roles import ROLE_PERMISSIONS
from webapp.accounts.selectors import user_roles
from webapp.api.errors import ApiError, TokenError
from webapp.api.models import ApiToken
from webapp.api.selectors import token_resolve
from webapp.api.services import token_touch
from webapp.api.throttling import ADDRESS_LIMIT, TOKEN_LIMIT
from webapp.api.tokens import TOKEN_SHAPE

PERMISSION_KEY = "x-gridace-permission"
DEFAULT_MAX_BODY_BYTES = 64 * 1024


def roles_with(permission: str) -> list[str]:
    return [role for role, perms in ROLE_PERMISSIONS.items() if permission in perms]


def _check_body_size(request: HttpRequest) -> None:
    limit = int(getattr(settings, "GRIDACE_API_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES))
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise ApiError(400, "the Content-Length header is not a number") from None
    if length > limit:
        raise ApiError(413, f"the request body is {length} bytes long", accepted=f"at most {limit} bytes")


class TokenAuth(HttpBearer):
    """``Authorization: Bearer gat_...``, for users who hold ``permission`` (None: any role)."""

    def __init__(self, permission: str | None = None) -> None:
        super().__init__()
        self.permission = permission

    def __call__(self, request: HttpRequest) -> ApiToken:
        # first: a client cycling through bad tokens is throttled like any other
        ADDRESS_LIMIT.check(request.META.get("REMOTE_ADDR") or "unknown")
        header = request.headers.get("Authorization", "")
        if not header:
            raise ApiError(401, "no Authorization header", accepted=f"Authorization: Bearer {TOKEN_SHAPE}")
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            raise ApiError(
                401, "the Authorization header is not a Bearer token", accepted=f"Bearer {TOKEN_SHAPE}"
            )
        return self.authenticate(request, raw.strip())

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken:
        try:
            api_token = token_resolve(token)
        except TokenError as error:
            raise ApiError(401, str(error)) from None
        # known from here on, also when refused below: refusals are logged with the token
        request.user, request.auth = api_token.user, api_token
        # counted before the role check, so refused requests cannot flood the server or the logs
        TOKEN_LIMIT.check(str(api_token.pk))
        if self.permission is None and not user_roles(api_token.user):
            raise ApiError(
                403,
                f"{api_token.user.get_username()} holds no role",
                accepted="a token of a user with the role " + " or ".join(ROLE_PERMISSIONS),
            )
        if self.permission is not None and not user_may(api_token.user, self.permission):
            raise ApiError(
                403,
                f"{api_token.user.get_username()} may not do this: it needs the permission {self.permission}",
                accepted=f"a token of a user with the role {' or '.join(roles_with(self.permission))}",
            )
        _check_body_size(request)
        token_touch(token=api_token)
        return api_token


def gate(permission: str | None) -> dict[str, Any]:
    """Keyword arguments for a ninja route: its auth, and its permission in the schema."""
    return {"auth": TokenAuth(permission), "openapi_extra": {PERMISSION_KEY: permission or "any role"}}
