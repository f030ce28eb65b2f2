"""The live feed when the database goes away under it (a restart, a dropped connection): the
session is not failed, and the worker claims it again instead of leaving it to nobody."""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError

from tests.webapp.operations.conftest import run_feed
from webapp.operations import services
from webapp.operations.models import LiveSession, SessionStatus
from webapp.operations.services import sessions_claim
from webapp.operations.worker.feed import FeedWorker, SessionFeed


def _connection_lost(**kwargs):
    raise OperationalError("terminating connection due to administrator command")


@pytest.mark.django_db
def test_a_lost_database_connection_stops_the_feed_without_failing_the_session(make_session, monkeypatch):
    session = make_session()
    monkeypatch.setattr(services, "step_record", _connection_lost)
    run_feed(session, 2)
    session.refresh_from_db()
    assert session.status == SessionStatus.RUNNING and session.end_reason == ""


@pytest.mark.django_db(transaction=True)
def test_the_worker_claims_again_a_session_whose_feed_stopped(make_session, monkeypatch):
    session = make_session()
    worker = FeedWorker()
    assert sessions_claim(worker_token=worker.worker_token) == [session.pk]
    stopped = threading.Thread(target=lambda: None)
    stopped.start()
    stopped.join()
    feed = SessionFeed(session_id=session.pk, worker_token=worker.worker_token, publisher=None)
    worker.feeds[session.pk] = (feed, stopped)
    monkeypatch.setattr(SessionFeed, "run_in_thread", lambda self: None)
    # before: the worker dropped the stopped feed but never claims its own sessions again, so the
    # session stayed owned by a live worker that no longer played it
    assert worker.poll_once() == [session.pk]
    assert LiveSession.objects.get(pk=session.pk).worker_token == worker.worker_token
