"""What the live feed (:mod:`webapp.operations.worker.feed`) writes for the sessions it plays:
claim them, stamp their heartbeat, close a step to decisions, record each grid step (settling the
decision played to reach it), fail or release a session.

A feed worker owns a session through its ``worker_token`` and stamps its heartbeat as a training
job's worker does (:func:`webapp.jobs.services.heartbeat_stamp`); once another worker takes it
over (the owner fell silent), the old owner's writes are refused with :class:`LostOwnershipError`.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from ace_core.live import StepResult, card_action, card_dict
from webapp.audit.services import audit_record
from webapp.jobs.services import heartbeat_stamp
from webapp.live import session_messages
from webapp.operations.errors import LostOwnershipError, OperationsError
from webapp.operations.models import (
    LIVE_STATUSES,
    Alarm,
    Decision,
    DecisionStatus,
    LiveRecommendation,
    LiveSession,
    RecommendationStatus,
    SessionStatus,
    SessionStep,
)
from webapp.operations.services.common import (
    locked_session,
    owned_session,
    session_changed,
    session_end,
)


@transaction.atomic
def sessions_claim(*, worker_token: str, limit: int = 8) -> list[int]:
    """Sessions this worker takes: live ones nobody owns, or whose owner fell silent."""
    stale = timezone.now() - timedelta(seconds=settings.GRIDACE_LIVE_STALE_SECONDS)
    candidates = (
        LiveSession.objects.select_for_update(skip_locked=True)
        .filter(status__in=LIVE_STATUSES)
        .filter(Q(worker_token="") | Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True))
        .exclude(worker_token=worker_token)
        .order_by("id")[:limit]
    )
    claimed = []
    now = timezone.now()
    for session in candidates:
        session.worker_token = worker_token
        session.heartbeat_at = now
        session.save(update_fields=["worker_token", "heartbeat_at"])
        claimed.append(session.pk)
    return claimed


def session_heartbeat(*, session_id: int, worker_token: str) -> LiveSession:
    """Stamp the heartbeat and return the session's current settings (status, speed, steps asked)."""
    if not heartbeat_stamp(model=LiveSession, pk=session_id, worker_token=worker_token):
        raise LostOwnershipError(f"session {session_id} is no longer owned by this worker")
    return LiveSession.objects.get(pk=session_id)


@transaction.atomic
def session_resumed(*, session_id: int, worker_token: str, layout: dict[str, Any]) -> LiveSession:
    session = owned_session(session_id, worker_token)
    session.layout = layout
    fields = ["layout"]
    if session.current_step >= 0:
        session.resumes += 1
        fields.append("resumes")
    session_changed(session, *fields)
    return session


@transaction.atomic
def decisions_close(*, session_id: int, worker_token: str) -> Decision | None:
    """Close the current step to decisions and return the action to play (if any)."""
    session = owned_session(session_id, worker_token)
    session.decisions_open = False
    session.save(update_fields=["decisions_open"])
    return (
        Decision.objects.filter(session=session, step=session.current_step, status=DecisionStatus.PENDING)
        .select_related("decided_by", "recommendation")
        .first()
    )


