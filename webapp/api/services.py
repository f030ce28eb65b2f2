"""Writes for API tokens: create (the only moment the token is seen), revoke, note a use; and the
security log's record of a refused or throttled request.

Creation and revocation are audited in the same transaction, like every decision on the pages.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from django.utils import timezone

from webapp.accounts.models import SecurityEventKind
from webapp.accounts.services import security_event_record
from webapp.api.errors import TokenError
from webapp.api.models import ApiToken
from webapp.api.tokens import TOKEN_KIND, token_digest
from webapp.audit.services import audit_record

NAME_MAX_LENGTH = 100
MAX_ACTIVE_TOKENS = 20
MAX_LIFETIME_DAYS = 3650
LAST_USED_RESOLUTION = timedelta(seconds=60)
"""``last_used_at`` is rewritten at most this often per token (one UPDATE, not one per request)"""


def _new_token() -> tuple[str, str]:
    prefix = secrets.token_hex(4)
    return prefix, f"{TOKEN_KIND}_{prefix}_{secrets.token_urlsafe(32)}"


def token_check(*, user: AbstractBaseUser, name: str, expires_at: datetime | None) -> None:
    """Raise TokenError if a token with this name and expiry cannot be created for ``user``."""
    name = name.strip()
    if not name or len(name) > NAME_MAX_LENGTH:
        raise TokenError(f"a token needs a name of 1 to {NAME_MAX_LENGTH} characters (got {len(name)})")
    now = timezone.now()
    if expires_at is not None and not now < expires_at <= now + timedelta(days=MAX_LIFETIME_DAYS):
        raise TokenError(f"the expiry must be in the future and at most {MAX_LIFETIME_DAYS} days away")
    active = ApiToken.objects.filter(user=user, revoked_at__isnull=True).exclude(expires_at__lte=now).count()
    if active >= MAX_ACTIVE_TOKENS:
        raise TokenError(f"{user.get_username()} already has {active} active tokens; revoke one first")


@transaction.atomic
def token_create(
    *,
    user: AbstractBaseUser,
    name: str,
    expires_at: datetime | None = None,
    created_by: AbstractBaseUser | None = None,
) -> tuple[ApiToken, str]:
    """A new token for ``user`` and its secret text (shown once, never stored)."""
    name = name.strip()
    token_check(user=user, name=name, expires_at=expires_at)
    for _ in range(5):  # a prefix collision (1 in 4 billion per token) just draws again
        prefix, raw = _new_token()
        try:
            with transaction.atomic():
                token = ApiToken.objects.create(
                    user=user, name=name, prefix=prefix, digest=token_digest(raw), expires_at=expires_at
                )
            break
        except IntegrityError:
            continue
    else:  # pragma: no cover - five collisions in a row
        raise TokenError("could not draw a unique token prefix; try again")
    audit_record(
        actor=created_by or user,
        action="api.token.create",
        target=token,
        after={"prefix": prefix, "name": name, "expires_at": expires_at.isoformat() if expires_at else None},
    )
    return token, raw


@transaction.atomic
def token_revoke(*, token: ApiToken, user: AbstractBaseUser) -> ApiToken:
    """Revoke at once; the token is refused from the next request on. Revoking twice is refused."""
    locked = ApiToken.objects.select_for_update().get(pk=token.pk)
    if locked.revoked_at is not None:
        raise TokenError(
            f"token {locked.prefix} was already revoked at {locked.revoked_at:%Y-%m-%d %H:%M:%S} UTC"
        )
    locked.revoked_at = timezone.now()
    locked.save(update_fields=["revoked_at"])
    audit_record(
        actor=user,
        action="api.token.revoke",
        target=locked,
        after={"prefix": locked.prefix, "owner": locked.user.get_username()},
    )
    return locked


def token_touch(*, token: ApiToken) -> None:
    """Record that the token was just used (at most once per ``LAST_USED_RESOLUTION``)."""
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


def token_use_record(*, token: ApiToken, method: str, path: str, status: int) -> None:
    """Audit a state-changing request made with a token (the service it called audited the
    decision itself; this entry says it came through the API, with which token)."""
    audit_record(
        actor=token.user,
        action="api.request",
        target=token,
        after={"method": method, "path": path[:300], "status": status, "token": token.prefix},
    )


def refusal_record(*, request: HttpRequest, token: ApiToken | None, status: int, detail: str = "") -> None:
    """Log a refused (4xx) or throttled (429) API request in the security log, not the audit log."""
    security_event_record(
        kind=SecurityEventKind.THROTTLED if status == 429 else SecurityEventKind.REFUSED,
        status=status,
        method=request.method or "",
        path=request.path,
        address=request.META.get("REMOTE_ADDR"),
        username=token.user.get_username() if token is not None else "",
        token_prefix=token.prefix if token is not None else "",
        detail=detail,
    )
