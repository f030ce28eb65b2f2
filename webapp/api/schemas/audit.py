"""The audit router: an entry of the audit log (who did what to which object, before and after)
and a page of them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema

from webapp.api.schemas.common import PageMeta


class AuditEntryOut(Schema):
    id: int
    at: datetime
    actor: str
    action: str
    target_type: str
    target_id: str
    target: str
    before: dict[str, Any]
    after: dict[str, Any]
    comment: str


class AuditPage(PageMeta):
    items: list[AuditEntryOut]