@transaction.atomic
def step_record(
    *,
    session_id: int,
    worker_token: str,
    result: StepResult,
    space: Any,
    applied: Decision | None = None,
    refusal: str = "",
    previous_state: dict[str, Any] | None = None,
    alarms: list[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Record one grid step with its recommendations and alarms, settle the decision that was
    played to reach it (its outcome, audited), open the step to decisions, and return the step
    message to send."""
    session = owned_session(session_id, worker_token)
    if result.step != session.current_step + 1:
        raise OperationsError(
            f"session {session.pk} is at step {session.current_step}; step {result.step} cannot follow it"
        )
    now = timezone.now()
    played = applied.action if applied is not None and not refusal else {}
    row = SessionStep.objects.create(
        session=session,
        step=result.step,
        state=result.state,
        text=result.text,
        max_rho=result.state["max_rho"],
        overloads=len(result.state["overloads"]),
        reward=result.reward,
        done=result.done,
        applied_action=played,
        recommend_ms=result.timings.get("total_ms"),
        assessment=result.assessment,
        stepped_at=now,
    )
    recs, expired = _recommendations_carry(session, result=result, space=space)
    raised = Alarm.objects.bulk_create(
        [Alarm(session=session, step=result.step, raised_at=now, **alarm) for alarm in alarms]
    )
    if applied is not None:
        _settle(applied, session=session, result=result, refusal=refusal)
    _advance(session, result=result, now=now)
    return session_messages.step_message(
        session=session,
        row=row,
        previous_state=previous_state,
        recommendations=recs if not result.done else [],
        alarms=raised,
        applied=applied,
        expired=expired,
    )


def _recommendations_carry(
    session: LiveSession, *, result: StepResult, space: Any
) -> tuple[list[LiveRecommendation], list[LiveRecommendation]]:
    """The step's cards as rows, ranked, and the cards that expired. A card whose action is still among the cards is the same
    row, re-simulated (its figures, rank and step updated; its id and first step kept), so an
    operator can act on it for as long as its situation lasts (a rejected card stays rejected); an
    open card whose action is no longer among them expires with the reason; a new action gets a
    new row."""
    open_cards = {
        _action_key(rec.action): rec
        for rec in LiveRecommendation.objects.filter(session=session, status=RecommendationStatus.OPEN)
    }
    # a card the operator rejected stays rejected while it is still among the cards
    rejected = {
        _action_key(rec.action): rec
        for rec in LiveRecommendation.objects.filter(
            session=session, status=RecommendationStatus.REJECTED, step=session.current_step
        )
    }
    kept, created = [], []
    for rank, card in enumerate(result.cards):
        action = card_action(card.action_index, card.parts, space, card.move).to_dict()
        fields = {k: v for k, v in card_dict(card).items() if k not in ("action_index", "parts")}
        rec = open_cards.pop(_action_key(action), None) or rejected.get(_action_key(action))
        if rec is None:
            created.append(
                LiveRecommendation(
                    session=session,
                    step=result.step,
                    first_step=result.step,
                    rank=rank,
                    action=action,
                    **fields,
                )
            )
            continue
        for name, value in {"step": result.step, "rank": rank, **fields}.items():
            setattr(rec, name, value)
        kept.append(rec)
    if kept:
        LiveRecommendation.objects.bulk_update(kept, ["step", "rank", *CARD_FIELDS])
    reasons = _expiry_reasons(result, space)
    for rec in open_cards.values():
        rec.status = RecommendationStatus.EXPIRED
        rec.expired_because = reasons.get(_action_key(rec.action)) or _expiry_default(result)
    expired = list(open_cards.values())
    LiveRecommendation.objects.bulk_update(expired, ["status", "expired_because"])
    shown = sorted([*kept, *LiveRecommendation.objects.bulk_create(created)], key=lambda rec: rec.rank)
    return shown, expired


CARD_FIELDS = (
    "description",
    "confidence",
    "source",
    "max_rho_before",
    "max_rho_after",
    "lines_relieved",
    "new_overloads",
    "error",
    "figures",
)
"""what a card's re-simulation updates"""


def _action_key(action: dict[str, Any]) -> str:
    return json.dumps(action, sort_keys=True)


def _expiry_reasons(result: StepResult, space: Any) -> dict[str, str]:
    """Why each action the pipeline judged but did not show is not a card now, by action key."""
    assessment = result.assessment or {}
    reasons = {}
    for entry in assessment.get("also_safe", []):
        key = _action_key(
            card_action(entry["action_index"], entry.get("parts"), space, entry.get("move")).to_dict()
        )
        reasons[key] = "outranked: the cards shown are safer"
    for entry in assessment.get("rejected", []):
        key = _action_key(
            card_action(entry["action_index"], entry.get("parts"), space, entry.get("move")).to_dict()
        )
        reasons[key] = f"no longer safer than doing nothing: {entry['rejected_because']}"
    return reasons


def _expiry_default(result: StepResult) -> str:
    if result.done:
        return "the scenario ended" if result.finished else "the grid failed"
    if not result.state["overloads"] and not result.cards:
        return "the situation cleared: no line is overloaded and doing nothing is safest"
    return "no longer proposed by the policy or the expert"


def _settle(applied: Decision, *, session: LiveSession, result: StepResult, refusal: str) -> None:
    """The decision played to reach this step: applied or refused, with its outcome (audited)."""
    applied.status = DecisionStatus.REFUSED if refusal else DecisionStatus.APPLIED
    applied.applied_step = result.step
    applied.outcome = {
        "step": result.step,
        "max_rho": result.state["max_rho"],
        "overloads": result.state["overloads"],
        "game_over": result.done and not result.finished,
        **({"refused": refusal} if refusal else {}),
    }
    applied.save(update_fields=["status", "applied_step", "outcome"])
    audit_record(
        actor=None,
        action="live.decision.outcome",
        target=applied,
        before={"step": applied.step, "decided_by": applied.decided_by.get_username()},
        after={"session": session.pk, **applied.outcome, "status": applied.status},
    )


def _advance(session: LiveSession, *, result: StepResult, now: datetime) -> None:
    """Move the session to the recorded step: open it to decisions, or end the session there."""
    session.current_step = result.step
    session.heartbeat_at = now
    fields = ["current_step", "heartbeat_at", "decisions_open"]
    if result.done:
        reason = (
            "scenario finished" if result.finished else f"game over: {result.reason or 'the grid failed'}"
        )
        fields += session_end(session, SessionStatus.FINISHED, reason=reason, now=now)
    else:
        session.decisions_open = True
    if session.steps_requested and session.status == SessionStatus.PAUSED and result.step > 0:
        session.steps_requested -= 1
        fields.append("steps_requested")
    session.revision += 1
    session.save(update_fields=list(dict.fromkeys([*fields, "revision"])))


@transaction.atomic
def session_fail(*, session_id: int, worker_token: str, error: str) -> None:
    session = locked_session(session_id)
    if session.worker_token != worker_token or session.status not in LIVE_STATUSES:
        return
    fields = session_end(session, SessionStatus.FAILED, reason=error[:2000], now=timezone.now())
    session_changed(session, *fields)


def session_release(*, session_id: int, worker_token: str) -> None:
    """Hand the session back (worker stopping): another worker may take it at once."""
    LiveSession.objects.filter(pk=session_id, worker_token=worker_token).update(
        worker_token="", heartbeat_at=None, revision=F("revision") + 1
    )
