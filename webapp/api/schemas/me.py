"""The me router: who the token in use belongs to, their roles, and the token's prefix and
expiry."""

from __future__ import annotations

from datetime import datetime

from ninja import Field, Schema


class MeOut(Schema):
    username: str
    roles: list[str]
    token: str = Field(description="the visible prefix of the token in use")
    token_expires_at: datetime | None
