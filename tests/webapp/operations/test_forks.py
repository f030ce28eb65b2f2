"""A new session from a step of another: the steps before it copied, the action that reached it
played again by the new session's own feed, so the grid at that step is the source's, with fresh
cards; refusals name the steps accepted and leave nothing behind; the replay page's button does
the same (the API's: tests/webapp/api/test_session_control.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.webapp.conftest import client_for
from tests.webapp.operations.conftest import run_feed
from webapp.audit.models import AuditEntry
from webapp.operations.errors import OperationsError
from webapp.operations.models import (
    Decision,
    DecisionStatus,
    LiveRecommendation,
    LiveSession,
    SessionStatus,
    SessionStep,
)
from webapp.operations.services import action_apply, session_fork

SWITCHED_OFF = {"kind": "line", "line": 8, "status": "disconnect"}


@pytest.fixture
def played(make_session, operator) -> LiveSession:
    """A session of 5 steps whose operator switched line 8 off to reach step 3."""
    session = make_session()
    run_feed(session, 2)
    action_apply(session_id=session.pk, user=operator, step=2, action=SWITCHED_OFF)
    run_feed(session, 2)
    session.refresh_from_db()
    assert session.current_step == 4
    return session


def test_a_fork_opens_paused_at_the_step_with_the_sources_grid_and_fresh_cards(played, engineer):
    fork = session_fork(session_id=played.pk, step=3, user=engineer)
    assert (fork.status, fork.current_step, fork.steps_requested) == (SessionStatus.PAUSED, 2, 1)
    assert (fork.env, fork.scenario_name, fork.seed, fork.policy_path) == (
        played.env,
        played.scenario_name,
        played.seed,
        played.policy_path,
    )
    assert fork.label == f"from session {played.pk} at step 3"
    copied = list(SessionStep.objects.filter(session=fork).values_list("step", "state"))
    assert copied == list(SessionStep.objects.filter(session=played, step__lt=3).values_list("step", "state"))
    pending = Decision.objects.get(session=fork)
    assert (pending.step, pending.status, pending.action) == (2, DecisionStatus.PENDING, SWITCHED_OFF)
    assert pending.description == Decision.objects.get(session=played).description
    assert AuditEntry.objects.get(action="live.session.fork").after["source"] == played.pk

    # its own feed replays the copied steps, plays the source's action and records step 3: the
    # source's grid, with the cards of that moment, and stays paused there
    run_feed(fork, 1, token="worker-b")
    fork.refresh_from_db()
    assert (fork.current_step, fork.status, fork.steps_requested) == (3, SessionStatus.PAUSED, 0)
    mine = SessionStep.objects.get(session=fork, step=3)
    theirs = SessionStep.objects.get(session=played, step=3)
    assert mine.state["rho"] == theirs.state["rho"] and mine.state["line_status"][8] == 0
    assert mine.applied_action == SWITCHED_OFF
    assert Decision.objects.get(session=fork).status == DecisionStatus.APPLIED
    assert LiveRecommendation.objects.filter(session=fork, step=3).exists()


def test_a_fork_at_step_0_is_the_day_afresh(played, engineer):
    fork = session_fork(session_id=played.pk, step=0, user=engineer, label="again")
    assert (fork.current_step, fork.steps_requested, fork.label) == (-1, 0, "again")
    assert not SessionStep.objects.filter(session=fork).exists() and not Decision.objects.filter(session=fork)
    run_feed(fork, 0, token="worker-b")
    assert (
        SessionStep.objects.get(session=fork, step=0).state
        == SessionStep.objects.get(session=played, step=0).state
    )


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (5, r"step 5 is not a recorded step of session \d+; accepted: 0 to 4"),
        (-1, r"step -1 is not a recorded step of session \d+; accepted: 0 to 4"),
    ],
)
def test_a_step_not_recorded_is_refused_and_nothing_is_made(played, engineer, step, message):
    with pytest.raises(OperationsError, match=message) as refused:
        session_fork(session_id=played.pk, step=step, user=engineer)
    assert refused.value.field == "step"
    assert LiveSession.objects.count() == 1 and not AuditEntry.objects.filter(action="live.session.fork")


def test_a_session_not_started_has_nothing_to_open_from(make_session, engineer):
    session = make_session()
    with pytest.raises(OperationsError, match=r"has recorded no step yet"):
        session_fork(session_id=session.pk, step=0, user=engineer)


def test_the_replay_pages_button(played, engineer, operator):
    url = reverse("operations:fork", args=[played.pk])
    # operators watch sessions; engineers start them, forks included
    assert client_for(operator).post(url, {"step": 3}).status_code == 403
    client = client_for(engineer)
    page = client.get(reverse("operations:replay", args=[played.pk]))
    assert b'id="fork-form"' in page.content
    refused = client.post(url, {"step": 9})
    assert refused.status_code == 400 and b"accepted: 0 to 4" in refused.content
    bad = client.post(url, {"step": "three"})
    assert bad.status_code == 400 and b"step: Enter a whole number" in bad.content
    assert LiveSession.objects.count() == 1
    made = client.post(url, {"step": 3})
    fork = LiveSession.objects.exclude(pk=played.pk).get()
    assert made.status_code == 302 and made["Location"] == reverse("operations:console", args=[fork.pk])
