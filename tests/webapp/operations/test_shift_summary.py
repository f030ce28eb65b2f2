"""The shift summary: cards shown and what became of them, decisions and their outcomes, the wait
from a card's first showing to its decision, alarms raised and acknowledged; and its page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.webapp.operations.conftest import run_feed
from webapp.operations.models import LiveRecommendation
from webapp.operations.selectors import shift_summary
from webapp.operations.services import alarm_acknowledge, recommendation_decide

pytestmark = pytest.mark.django_db


def test_a_session_is_summed_up_for_the_hand_over(make_session, operator, client):
    session = make_session()
    run_feed(session, 1)
    cards = list(LiveRecommendation.objects.filter(session=session, step=1, error="").order_by("rank"))
    assert len(cards) >= 2, "scenario 0's first steps have two recommendations (see conftest)"
    recommendation_decide(
        session_id=session.pk, recommendation_id=cards[1].pk, user=operator, step=1, decision="reject"
    )
    recommendation_decide(
        session_id=session.pk, recommendation_id=cards[0].pk, user=operator, step=1, decision="accept"
    )
    run_feed(session, 1)  # the accepted card is played to reach step 2
    raised = timezone.now() - timedelta(seconds=30)
    alarm = session.alarms.create(
        step=2, kind="overload", severity="critical", line=3, message="line 3 overloaded", raised_at=raised
    )
    session.alarms.create(
        step=2, kind="maintenance", severity="info", line=5, message="line 5", raised_at=raised
    )
    alarm_acknowledge(session_id=session.pk, alarm_id=alarm.pk, user=operator)

    summary = shift_summary(session=session)
    assert summary["steps"] == 3  # steps 0, 1 and 2
    shown = LiveRecommendation.objects.filter(session=session).count()
    assert summary["cards"]["shown"] == shown and summary["cards"]["accepted"] == 1
    assert summary["cards"]["rejected"] == 1
    assert sum(summary["cards"][s] for s in ("open", "accepted", "rejected", "expired")) == shown
    decisions = summary["decisions"]
    assert (decisions["total"], decisions["accept"], decisions["reject"], decisions["apply"]) == (2, 1, 1, 0)
    assert summary["outcomes"]["applied"] == 1 and summary["outcomes"]["game_over_after"] == 0
    waits = summary["time_to_decision"]
    waited = sorted(1 - (card.first_step if card.first_step is not None else card.step) for card in cards[:2])
    assert waits["steps"]["max"] == waited[-1] and waits["steps"]["median"] == sum(waited) / 2
    assert waits["seconds"]["max"] >= 0.0
    alarms = summary["alarms"]
    assert (
        alarms["raised"],
        alarms["severity_critical"],
        alarms["severity_info"],
        alarms["acknowledged"],
    ) == (
        2,
        1,
        1,
        1,
    )
    assert alarms["seconds_to_acknowledge"]["median"] >= 30.0

    client.force_login(operator)
    page = client.get(reverse("operations:summary", args=[session.pk]))
    assert page.status_code == 200
    assert b'id="summary-cards"' in page.content and b"Shift summary" in page.content


def test_the_summary_of_a_session_with_no_step_is_empty_not_an_error(make_session, operator, client):
    session = make_session()
    summary = shift_summary(session=session)
    assert summary["steps"] == 0 and summary["cards"]["shown"] == 0
    assert summary["time_to_decision"]["steps"] == {"median": None, "p90": None, "max": None}
    client.force_login(operator)
    assert client.get(reverse("operations:summary", args=[session.pk])).status_code == 200
    assert client.get(reverse("operations:summary", args=[999999])).status_code == 404
