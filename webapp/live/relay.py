"""The one shape of every GridACE websocket: check a permission, join a group, send what the
page needs first, then relay the pre-encoded messages that workers and services send to the
group.

While open, the socket's session is checked every ``GRIDACE_SOCKET_SESSION_CHECK_SECONDS`` (it must
still sign its user in) and the socket closes (code 4001) once it does not: a logout, a password
change or an expired session ends the sockets too. One :class:`SessionWatch` per process checks
every open socket's session at once (see :func:`webapp.socket_security.sessions_still_valid`).

A connect costs one thread hop: the user (resolved from the session, see
:class:`webapp.socket_security.SocketAuthMiddleware`), the permission and the opening messages
together. Every hop waits for Channels' one database thread and, without persistent connections,
opens a database connection of its own: at a thousand connects, hops are what a connect waits for.

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
import weakref
from typing import Any, ClassVar

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import DatabaseError

from webapp.accounts.permissions import user_may
from webapp.live import broadcast
from webapp.monitoring.metrics import websocket_closed, websocket_opened
from webapp.socket_security import SESSION_ENDED, sessions_still_valid


class RelayConsumer(AsyncWebsocketConsumer):
    permission: str
    """the role permission a user needs to open the socket"""

    group: str | None = None
    relay: asyncio.Task | None = None
    counted: bool = False
    """True once the socket is counted in the websockets gauge (accepted)"""
    session_watch: SessionWatch | None = None

    # ----- what subclasses say ------------------------------------------------------------
    def group_for(self) -> str:
        raise NotImplementedError

    def opening(self) -> tuple[list[dict[str, Any] | str], Any] | None:
        """Messages to send on connect (dicts, or already encoded) and the polling cursor; None
        when the object is gone. Runs in a thread (it may read the database)."""
        raise NotImplementedError

    def newer(self, cursor: Any) -> tuple[list[dict[str, Any]], Any]:
        """Messages after ``cursor`` and the new cursor (polling without a channel layer)."""
        raise NotImplementedError

    # ----- the relay ----------------------------------------------------------------------
    def _permitted_opening(self) -> tuple[list[dict[str, Any] | str], Any] | None:
        """:meth:`opening` for a user with the permission; None for anyone else."""
        if not user_may(self.scope.get("user"), self.permission):
            return None
        return self.opening()

    async def connect(self) -> None:
        self.group = self.group_for()
        # join before reading the opening messages, so nothing falls between the two (pages
        # drop what they already have); nothing is relayed before the socket is accepted
        await self.channel_layer.group_add(self.group, self.channel_name)
        try:
            opening = await database_sync_to_async(self._permitted_opening)()
        except BaseException:
            # failed, or killed: daphne cancels a consumer still connecting once its client has
            # been gone for application_close_timeout (a busy thread pool), and disconnect() never
            # runs. A member left in the group would get its messages for a day, and
            # channels_redis keeps up to `capacity` of them per dead channel in this process.
            await asyncio.shield(self.channel_layer.group_discard(self.group, self.channel_name))
            raise
        if opening is None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None
            await self.close()
            return
        await self.accept()
        websocket_opened(self.scope["path"])
        self.counted = True
        messages, cursor = opening
        for message in messages:
            await self.send(text_data=message if isinstance(message, str) else broadcast.encode(message))
        session_key = getattr(self.scope.get("session"), "session_key", None)
        self.session_watch = SessionWatch.of_this_loop()
        self.session_watch.add(self, session_key, self.scope["user"].pk)
        if settings.LIVE_RELAY_FROM_DB:
            self.relay = asyncio.create_task(self._relay_from_db(cursor))

    async def disconnect(self, code: int) -> None:
        if self.counted:
            websocket_closed(self.scope["path"])
            self.counted = False
        if self.session_watch is not None:
            self.session_watch.discard(self)
        if self.relay is not None and self.relay is not asyncio.current_task():
            self.relay.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.relay
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

    async def session_ended(self) -> None:
        """The session that opened the socket no longer signs its user in: close."""
        if self.relay is not None:
            self.relay.cancel()
        await self.close(code=SESSION_ENDED)


class SessionWatch:
    """Checks the sessions of a process's open sockets every ``GRIDACE_SOCKET_SESSION_CHECK_SECONDS``,
    all in one thread hop, and closes the sockets whose session ended.

    One per event loop (daphne runs one; tests start one per test); its task runs while sockets
    are open. A check that fails on the database (a restart) closes nothing: the next one runs.
    """

    _watches: ClassVar[weakref.WeakKeyDictionary] = weakref.WeakKeyDictionary()

    def __init__(self) -> None:
        self.sockets: dict[RelayConsumer, tuple[str | None, Any]] = {}
        self.task: asyncio.Task | None = None

    @classmethod
    def of_this_loop(cls) -> SessionWatch:
        loop = asyncio.get_running_loop()
        watch = cls._watches.get(loop)
        if watch is None:
            watch = cls._watches[loop] = cls()
        return watch

    def add(self, socket: RelayConsumer, session_key: str | None, user_pk: Any) -> None:
        self.sockets[socket] = (session_key, user_pk)
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._run())

    def discard(self, socket: RelayConsumer) -> None:
        self.sockets.pop(socket, None)

    async def _run(self) -> None:
        while self.sockets:
            await asyncio.sleep(settings.GRIDACE_SOCKET_SESSION_CHECK_SECONDS)
            watched = dict(self.sockets)
            try:
                valid = await database_sync_to_async(sessions_still_valid)(set(watched.values()))
            except DatabaseError:
                # the database restarts (nobody can log out meanwhile): check again next period
                continue
            for socket, pair in watched.items():
                if not valid.get(pair, False) and socket in self.sockets:
                    self.discard(socket)
                    await socket.session_ended()
