"""The run page's websocket: a snapshot on connect, then every new message of the run.

Only relays: on connect it checks the permission, joins the run's group and sends the snapshot
the selector builds; afterwards it forwards the pre-encoded messages the worker's sink sends to
the group. Without Redis (the single-process demo) the worker cannot reach this process, so the
consumer asks the selector for rows newer than its cursor every second instead.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from webapp.accounts import roles
from webapp.accounts.permissions import socket_user_may
from webapp.training import broadcast
from webapp.training.selectors import run_live_since, run_live_snapshot


class RunConsumer(AsyncWebsocketConsumer):
    group: str | None = None
    relay: asyncio.Task | None = None

    async def connect(self) -> None:
        if not await socket_user_may(self.scope.get("user"), roles.VIEW_RUNS):
            await self.close()
            return
        self.run_id = int(self.scope["url_route"]["kwargs"]["pk"])
        self.group = broadcast.run_group(self.run_id)
        # Join before reading the snapshot, so nothing falls between the two (the page drops
        # the duplicates by id).
        await self.channel_layer.group_add(self.group, self.channel_name)
        snapshot = await database_sync_to_async(run_live_snapshot)(run_id=self.run_id)
        if snapshot is None:
            await self.close()
            return
        await self.accept()
        messages, cursor = snapshot
        await self.send(text_data=broadcast.encode({"kind": "snapshot", "messages": messages}))
        if settings.LIVE_RELAY_FROM_DB:
            self.relay = asyncio.create_task(self._relay_from_db(cursor))

    async def disconnect(self, code: int) -> None:
        if self.relay is not None:
            self.relay.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.relay
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The page only listens; anything it sends is ignored."""

    async def live_message(self, event: dict[str, Any]) -> None:
        await self.send(text_data=event["text"])

    async def _relay_from_db(self, cursor: dict[str, Any]) -> None:
        while True:
            await asyncio.sleep(settings.LIVE_RELAY_INTERVAL_SECONDS)
            messages, cursor = await database_sync_to_async(run_live_since)(run_id=self.run_id, cursor=cursor)
            for message in messages:
                await self.send(text_data=broadcast.encode(message))
