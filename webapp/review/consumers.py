"""The review queue's websocket: tells reviewers when refinements arrive or get decided.

Only relays the messages the worker's sink and the decision service send to the queue's group
(or, without Redis, asks the selector for refinements newer than its cursor every second).
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
from webapp.review.selectors import refinement_messages_since
from webapp.training import broadcast


class ReviewQueueConsumer(AsyncWebsocketConsumer):
    joined = False
    relay: asyncio.Task | None = None

    async def connect(self) -> None:
        if not await socket_user_may(self.scope.get("user"), roles.VIEW_REFINEMENTS):
            await self.close()
            return
        await self.channel_layer.group_add(broadcast.REVIEW_QUEUE_GROUP, self.channel_name)
        self.joined = True
        await self.accept()
        if settings.LIVE_RELAY_FROM_DB:
            _, cursor = await database_sync_to_async(refinement_messages_since)(after_id=None)
            self.relay = asyncio.create_task(self._relay_from_db(cursor))

    async def disconnect(self, code: int) -> None:
        if self.relay is not None:
            self.relay.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.relay
        if self.joined:
            await self.channel_layer.group_discard(broadcast.REVIEW_QUEUE_GROUP, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The page only listens; anything it sends is ignored."""

    async def live_message(self, event: dict[str, Any]) -> None:
        await self.send(text_data=event["text"])

    async def _relay_from_db(self, cursor: int) -> None:
        while True:
            await asyncio.sleep(settings.LIVE_RELAY_INTERVAL_SECONDS)
            messages, cursor = await database_sync_to_async(refinement_messages_since)(after_id=cursor)
            for message in messages:
                await self.send(text_data=broadcast.encode(message))
