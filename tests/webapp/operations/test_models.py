"""A session's end: status, reason and time change together, and decisions close with it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from webapp.operations.models import LiveSession, SessionStatus

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def test_ending_a_session_closes_its_decisions():
    session = LiveSession(status=SessionStatus.PAUSED, decisions_open=True)

    fields = session.mark_ended(SessionStatus.STOPPED, reason="stopped by op", now=NOW)

    assert (session.status, session.end_reason, session.finished_at) == (
        SessionStatus.STOPPED,
        "stopped by op",
        NOW,
    )
    assert session.decisions_open is False
    assert set(fields) == {"status", "end_reason", "finished_at", "decisions_open"}


def test_only_an_ending_status_ends_a_session():
    with pytest.raises(ValueError, match="status paused does not end a session; accepted: finished"):
        LiveSession(status=SessionStatus.RUNNING).mark_ended(SessionStatus.PAUSED, reason="", now=NOW)
