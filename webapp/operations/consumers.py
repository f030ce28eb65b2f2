"""The live console's websocket: a snapshot on connect, then every message of the session.

Only relays: it checks the permission, joins the session's group and sends the snapshot the
selector builds; afterwards it forwards the pre-encoded messages the feed worker and the services
send to the group. Without a shared channel layer (the single-process demo) it asks the selector
for newer steps every ``LIVE_RELAY_INTERVAL_SECONDS`` instead.
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
from webapp.operations import selectors
from webapp.operations.messages import group_name
from webapp.training import broadcast


class LiveSessionConsumer(AsyncWebsocketConsumer):
    group: str | None = None
    relay: asyncio.Task | None = None

    async def connect(self) -> None:
        if not await socket_user_may(self.scope.get("user"), roles.VIEW_SESSIONS):
            await self.close()
            return
        self.session_id = int(self.scope["url_route"]["kwargs"]["pk"])
        self.group = group_name(self.session_id)
        # join before reading the snapshot, so no step falls between the two (pages skip old steps)
        await self.channel_layer.group_add(self.group, self.channel_name)
        snapshot = await database_sync_to_async(selectors.snapshot)(session_id=self.session_id)
        if snapshot is None:
            await self.close()
            return
        await self.accept()
        message, cursor = snapshot
        await self.send(text_data=broadcast.encode(message))
        if settings.LIVE_RELAY_FROM_DB:
            self.relay = asyncio.create_task(self._relay_from_db(cursor, message["session"]["revision"]))

    async def disconnect(self, code: int) -> None:
        if self.relay is not None:
            self.relay.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.relay
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Decisions go through the HTTP views (CSRF, audit); the socket only listens."""

    async def live_message(self, event: dict[str, Any]) -> None:
        await self.send(text_data=event["text"])

    async def _relay_from_db(self, cursor: int, revision: int) -> None:
        while True:
            await asyncio.sleep(settings.LIVE_RELAY_INTERVAL_SECONDS)
            messages, cursor, revision = await database_sync_to_async(selectors.steps_since)(
                session_id=self.session_id, cursor=cursor, revision=revision
            )
            for message in messages:
                await self.send(text_data=broadcast.encode(message))
