"""Sending live messages to channel groups (the browsers watching a run or the review queue).

Messages are encoded once (``text``) and relayed as-is by every consumer, so a thousand watchers
cost one ``json.dumps``. Two ways to send:

* :func:`send_after_commit` from web requests: after the transaction commits, through the
  server's own event loop (``async_to_sync``);
* :class:`BackgroundPublisher` from the worker: one long-lived event loop in a thread, so the
  trainer never waits on the channel layer (a fresh loop per message costs ~10-15 ms).

Sending is best effort: the rows are the record, and pages catch up from them on reconnect.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from concurrent.futures import Future
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)

MESSAGE_TYPE = "live.message"
REVIEW_QUEUE_GROUP = "review.queue"


def run_group(run_id: int) -> str:
    return f"training.run.{run_id}"


def encode(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"), allow_nan=False)


def _envelope(text: str) -> dict[str, str]:
    return {"type": MESSAGE_TYPE, "text": text}


def send_now(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, _envelope(encode(message)))
    except Exception:  # a broken channel layer must not undo or fail a committed decision
        logger.exception("could not send a live message to %s", group)


def send_after_commit(group: str, message: dict[str, Any]) -> None:
    transaction.on_commit(lambda: send_now(group, message))


class BackgroundPublisher:
    """A thread running one event loop that group_sends whatever :meth:`send` hands it."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="live-publisher", daemon=True)
        self._pending: set[Future] = set()
        self._lock = threading.Lock()
        self._thread.start()

    def send(self, group: str, message: dict[str, Any]) -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        future = asyncio.run_coroutine_threadsafe(self._send(layer, group, encode(message)), self._loop)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    @staticmethod
    async def _send(layer: Any, group: str, text: str) -> None:
        try:
            await layer.group_send(group, _envelope(text))
        except Exception:
            logger.exception("could not send a live message to %s", group)

    def _done(self, future: Future) -> None:
        with self._lock:
            self._pending.discard(future)

    def flush(self, timeout: float = 5.0) -> None:
        """Wait (up to ``timeout`` seconds) until what was handed over so far is delivered."""
        with self._lock:
            pending = list(self._pending)
        for future in pending:
            try:
                future.result(timeout=timeout)
            except Exception:
                break

    @classmethod
    def shared(cls) -> BackgroundPublisher:
        """The process's publisher: one loop for the life of the worker process, so the channel
        layer keeps its connections between runs."""
        global _shared_publisher
        with _shared_lock:
            if _shared_publisher is None:
                _shared_publisher = cls()
            return _shared_publisher


_shared_publisher: BackgroundPublisher | None = None
_shared_lock = threading.Lock()
