"""Reading who holds which role."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from webapp.accounts.roles import ROLES


def user_roles(user: AbstractBaseUser | AnonymousUser) -> list[str]:
    """The user's roles, in the order operator, engineer, reviewer; all three for superusers."""
    if not user.is_authenticated:
        return []
    if user.is_superuser:
        return list(ROLES)
    names = set(user.groups.values_list("name", flat=True))
    return [role for role in ROLES if role in names]
