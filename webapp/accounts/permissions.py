"""Gates for pages and websockets: anonymous users go to the login page, wrong roles get 403.

Every view subclasses :class:`PermissionGate` (or :class:`AnyRoleGate`) and every consumer checks
:func:`user_may` before accepting (:class:`webapp.live.relay.RelayConsumer`, in the thread hop
that reads its opening messages), so no page or socket is open by accident (a test walks all
routes to prove it).
"""

from __future__ import annotations

from django.contrib.auth.mixins import PermissionRequiredMixin
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from webapp.accounts.selectors import user_roles


class PermissionGate(PermissionRequiredMixin):
    """Anonymous: redirect to login. Signed in without ``permission_required``: 403."""

    raise_exception = False  # the mixin still answers 403 to signed-in users


class AnyRoleGate(PermissionGate):
    """Any signed-in user holding at least one role."""

    def has_permission(self) -> bool:
        return bool(user_roles(self.request.user))


def user_may(user: AbstractBaseUser | AnonymousUser | None, permission: str) -> bool:
    return user is not None and user.is_authenticated and user.is_active and user.has_perm(permission)
