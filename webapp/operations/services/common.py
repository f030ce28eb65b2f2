"""What every write on a live session shares: lock the session row first (so writes on one
session are serialised), and after a change the consoles show, bump the revision and send the
panels once the transaction commits."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from webapp.live import session_messages
from webapp.live.broadcast import send_now
from webapp.operations import selectors
from webapp.operations.errors import LostOwnershipError, OperationsError
from webapp.operations.models import LiveRecommendation, LiveSession, RecommendationStatus

COMMENT_MAX_LENGTH = 500


def locked_session(session_id: int) -> LiveSession:
    session = LiveSession.objects.select_for_update().filter(pk=session_id).first()
    if session is None:
        raise OperationsError(f"live session {session_id} does not exist")
    return session


def owned_session(session_id: int, worker_token: str) -> LiveSession:
    """The locked session, if the feed worker holding ``worker_token`` still owns it."""
    session = locked_session(session_id)
    if session.worker_token != worker_token:
        raise LostOwnershipError(f"session {session_id} is no longer owned by this worker")
    return session


def session_changed(session: LiveSession, *fields: str) -> None:
    """Save ``fields``, bump the revision and tell the session's consoles after commit."""
    session.revision += 1
    session.save(update_fields=[*fields, "revision"])
    session_id = session.pk
    transaction.on_commit(lambda: _send_panel(session_id))


def _send_panel(session_id: int) -> None:
    session = LiveSession.objects.filter(pk=session_id).first()
    if session is not None:
        send_now(session_messages.group_name(session_id), selectors.panel(session=session))


def expire_open_recommendations(session: LiveSession, reason: str) -> None:
    LiveRecommendation.objects.filter(session=session, status=RecommendationStatus.OPEN).update(
        status=RecommendationStatus.EXPIRED, expired_because=reason[:500]
    )


def session_end(session: LiveSession, status: str, *, reason: str, now: datetime) -> list[str]:
    """End the session (finished, stopped or failed) and expire what was left to decide; returns
    the fields changed (the caller saves)."""
    fields = session.mark_ended(status, reason=reason, now=now)
    expire_open_recommendations(session, f"the session ended: {reason}")
    return fields


def check_comment(comment: str) -> None:
    if len(comment) > COMMENT_MAX_LENGTH:
        raise OperationsError(
            f"comment is {len(comment)} characters long; accepted: at most {COMMENT_MAX_LENGTH}"
        )
