"""The run page's websocket: every live message of the run so far on connect, then each new one
as the worker's sink sends it (see :mod:`webapp.live.relay`)."""

from __future__ import annotations

from typing import Any

from webapp.accounts import roles
from webapp.live import broadcast
from webapp.live.relay import RelayConsumer
from webapp.training.selectors.live import run_live_since, run_live_snapshot


class RunConsumer(RelayConsumer):
    permission = roles.VIEW_RUNS

    def group_for(self) -> str:
        self.run_id = int(self.scope["url_route"]["kwargs"]["pk"])
        return broadcast.run_group(self.run_id)

    def opening(self) -> tuple[list[dict[str, Any]], Any] | None:
        snapshot = run_live_snapshot(run_id=self.run_id)
        if snapshot is None:
            return None
        messages, cursor = snapshot
        return [{"kind": "snapshot", "messages": messages}], cursor

    def newer(self, cursor: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        return run_live_since(run_id=self.run_id, cursor=cursor)
