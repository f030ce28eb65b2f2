"""The live console's websocket: a snapshot on connect (the drawing, the state, the timeline, the
panels), then every step and panel message of the session (see :mod:`webapp.live.relay`).

Consoles opening on the same session at the same revision (a thousand operators after a restart
of the web process, or at the start of a shift) share one snapshot, read and encoded once: every
change a console shows bumps the session's revision (a step, a decision, an acknowledgement, an
explanation, a control), so a snapshot stays true for as long as the revision does.
"""

from __future__ import annotations

import threading
from typing import Any

from webapp.accounts import roles
from webapp.live import broadcast
from webapp.live.relay import RelayConsumer
from webapp.live.session_messages import group_name
from webapp.operations import selectors
from webapp.operations.models import LiveSession

_snapshots: dict[int, tuple[int, str, int]] = {}
"""per session: the revision, the encoded snapshot and its step, as last read in this process"""
_snapshots_lock = threading.Lock()


def shared_snapshot(session_id: int) -> tuple[str, int, int] | None:
    """The session's snapshot, encoded, with its step and revision: read again only when the
    revision moved since the last read in this process. None when the session is gone."""
    revision = LiveSession.objects.filter(pk=session_id).values_list("revision", flat=True).first()
    if revision is None:
        with _snapshots_lock:
            _snapshots.pop(session_id, None)
        return None
    with _snapshots_lock:
        cached = _snapshots.get(session_id)
    if cached is None or cached[0] != revision:
        built = selectors.snapshot(session_id=session_id)
        if built is None:
            return None
        message, step = built
        cached = (message["session"]["revision"], broadcast.encode(message), step)
        with _snapshots_lock:
            _snapshots[session_id] = cached
    revision, text, step = cached
    return text, step, revision


class LiveSessionConsumer(RelayConsumer):
    permission = roles.VIEW_SESSIONS

    def group_for(self) -> str:
        self.session_id = int(self.scope["url_route"]["kwargs"]["pk"])
        return group_name(self.session_id)

    def opening(self) -> tuple[list[dict[str, Any] | str], tuple[int, int]] | None:
        snapshot = shared_snapshot(self.session_id)
        if snapshot is None:
            return None
        text, step, revision = snapshot
        return [text], (step, revision)

    def newer(self, cursor: tuple[int, int]) -> tuple[list[dict[str, Any]], tuple[int, int]]:
        messages, step, revision = selectors.steps_since(
            session_id=self.session_id, cursor=cursor[0], revision=cursor[1]
        )
        return messages, (step, revision)
