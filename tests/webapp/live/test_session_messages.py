"""The live console's step message on the grids the tests play (the 14-bus sandbox and realistic
grids, the 36-bus grid): it carries only what changed since the previous step, what it carries
merges back into exactly what the console shows of the recorded step (the cards, which the sandbox
and the 36-bus grid show at every step, as well), and its size stays bounded.

The messages are the ones a console receives: the feed worker's, through the real channel layer
(Redis), read from a channel of the session's group. A size is deterministic (the same scenario,
seed and policy weights), so the bounds are not timings.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from ace_core.live import apply_delta, untrained_policy
from ace_core.recommend.alert import OVERLOAD, Alert
from tests.webapp.conftest import SOCKET_TIMEOUT
from webapp.jobs.models import JobStatus
from webapp.live.broadcast import MESSAGE_TYPE, BackgroundPublisher, encode
from webapp.live.session_messages import (
    ASSESSMENT_HIDDEN,
    CARD_HIDDEN,
    apply_changes,
    changes,
    console_view,
    group_name,
    recommendation_dict,
)
from webapp.operations import selectors
from webapp.operations.models import LiveSession, SessionStep
from webapp.operations.services import session_start, sessions_claim
from webapp.operations.worker.feed import SessionFeed
from webapp.training.models import Checkpoint
from webapp.training.services.deployment import checkpoint_deploy

STEPS = 12
"""an hour of grid time (5-minute steps)"""

STEP_BYTES = {
    "l2rpn_case14_sandbox": 8_000,
    "rte_case14_realistic": 5_000,
    "l2rpn_wcci_2020": 7_000,
}
"""the most a step message after the first may weigh, by grid. Measured over these steps: 3.9-4.7 KB
on the sandbox (6.0-6.5 KB at the steps a new card appears, whole), 2.6-3.3 KB on the realistic
14-bus grid (no card: doing nothing is safest), 3.6-4.6 KB on the 36-bus grid. With every card and
the assessment whole at each step, a sandbox step weighed 13-15 KB and a 36-bus one 11-12 KB."""

FIRST_STEP_BYTES = 10_000
"""the first step of a session carries its cards and assessment whole (measured: 5.6-7.4 KB)"""


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("policies")
    return {env: untrained_policy(env, folder / env / "checkpoint.pt", hidden=32) for env in STEP_BYTES}


def _session(env: str, policy: Path, make_run: Callable, engineer: Any) -> LiveSession:
    run = make_run(env=env)
    run.status = JobStatus.SUCCEEDED
    run.save(update_fields=["status"])
    checkpoint = Checkpoint.objects.create(run=run, step=1, path=str(policy))
    checkpoint_deploy(checkpoint=checkpoint, user=engineer)
    return session_start(user=engineer, scenario_index=0, seed=0, k=3, speed_seconds=0.0)


def _play(session: LiveSession, steps: int) -> None:
    """The feed worker plays ``steps`` steps and sends each step message to the session's group."""
    sessions_claim(worker_token="worker-a")
    publisher = BackgroundPublisher.shared()
    SessionFeed(session_id=session.pk, worker_token="worker-a", publisher=publisher).run(max_steps=steps)
    publisher.flush()


@pytest.mark.skipif(
    not settings.REDIS_URL, reason="the worker's messages travel through Redis: set REDIS_URL"
)
@pytest.mark.parametrize("env", list(STEP_BYTES))
@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_step_message_carries_what_changed_and_its_size_is_bounded(env, policies, make_run, engineer):
    session = await sync_to_async(_session)(env, policies[env], make_run, engineer)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group_name(session.pk), channel)
    await sync_to_async(_play)(session, STEPS)
    texts = []
    while len(texts) < STEPS + 1:  # panels (the session resuming) come among the steps
        envelope = await asyncio.wait_for(layer.receive(channel), SOCKET_TIMEOUT)
        assert envelope["type"] == MESSAGE_TYPE
        if envelope["text"].startswith('{"kind":"step"'):
            texts.append(envelope["text"])
    await layer.group_discard(group_name(session.pk), channel)
    steps = [json.loads(text) for text in texts]
    assert [m["step"] for m in steps] == list(range(STEPS + 1))

    sizes = [len(text.encode()) for text in texts]
    assert sizes[0] <= FIRST_STEP_BYTES, sizes
    assert max(sizes[1:]) <= STEP_BYTES[env], sizes

    # the first step is whole; then only what changed: the grid's figures that moved, the
    # assessment's and each card's changes (an unchanged card is its id alone)
    assert not steps[0]["state"]["delta"] and "whole" in steps[0]["assessment"]
    assert all(m["state"]["delta"] and "whole" not in m["assessment"] for m in steps[1:])

    # merged step by step, as the console does, they are exactly what it shows of the recorded steps
    rows = await sync_to_async(_recorded)(session)
    state, assessment, cards = None, None, {}
    for message, (row_state, row_assessment) in zip(steps, rows, strict=True):
        state = apply_delta(state, message["state"])
        assessment = apply_changes(assessment, message["assessment"])
        cards = {
            entry["id"]: apply_changes(cards.get(entry["id"]), _part(entry))
            for entry in message["recommendations"]
        }
        assert state == row_state
        assert assessment == console_view(row_assessment, ASSESSMENT_HIDDEN)
    assert list(cards.values()) == await sync_to_async(_open_cards)(session)


