"""The live console's websocket: a snapshot on connect (the drawing, the state, the timeline, the
panels), then every step and panel message of the session (see :mod:`webapp.live.relay`)."""

from __future__ import annotations

from typing import Any

from webapp.accounts import roles
from webapp.live.relay import RelayConsumer
from webapp.live.session_messages import group_name
from webapp.operations import selectors


class LiveSessionConsumer(RelayConsumer):
    permission = roles.VIEW_SESSIONS

    def group_for(self) -> str:
        self.session_id = int(self.scope["url_route"]["kwargs"]["pk"])
        return group_name(self.session_id)

    def opening(self) -> tuple[list[dict[str, Any]], tuple[int, int]] | None:
        snapshot = selectors.snapshot(session_id=self.session_id)
        if snapshot is None:
            return None
        message, step = snapshot
        return [message], (step, message["session"]["revision"])

    def newer(self, cursor: tuple[int, int]) -> tuple[list[dict[str, Any]], tuple[int, int]]:
        messages, step, revision = selectors.steps_since(
            session_id=self.session_id, cursor=cursor[0], revision=cursor[1]
        )
        return messages, (step, revision)
