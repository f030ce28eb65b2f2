"""The audit log over HTTP: entries with the page's filters, newest first, paged."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router

from webapp.accounts import roles
from webapp.api.auth import gate
from webapp.api.endpoints.common import limit_param, offset_param, page, responses
from webapp.api.schemas.audit import AuditPage
from webapp.api.schemas.common import NO_NUL
from webapp.audit.models import AuditEntry
from webapp.audit.selectors import audit_entry_list

router = Router(tags=["audit"])


def entry_dict(entry: AuditEntry) -> dict[str, Any]:
    return {
        "id": entry.pk,
        "at": entry.at,
        "actor": entry.actor_name,
        "action": entry.action,
        "target_type": entry.target_type,
        "target_id": entry.target_id,
        "target": entry.target_repr,
        "before": entry.before,
        "after": entry.after,
        "comment": entry.comment,
    }


@router.get("/audit", response=responses(AuditPage), **gate(roles.VIEW_AUDIT))
def audit_list(
    request: HttpRequest,
    action: str = Query(
        "", pattern=NO_NUL, max_length=64, description="e.g. run.launch, live.recommendation.accept"
    ),
    actor: str = Query("", pattern=NO_NUL, max_length=150, description="a username"),
    target_type: str = Query("", pattern=NO_NUL, max_length=64, description="e.g. training.trainingrun"),
    target_id: str = Query("", pattern=NO_NUL, max_length=64),
    limit: int = limit_param(),
    offset: int = offset_param(),
) -> dict[str, Any]:
    entries = audit_entry_list(action=action, actor=actor, target_type=target_type, target_id=target_id)
    return page(entries, limit=limit, offset=offset, to_dict=entry_dict)
