"""The review queue's websocket: tells reviewers when refinements arrive or get decided (see
:mod:`webapp.live.relay`)."""

from __future__ import annotations

from typing import Any

from webapp.accounts import roles
from webapp.live import broadcast
from webapp.live.relay import RelayConsumer
from webapp.review.selectors import refinement_messages_since


class ReviewQueueConsumer(RelayConsumer):
    permission = roles.VIEW_REFINEMENTS

    def group_for(self) -> str:
        return broadcast.REVIEW_QUEUE_GROUP

    def opening(self) -> tuple[list[dict[str, Any]], int]:
        return refinement_messages_since(after_id=None)

    def newer(self, cursor: int) -> tuple[list[dict[str, Any]], int]:
        return refinement_messages_since(after_id=cursor)
