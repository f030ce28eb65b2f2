"""The run page's websocket: who may connect, the snapshot, the relay of live messages (from the
channel group, and from the database when there is no Redis)."""

from __future__ import annotations

import json
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from ace_core.events import MetricsEvent
from tests.webapp.conftest import communicator, socket_headers
from webapp.live import broadcast
from webapp.training.models import TrainingRun
from webapp.training.services.events import metrics_record
from webapp.training.services.runs import run_start
from webapp.training.worker.heartbeat import Heartbeat
from webapp.training.worker.sink import WebEventSink

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def _connect(user, path: str, origin: str = "http://localhost"):
    headers = await sync_to_async(socket_headers)(user, origin)
    socket = communicator(path, headers)
    connected, _ = await socket.connect()
    return socket, connected


async def _receive(socket) -> dict:
    return json.loads(await socket.receive_from(timeout=5))


async def test_engineer_gets_the_snapshot_then_group_messages(engineer, make_run, settings):
    settings.LIVE_RELAY_FROM_DB = False
    run = await sync_to_async(make_run)()
    await sync_to_async(metrics_record)(run_id=run.pk, event=MetricsEvent(step=50, values={"losses/q": 0.5}))

    socket, connected = await _connect(engineer, f"/ws/runs/{run.pk}/")
    assert connected
    snapshot = await _receive(socket)
    assert snapshot["kind"] == "snapshot"
    kinds = [message["kind"] for message in snapshot["messages"]]
    assert kinds == ["status", "metrics"]
    assert snapshot["messages"][1]["values"] == {"losses/q": 0.5}

    await get_channel_layer().group_send(
        broadcast.run_group(run.pk), {"type": broadcast.MESSAGE_TYPE, "text": '{"kind":"metrics","id":99}'}
    )
    assert await _receive(socket) == {"kind": "metrics", "id": 99}
    await socket.disconnect()


async def test_without_redis_new_rows_are_relayed_from_the_database(engineer, make_run, settings):
    settings.LIVE_RELAY_FROM_DB = True
    run = await sync_to_async(make_run)()
    socket, connected = await _connect(engineer, f"/ws/runs/{run.pk}/")
    assert connected
    await _receive(socket)  # snapshot
    await sync_to_async(metrics_record)(
        run_id=run.pk, event=MetricsEvent(step=100, values={"losses/q": 0.25})
    )
    messages = [await _receive(socket), await _receive(socket)]
    by_kind = {message["kind"]: message for message in messages}
    assert by_kind["metrics"]["step"] == 100
    assert by_kind["status"]["progress_step"] == 100
    await socket.disconnect()


@pytest.mark.skipif(
    not settings.REDIS_URL, reason="a worker's messages reach sockets through Redis: set REDIS_URL"
)
async def test_the_worker_sink_reaches_the_socket_through_redis(engineer, make_run, settings):
    settings.LIVE_RELAY_FROM_DB = False
    run = await sync_to_async(make_run)()
    socket, connected = await _connect(engineer, f"/ws/runs/{run.pk}/")
    assert connected
    await _receive(socket)

    def worker_side() -> None:
        run_start(run_id=run.pk, attempt=1, worker_token="t")
        heartbeat = Heartbeat(model=TrainingRun, job_id=run.pk, worker_token="t", interval=60)
        sink = WebEventSink(
            run_id=run.pk, heartbeat=heartbeat, publisher=broadcast.BackgroundPublisher.shared()
        )
        sink.emit(MetricsEvent(step=50, values={"losses/qf1_loss": 0.3}))
        broadcast.BackgroundPublisher.shared().flush()

    thread = threading.Thread(target=worker_side)
    thread.start()
    await sync_to_async(thread.join)()
    received = [await _receive(socket), await _receive(socket)]
    metrics = next(message for message in received if message["kind"] == "metrics")
    assert metrics["values"] == {"losses/qf1_loss": 0.3}
    await socket.disconnect()


async def test_anonymous_wrong_role_and_unknown_runs_are_refused(operator, reviewer, engineer, make_run):
    run = await sync_to_async(make_run)()
    for user in (None, operator, reviewer):
        socket, connected = await _connect(user, f"/ws/runs/{run.pk}/")
        assert not connected, user
    socket, connected = await _connect(engineer, f"/ws/runs/{run.pk + 1000}/")
    assert not connected


async def test_a_foreign_origin_is_refused(engineer, make_run):
    run = await sync_to_async(make_run)()
    socket, connected = await _connect(engineer, f"/ws/runs/{run.pk}/", origin="http://evil.example")
    assert not connected
    headers = [h for h in await sync_to_async(socket_headers)(engineer) if h[0] != b"origin"]
    socket = communicator(f"/ws/runs/{run.pk}/", headers)
    connected, _ = await socket.connect()
    assert not connected  # no Origin header at all
