"""The one shape of every GridACE websocket: check a permission, join a group, send what the
page needs first, then relay the pre-encoded messages that workers and services send to the
group.

While open, the socket re-checks every ``GRIDACE_SOCKET_SESSION_CHECK_SECONDS`` that the session
that opened it still signs its user in, and closes (code 4001) once it does not: a logout, a
password change or an expired session ends the sockets too.

Without a shared channel layer (the single-process demo) a worker process cannot reach the web
server, so the consumer asks a selector for newer rows every ``LIVE_RELAY_INTERVAL_SECONDS``.

Relaying is the hot path of the live console (200 watchers means 200 deliveries per grid step).
Channels runs ``close_old_connections`` in a worker thread before every handler, which puts a
thread hop in front of every delivery, all through the one thread-sensitive executor. Relayed
messages never touch the database, so :meth:`dispatch` hands them to the socket directly; every
other message keeps Channels' behaviour.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import DatabaseError

from webapp.accounts.permissions import socket_user_may
from webapp.live import broadcast
from webapp.monitoring.metrics import websocket_closed, websocket_opened
from webapp.socket_security import SESSION_ENDED, session_still_valid


class RelayConsumer(AsyncWebsocketConsumer):
    permission: str
    """the role permission a user needs to open the socket"""

    group: str | None = None
    relay: asyncio.Task | None = None
    counted: bool = False
    """True once the socket is counted in the websockets gauge (accepted)"""
    session_watch: asyncio.Task | None = None

    # ----- what subclasses say ------------------------------------------------------------
    def group_for(self) -> str:
        raise NotImplementedError

    def opening(self) -> tuple[list[dict[str, Any]], Any] | None:
        """Messages to send on connect and the polling cursor; None when the object is gone.
        Runs in a thread (it may read the database)."""
        raise NotImplementedError

    def newer(self, cursor: Any) -> tuple[list[dict[str, Any]], Any]:
        """Messages after ``cursor`` and the new cursor (polling without a channel layer)."""
        raise NotImplementedError

    # ----- the relay ----------------------------------------------------------------------
    async def connect(self) -> None:
        if not await socket_user_may(self.scope.get("user"), self.permission):
            await self.close()
            return
        self.group = self.group_for()
        # join before reading the opening messages, so nothing falls between the two (pages
        # drop what they already have)
        await self.channel_layer.group_add(self.group, self.channel_name)
        try:
            opening = await database_sync_to_async(self.opening)()
        except BaseException:
            # failed, or killed: daphne cancels a consumer still connecting once its client has
            # been gone for application_close_timeout (a busy thread pool), and disconnect() never
            # runs. A member left in the group would get its messages for a day, and
            # channels_redis keeps up to `capacity` of them per dead channel in this process.
            await asyncio.shield(self.channel_layer.group_discard(self.group, self.channel_name))
            raise
        if opening is None:
            await self.close()
            return
        await self.accept()
        websocket_opened(self.scope["path"])
        self.counted = True
        messages, cursor = opening
        for message in messages:
            await self.send(text_data=broadcast.encode(message))
        self.session_watch = asyncio.create_task(self._watch_session())
        if settings.LIVE_RELAY_FROM_DB:
            self.relay = asyncio.create_task(self._relay_from_db(cursor))

    async def disconnect(self, code: int) -> None:
        if self.counted:
            websocket_closed(self.scope["path"])
            self.counted = False
        for task in (self.relay, self.session_watch):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Pages only listen: decisions go through the HTTP views (CSRF, audit)."""

    async def dispatch(self, message: dict[str, Any]) -> None:
        if message["type"] == broadcast.MESSAGE_TYPE:
            await self.live_message(message)
        else:
            await super().dispatch(message)

    async def live_message(self, event: dict[str, Any]) -> None:
        await self.send(text_data=event["text"])

    async def _relay_from_db(self, cursor: Any) -> None:
        while True:
            await asyncio.sleep(settings.LIVE_RELAY_INTERVAL_SECONDS)
            messages, cursor = await database_sync_to_async(self.newer)(cursor)
            for message in messages:
                await self.send(text_data=broadcast.encode(message))

    async def _watch_session(self) -> None:
        session = self.scope.get("session")
        session_key = getattr(session, "session_key", None)
        user_pk = self.scope["user"].pk
        while True:
            await asyncio.sleep(settings.GRIDACE_SOCKET_SESSION_CHECK_SECONDS)
            try:
                valid = await database_sync_to_async(session_still_valid)(session_key, user_pk)
            except DatabaseError:
                # the database restarts (nobody can log out meanwhile): check again next period,
                # instead of this task dying and the socket never being checked again
                continue
            if not valid:
                if self.relay is not None:
                    self.relay.cancel()
                await self.close(code=SESSION_ENDED)
                return
