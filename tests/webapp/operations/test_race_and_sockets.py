"""The double-accept race on Postgres (two connections at once: exactly one wins), the console's
websocket (snapshot, live steps, refusals), and the Explain task with a real (tiny) LLM."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.db import connection, connections

from ace_core.live import apply_delta
from tests.webapp.conftest import SOCKET_TIMEOUT, communicator, socket_headers
from tests.webapp.operations.conftest import run_feed
from webapp.live.session_messages import apply_changes
from webapp.operations.errors import DecisionConflictError
from webapp.operations.models import Decision, LiveRecommendation, RecommendationStatus
from webapp.operations.services import explanation_request, recommendation_decide


@pytest.mark.django_db(transaction=True)
def test_two_operators_accepting_at_once_exactly_one_wins(make_session, make_user):
    if connection.vendor != "postgresql":
        pytest.skip("the race is tested on Postgres (row locks); SQLite serialises writers anyway")
    session = make_session()
    run_feed(session, 1)
    recs = list(LiveRecommendation.objects.filter(session=session, step=1, error="").order_by("rank"))
    assert len(recs) >= 1, list(
        LiveRecommendation.objects.filter(session=session).values("step", "error", "description")
    )
    users = [make_user("operator"), make_user("operator")]
    barrier = threading.Barrier(2)
    outcomes: list[Any] = [None, None]

    def accept(i: int, rec_id: int) -> None:
        try:
            barrier.wait(timeout=10)
            outcomes[i] = recommendation_decide(
                session_id=session.pk, recommendation_id=rec_id, user=users[i], step=1, decision="accept"
            )
        except Exception as error:
            outcomes[i] = error
        finally:
            connections.close_all()

    # the same card, and (when the pipeline recommends two) two different cards
    pairs = [[recs[0].pk, recs[0].pk]] + ([[recs[0].pk, recs[1].pk]] if len(recs) > 1 else [])
    for rec_ids in pairs:
        Decision.objects.all().delete()
        LiveRecommendation.objects.filter(session=session).update(status=RecommendationStatus.OPEN)
        threads = [threading.Thread(target=accept, args=(i, rec_ids[i])) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        winners = [o for o in outcomes if isinstance(o, Decision)]
        losers = [o for o in outcomes if isinstance(o, DecisionConflictError)]
        assert len(winners) == 1 and len(losers) == 1, outcomes
        assert "step 1 already has an action" in str(losers[0])
        assert Decision.objects.filter(session=session, step=1, kind="accept").count() == 1
        assert (
            LiveRecommendation.objects.filter(session=session, status=RecommendationStatus.ACCEPTED).count()
            == 1
        )


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_console_socket_sends_a_snapshot_then_each_step(make_session, operator, settings):
    settings.LIVE_RELAY_FROM_DB = True  # the worker runs in this process: relay its rows
    session = await sync_to_async(make_session)()
    await sync_to_async(run_feed)(session, 1)
    socket = communicator(f"/ws/live/{session.pk}/", await sync_to_async(socket_headers)(operator))
    connected, _ = await socket.connect()
    assert connected
    snapshot = await socket.receive_json_from(timeout=SOCKET_TIMEOUT)
    assert snapshot["kind"] == "snapshot" and snapshot["state"]["step"] == 1
    assert len(snapshot["layout"]["substations"]) == 14 and snapshot["timeline"]["step"] == [0, 1]
    assert len(snapshot["recommendations"]) >= 1 and snapshot["session"]["status"] == "running"
    assert snapshot["assessment"]["reference"]["description"] == "do nothing"
    assert snapshot["recommendations"][0]["figures"]["n1"]["worst"]["outage_name"]
    await sync_to_async(run_feed)(session, 2)
    steps = []
    while len(steps) < 2:  # panels (the worker resuming the session) come between the steps
        message = await socket.receive_json_from(timeout=SOCKET_TIMEOUT)
        if message["kind"] == "step":
            steps.append(message)
    assert [m["step"] for m in steps] == [2, 3]
    assert all(m["kind"] == "step" and m["state"]["delta"] for m in steps)  # deltas, not full states
    assert "bus" not in steps[0]["state"] and steps[0]["stepped_at"] > 0  # no bus moved
    # merged into the snapshot as the console does: the state, the assessment, the cards
    state, assessment = snapshot["state"], snapshot["assessment"]
    cards = {r["id"]: r for r in snapshot["recommendations"]}
    for step in steps:
        state = apply_delta(state, step["state"])
        assessment = apply_changes(assessment, step["assessment"])
        cards = {
            entry["id"]: apply_changes(cards.get(entry["id"]), {k: v for k, v in entry.items() if k != "id"})
            for entry in step["recommendations"]
        }
    assert state["step"] == 3 and len(state["rho"]) == 20
    # the cards last: the latest step carries them, re-simulated, with the ids the snapshot had
    latest = list(cards.values())
    assert latest[0]["step"] == 3 and latest[0]["figures"]["n1"]["worst"]["outage_name"]
    assert set(cards) & {r["id"] for r in snapshot["recommendations"]}
    assert assessment["security"]["n1"]["worst"]["outage_name"]
    assert assessment["forecast"]["kind"] == "perfect"
    await socket.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_console_socket_refuses_foreign_origins_and_anonymous_users(make_session, operator):
    session = await sync_to_async(make_session)()
    path = f"/ws/live/{session.pk}/"
    for headers in (
        await sync_to_async(socket_headers)(operator, origin="http://evil.example"),
        await sync_to_async(socket_headers)(None),
        [],  # no Origin at all
    ):
        connected, _ = await communicator(path, headers).connect()
        assert not connected
    connected, _ = await communicator(
        "/ws/live/999999/", await sync_to_async(socket_headers)(operator)
    ).connect()
    assert not connected  # no such session


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory: pytest.TempPathFactory) -> str:
    try:  # the LLM layer's tests build a tiny random chat model in code; reuse it
        from tests.ace_core.conftest import build_tiny_model
    except ImportError:
        from tests.ace_core.llm.conftest import build_tiny_model
    # room for the card's simulated facts, which the prompt carries
    return str(build_tiny_model(tmp_path_factory.mktemp("explain-llm"), max_positions=2048))


@pytest.mark.django_db(transaction=True)
def test_explain_runs_off_the_fast_path_and_names_the_model(make_session, operator, settings, tiny_llm):
    settings.GRIDACE_EXPLAIN_LLM = "local"
    settings.GRIDACE_EXPLAIN_LLM_MODEL = tiny_llm
    settings.GRIDACE_EXPLAIN_LLM_OPTIONS = {"threads": 1}
    settings.GRIDACE_EXPLAIN_MAX_TOKENS = 12
    session = make_session()
    run_feed(session, 1)
    rec = LiveRecommendation.objects.filter(session=session, step=1).first()
    explanation_request(session_id=session.pk, recommendation_id=rec.pk, user=operator)
    rec.refresh_from_db()
    assert rec.explanation_status == "pending" and not rec.explanation  # queued, not computed inline
    run_feed(session, 1)  # the feed is not held up by the pending explanation
    call_command(
        "db_worker", queue_name="explain", batch=True, startup_delay=False, reload=False, interval=0.1
    )
    rec.refresh_from_db()
    assert rec.explanation_status == "ready", rec.explanation
    assert rec.explanation_model and rec.explanation_model in tiny_llm
    assert rec.explanation_facts.startswith(f"At step {rec.step}: Simulated one step ahead")
