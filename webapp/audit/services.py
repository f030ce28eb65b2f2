"""Writing to the audit log. Other apps' services call :func:`audit_record` inside their own
transaction, so a decision and its audit entry are committed together or not at all.

Each entry is chained to the one before (:mod:`webapp.audit.chain`). Reading the last entry and
inserting the next must not interleave between writers: on Postgres a transaction-scoped
advisory lock serialises them (held until the caller's transaction ends); SQLite's writers
already run one at a time (``transaction_mode=IMMEDIATE`` in the settings).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, models, transaction
from django.utils import timezone

from webapp.audit.chain import GENESIS, seal
from webapp.audit.models import AuditEntry

SYSTEM_ACTOR = "system"
CHAIN_LOCK_KEY = 0x67726964616365  # "gridace": the advisory lock of the audit chain (Postgres)


def _chain_head() -> str:
    """The hash the next entry links to, read under the chain's lock."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHAIN_LOCK_KEY])
    last = AuditEntry.objects.order_by("-id").values_list("entry_hash", flat=True).first()
    return last or GENESIS


@transaction.atomic
def audit_record(
    *,
    actor: AbstractBaseUser | None,
    action: str,
    target: models.Model,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    comment: str = "",
    target_repr: str | None = None,
) -> AuditEntry:
    """Append one entry. ``actor=None`` records a decision the system took by itself;
    ``target_repr`` names the target when its ``str()`` does not say enough."""
    prev_hash = _chain_head()
    entry = AuditEntry(
        at=timezone.now(),  # read under the lock: times follow the chain's order
        actor=actor,
        actor_name=actor.get_username() if actor is not None else SYSTEM_ACTOR,
        action=action,
        target_type=target._meta.label_lower,
        target_id=str(target.pk),
        target_repr=(target_repr if target_repr is not None else str(target))[:200],
        before=before or {},
        after=after or {},
        comment=comment,
    )
    seal(entry, prev_hash)
    entry.save(force_insert=True)
    return entry
