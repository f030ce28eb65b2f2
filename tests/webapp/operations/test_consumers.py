"""The console's websocket opening: consoles that open on the same revision of a session share one
snapshot, read and encoded once; any change the consoles show gives the next ones a fresh one."""

from __future__ import annotations

import json

import pytest

from tests.webapp.operations.conftest import run_feed
from webapp.operations import selectors
from webapp.operations.consumers import shared_snapshot
from webapp.operations.models import LiveRecommendation
from webapp.operations.services import recommendation_decide

pytestmark = pytest.mark.django_db


def test_consoles_opening_at_one_revision_share_one_snapshot(
    make_session, operator, django_assert_num_queries
):
    session = make_session()
    run_feed(session, 1)
    text, step, revision = shared_snapshot(session.pk)
    snapshot, cursor = selectors.snapshot(session_id=session.pk)
    assert json.loads(text) == snapshot and step == cursor == 1
    assert revision == snapshot["session"]["revision"]
    with django_assert_num_queries(1):  # the session's revision, nothing else
        assert shared_snapshot(session.pk) == (text, step, revision)

    # an operator rejects a card: the next console opens on the new revision, and sees it
    rec = LiveRecommendation.objects.filter(session=session, step=1).order_by("rank").first()
    recommendation_decide(
        session_id=session.pk, recommendation_id=rec.pk, user=operator, step=1, decision="reject"
    )
    text, step, later = shared_snapshot(session.pk)
    assert later > revision and step == 1
    cards = {card["id"]: card for card in json.loads(text)["recommendations"]}
    assert cards[rec.pk]["status"] == "rejected"
    assert shared_snapshot(session.pk + 1000) is None  # no such session
