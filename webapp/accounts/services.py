"""Writes of the accounts app: users with a role (used by ``seed_demo`` and by administrators'
scripts), lifting login lockouts (audited), and the bounded security log of refused requests."""

from __future__ import annotations

import ipaddress
from datetime import timedelta
from typing import Any

from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser, Group, Permission
from django.db import transaction
from django.db.models import F, Sum
from django.utils import timezone

from webapp.accounts.models import SecurityEvent
from webapp.accounts.roles import ROLE_PERMISSIONS, ROLES, STAFF_ROLES
from webapp.audit.services import audit_record

DEFAULT_SECURITY_LOG_ROWS = 10_000
DEFAULT_SECURITY_LOG_DAYS = 30
SECURITY_MERGE_SECONDS = 60
"""a refusal repeated within this many seconds adds to the last row's count"""


@transaction.atomic
def role_groups_sync() -> list[Group]:
    """Make the role groups hold exactly the permissions of :data:`ROLE_PERMISSIONS` (idempotent;
    the data migration did the same when the database was created)."""
    dotted = {name for names in ROLE_PERMISSIONS.values() for name in names}
    codenames = {name.partition(".")[2] for name in dotted}
    permissions = {
        f"{permission.content_type.app_label}.{permission.codename}": permission
        for permission in Permission.objects.filter(codename__in=codenames).select_related("content_type")
    }
    missing = sorted(dotted - permissions.keys())
    if missing:
        raise ValueError(f"permission {missing[0]!r} does not exist; run `manage.py migrate` first")
    groups = []
    for role, names in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        group.permissions.set([permissions[name] for name in names])
        groups.append(group)
    return groups


@transaction.atomic
def user_create_with_role(*, username: str, password: str, role: str, email: str = "") -> AbstractUser:
    """Create an active user in one role's group; staff (admin access) for engineers and reviewers."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; accepted: {', '.join(ROLES)}")
    group = Group.objects.filter(name=role).first()
    if group is None:
        raise ValueError(f"group {role!r} is missing; run `manage.py migrate` first")
    user_model = get_user_model()
    if user_model.objects.filter(username=username).exists():
        raise ValueError(f"a user named {username!r} already exists; choose another username")
    user = user_model.objects.create_user(username=username, password=password, email=email)
    user.is_staff = role in STAFF_ROLES
    user.save(update_fields=["is_staff"])
    user.groups.add(group)
    return user


@transaction.atomic
def user_set_password(*, user: AbstractUser, password: str) -> AbstractUser:
    user.set_password(password)
    user.save(update_fields=["password"])
    return user


class LockoutError(ValueError):
    """A lockout that cannot be lifted (already lifted, or never there); the message says which."""


@transaction.atomic
def lockout_lift(*, attempt_id: int, user: AbstractUser) -> dict[str, Any]:
    """Lift the lockout of the (username, address) pair ``attempt_id`` belongs to: its failed
    attempts are forgotten, and the unlock is audited."""
    attempt = AccessAttempt.objects.select_for_update().filter(pk=attempt_id).first()
    if attempt is None:
        raise LockoutError(
            f"no lockout {attempt_id}: it was lifted or it expired; the list shows those in force"
        )
    pair = AccessAttempt.objects.filter(username=attempt.username, ip_address=attempt.ip_address)
    lifted = {
        "username": attempt.username or "",
        "address": attempt.ip_address or "",
        "failures": pair.aggregate(total=Sum("failures_since_start"))["total"] or 0,
    }
    audit_record(
        actor=user,
        action="login.unlock",
        target=attempt,
        before=lifted,
        target_repr=f"log-ins of {lifted['username']!r} from {lifted['address']}",
    )
    pair.delete()
    return lifted


def _security_log_limits() -> tuple[int, timedelta]:
    rows = int(getattr(settings, "GRIDACE_SECURITY_LOG_MAX_ROWS", DEFAULT_SECURITY_LOG_ROWS))
    days = float(getattr(settings, "GRIDACE_SECURITY_LOG_DAYS", DEFAULT_SECURITY_LOG_DAYS))
    return max(1, rows), timedelta(days=days)


def security_log_prune() -> tuple[int, int]:
    """Keep the newest rows within the retention; (rows removed, rows kept)."""
    max_rows, max_age = _security_log_limits()
    removed, _ = SecurityEvent.objects.filter(last_at__lt=timezone.now() - max_age).delete()
    oldest_kept = SecurityEvent.objects.order_by("-id").values_list("id", flat=True)[max_rows - 1 : max_rows]
    if oldest_kept:
        removed += SecurityEvent.objects.filter(id__lt=oldest_kept[0]).delete()[0]
    return removed, SecurityEvent.objects.count()


def _text(value: str, limit: int) -> str:
    """What a client sent, storable: no NUL (Postgres text refuses it), at most ``limit`` long."""
    return value.replace("\x00", "\\x00")[:limit]


def _ip_or_none(address: str | None) -> str | None:
    try:
        return str(ipaddress.ip_address(address or ""))
    except ValueError:  # a unix socket's empty address, or a proxy's odd header
        return None


def security_event_record(
    *,
    kind: str,
    status: int,
    method: str,
    path: str,
    address: str | None,
    username: str = "",
    token_prefix: str = "",
    detail: str = "",
) -> SecurityEvent:
    """Log a refused or throttled request. The same refusal again within
    :data:`SECURITY_MERGE_SECONDS` adds to its row's count; a new row prunes the log."""
    now = timezone.now()
    same = {
        "kind": kind,
        "status": status,
        "method": _text(method, 10),
        "path": _text(path, 300),
        "address": _ip_or_none(address),
        "token_prefix": _text(token_prefix, 16),
    }
    recent = SecurityEvent.objects.filter(
        last_at__gte=now - timedelta(seconds=SECURITY_MERGE_SECONDS), **same
    )
    event = recent.order_by("-id").first()
    if event is not None:
        recent.filter(pk=event.pk).update(count=F("count") + 1, last_at=now)
        return event
    event = SecurityEvent.objects.create(
        first_at=now, last_at=now, username=_text(username, 150), detail=_text(detail, 300), **same
    )
    security_log_prune()
    return event
