"""Writing to the audit log. Other apps' services call :func:`audit_record` inside their own
transaction, so a decision and its audit entry are committed together or not at all."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import models, transaction
from django.utils import timezone

from webapp.audit.models import AuditEntry

SYSTEM_ACTOR = "system"


@transaction.atomic
def audit_record(
    *,
    actor: AbstractBaseUser | None,
    action: str,
    target: models.Model,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    comment: str = "",
) -> AuditEntry:
    """Append one entry. ``actor=None`` records a decision the system took by itself."""
    return AuditEntry.objects.create(
        at=timezone.now(),
        actor=actor,
        actor_name=actor.get_username() if actor is not None else SYSTEM_ACTOR,
        action=action,
        target_type=target._meta.label_lower,
        target_id=str(target.pk),
        target_repr=str(target)[:200],
        before=before or {},
        after=after or {},
        comment=comment,
    )
