"""Reading who holds which role, the login lockouts in force and the security log."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Max, Min, QuerySet, Sum
from django.utils import timezone

from webapp.accounts.lockouts import cool_off_for
from webapp.accounts.models import SecurityEvent
from webapp.accounts.roles import ROLES


def user_roles(user: AbstractBaseUser | AnonymousUser) -> list[str]:
    """The user's roles, in the order operator, engineer, reviewer; all three for superusers."""
    if not user.is_authenticated:
        return []
    if user.is_superuser:
        return list(ROLES)
    names = set(user.groups.values_list("name", flat=True))
    return [role for role in ROLES if role in names]


@dataclass(frozen=True)
class Lockout:
    """A (username, address) pair whose log-ins are refused until ``until``."""

    attempt_id: int
    """one of the pair's access attempts: the handle the unlock form posts"""
    username: str
    address: str
    failures: int
    last_failure: datetime
    until: datetime


def lockout_list() -> list[Lockout]:
    """The pairs locked now, the longest-locked first."""
    now = timezone.now()
    pairs = (
        AccessAttempt.objects.values("username", "ip_address")
        .annotate(
            failures=Sum("failures_since_start"),
            last_failure=Max("attempt_time"),
            expires_at=Max("expiration__expires_at"),
            attempt_id=Min("id"),
        )
        .filter(failures__gte=settings.AXES_FAILURE_LIMIT)
    )
    lockouts = []
    for pair in pairs:
        until = pair["expires_at"] or pair["last_failure"] + cool_off_for(pair["failures"])
        if until > now:
            lockouts.append(
                Lockout(
                    attempt_id=pair["attempt_id"],
                    username=pair["username"] or "",
                    address=pair["ip_address"] or "",
                    failures=pair["failures"],
                    last_failure=pair["last_failure"],
                    until=until,
                )
            )
    return sorted(lockouts, key=lambda lockout: lockout.until, reverse=True)


def security_event_list(*, limit: int = 50) -> QuerySet[SecurityEvent]:
    """The newest refused and throttled API requests (each row may stand for several)."""
    return SecurityEvent.objects.order_by("-last_at", "-id")[:limit]


def security_event_count() -> int:
    """Refusals the security log holds now (rows times their repeats)."""
    return SecurityEvent.objects.aggregate(total=Sum("count"))["total"] or 0