def _recorded(session: LiveSession) -> list[tuple[dict, dict]]:
    return list(
        SessionStep.objects.filter(session=session).order_by("step").values_list("state", "assessment")
    )


def _open_cards(session: LiveSession) -> list[dict[str, Any]]:
    session.refresh_from_db()
    return [
        console_view(recommendation_dict(rec), CARD_HIDDEN)
        for rec in selectors.open_recommendations(session=session)
    ]


def _part(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in entry.items() if key != "id"}


def test_changes_name_what_moved_and_merge_back():
    before = {
        "security": {"n1": {"worst": {"max_rho": 1.2, "outage_name": "1_3_3"}, "diverged": ["6_7_18"]}},
        "rejected": [{"description": "a", "rejected_because": "worse at 120.0%"}, {"description": "b"}],
        "reference": {"look_ahead": {"max_rho": [0.8, 0.81], "game_over_step": None}},
        "forecast": {"kind": "perfect"},
    }
    after = {
        "security": {"n1": {"worst": {"max_rho": 1.3, "outage_name": "1_3_3"}, "diverged": []}},
        "rejected": [{"description": "a", "rejected_because": "worse at 130.0%"}, {"description": "b"}],
        "reference": {"look_ahead": {"max_rho": [0.81, 0.82], "game_over_step": 3}},
    }
    part = changes(before, after)
    assert part == {
        "set": [
            ["security.n1.worst.max_rho", 1.3],
            ["security.n1.diverged", []],
            ["rejected.0.rejected_because", "worse at 130.0%"],
            # a list of figures is replaced whole; a value that became set (from None) is set
            ["reference.look_ahead.max_rho", [0.81, 0.82]],
            ["reference.look_ahead.game_over_step", 3],
        ],
        "unset": ["forecast"],
    }
    assert apply_changes(before, part) == after
    assert before["forecast"] == {"kind": "perfect"}  # merged into a copy
    assert changes(after, after) == {} and apply_changes(after, {}) == after
    # a list whose length changed is replaced whole
    fewer = {**after, "rejected": after["rejected"][:1]}
    assert changes(after, fewer) == {"set": [["rejected", fewer["rejected"]]]}
    assert apply_changes(None, {"whole": after}) == after


def test_the_early_warning_banner_gets_what_it_shows_and_hides_when_the_alert_clears():
    """A step's alert reaches the console as its banner needs it: the level, the minutes, the lines
    by id (the page names them from the drawing, as the cards and the diagram) and the best option;
    the alert's words and steps stay out. When the alert clears, the change empties the level."""
    option = "substation 5: line 4-5 to bus 2; others on bus 1"
    raised = {"alert": Alert(OVERLOAD, 2, (4, 9), option).to_json(), "forecast": {"kind": "perfect"}}
    banner = console_view(raised, ASSESSMENT_HIDDEN)["alert"]
    assert banner == {"level": "overload", "in_minutes": 10, "lines": [4, 9], "option": option}
    assert len(encode(banner)) <= 120 + len(option)
    cleared = {**raised, "alert": Alert().to_json()}
    part = changes(console_view(raised, ASSESSMENT_HIDDEN), console_view(cleared, ASSESSMENT_HIDDEN))
    assert apply_changes(console_view(raised, ASSESSMENT_HIDDEN), part)["alert"] == {
        "level": "",
        "in_minutes": None,
        "lines": [],
        "option": "",
    }
    assert changes(console_view(cleared, ASSESSMENT_HIDDEN), console_view(cleared, ASSESSMENT_HIDDEN)) == {}
