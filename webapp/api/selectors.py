"""Reads for API tokens: a user's tokens, and the token a request presents."""

from __future__ import annotations

import hmac

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from webapp.api.errors import TokenError
from webapp.api.models import ApiToken
from webapp.api.tokens import TOKEN_PATTERN, TOKEN_SHAPE, token_digest


def token_list(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-id")


def token_of_user(*, user: AbstractBaseUser, pk: int) -> ApiToken | None:
    return ApiToken.objects.filter(user=user, pk=pk).first()


def token_resolve(raw: str) -> ApiToken:
    """The live token ``raw`` names, or TokenError saying why it is refused (malformed, unknown,
    revoked, expired, or its user deactivated)."""
    match = TOKEN_PATTERN.match(raw)
    if match is None:
        raise TokenError(f"malformed token; expected {TOKEN_SHAPE}")
    token = ApiToken.objects.select_related("user").filter(prefix=match.group(1)).first()
    # compare digests in constant time so the answer's timing says nothing about the secret
    if token is None or not hmac.compare_digest(token.digest, token_digest(raw)):
        raise TokenError("unknown token; create one on the API tokens page")
    if token.revoked:
        raise TokenError(f"token {token.prefix} was revoked at {token.revoked_at:%Y-%m-%d %H:%M:%S} UTC")
    if token.expired:
        raise TokenError(f"token {token.prefix} expired at {token.expires_at:%Y-%m-%d %H:%M:%S} UTC")
    if not token.user.is_active:
        raise TokenError(f"the user of token {token.prefix} is deactivated")
    return token
