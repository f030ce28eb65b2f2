"""Who the token in use belongs to: username, roles, the token's prefix and expiry."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from webapp.accounts.selectors import user_roles
from webapp.api.auth import gate
from webapp.api.endpoints.common import responses
from webapp.api.schemas.me import MeOut

router = Router(tags=["identity"])


@router.get("/me", response=responses(MeOut), **gate(None))
def me(request: HttpRequest) -> dict[str, Any]:
    token = request.auth
    return {
        "username": token.user.get_username(),
        "roles": user_roles(token.user),
        "token": token.prefix,
        "token_expires_at": token.expires_at,
    }
