"""The review queue's websocket: reviewers only; decisions are relayed."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from tests.webapp.conftest import SOCKET_TIMEOUT, communicator, socket_headers
from webapp.review.services import refinement_decide

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def test_reviewers_hear_about_decisions(reviewer, make_run, make_refinement, settings):
    settings.LIVE_RELAY_FROM_DB = False
    run = await sync_to_async(make_run)()
    refinement = await sync_to_async(make_refinement)(run)
    socket = communicator("/ws/review/", await sync_to_async(socket_headers)(reviewer))
    connected, _ = await socket.connect()
    assert connected
    await sync_to_async(refinement_decide)(
        refinement=refinement, run=run, reviewer=reviewer, decision="approve"
    )
    message = json.loads(await socket.receive_from(timeout=SOCKET_TIMEOUT))
    assert (message["kind"], message["id"], message["status"]) == ("refinement", refinement.pk, "approved")
    await socket.disconnect()


async def test_without_redis_new_refinements_are_relayed_from_the_database(
    reviewer, make_run, make_refinement, settings
):
    settings.LIVE_RELAY_FROM_DB = True
    run = await sync_to_async(make_run)()
    socket = communicator("/ws/review/", await sync_to_async(socket_headers)(reviewer))
    connected, _ = await socket.connect()
    assert connected
    refinement = await sync_to_async(make_refinement)(run)
    message = json.loads(await socket.receive_from(timeout=SOCKET_TIMEOUT))
    assert (message["id"], message["status"]) == (refinement.pk, "pending")
    await socket.disconnect()


async def test_only_reviewers_may_listen(engineer, operator):
    for user in (None, engineer, operator):
        socket = communicator("/ws/review/", await sync_to_async(socket_headers)(user))
        connected, _ = await socket.connect()
        assert not connected
