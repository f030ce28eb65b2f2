"""Operators' decisions on the current step: accept or reject a recommendation, apply their own
action (checked by a what-if first), acknowledge an alarm.

The session row is locked first, so of two operators accepting at the same moment exactly one
wins (the database's conditional unique constraint is the second guard). Decisions are audited
in the same transaction, with the simulated figures the operator saw (the card's or the what-if's,
and the grid's N-1 status and look-ahead); the outcome of an applied decision is audited when the
feed worker records the next step (:func:`webapp.operations.services.feed.step_record`).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from webapp.audit.services import audit_record
from webapp.operations.errors import (
    DecisionConflictError,
    OperationsError,
    StaleStepError,
    UnknownObjectError,
)
from webapp.operations.models import (
    LIVE_STATUSES,
    Alarm,
    Decision,
    DecisionKind,
    DecisionStatus,
    LiveRecommendation,
    LiveSession,
    RecommendationStatus,
)
from webapp.operations.services.common import check_comment, locked_session, session_changed
from webapp.operations.services.figures import seen_for_recommendation, seen_for_what_if


def _check_current(session: LiveSession, step: int) -> None:
    if session.status not in LIVE_STATUSES:
        raise OperationsError(f"session {session.pk} is {session.status}; decisions are closed")
    if step != session.current_step or not session.decisions_open:
        raise StaleStepError(
            f"step {step} is stale: the grid is now at step {session.current_step}"
            + ("" if session.decisions_open else " and is moving to the next one")
            + "; decide on the current step's recommendations"
        )


def _check_free(session: LiveSession, step: int) -> None:
    """One action per step: refuse a second one, naming who chose the first."""
    taken = (
        Decision.objects.filter(
            session=session, step=step, kind__in=[DecisionKind.ACCEPT, DecisionKind.APPLY]
        )
        .select_related("decided_by")
        .first()
    )
    if taken is not None:
        raise DecisionConflictError(
            f"step {step} already has an action: {taken.description!r}, chosen by "
            f"{taken.decided_by.get_username()}; one action per step"
        )


def _decision_create(**fields: Any) -> Decision:
    try:
        with transaction.atomic():  # a savepoint: the constraint's refusal leaves nothing behind
            return Decision.objects.create(**fields)
    except IntegrityError:
        raise DecisionConflictError(
            f"step {fields['step']} already has an action; one action per step"
        ) from None


def _decidable(
    session: LiveSession, *, recommendation_id: int, step: int, decision: str
) -> LiveRecommendation:
    """The recommendation, if ``decision`` may be taken on it now (or the reason it may not).

    A card lasts while its situation does, re-simulated at each step: ``step`` is a step the
    operator saw it at, from its first step to the current one, and the decision is taken on the
    current step's figures (so a click that crosses a step still lands while the card is open)."""
    rec = LiveRecommendation.objects.filter(pk=recommendation_id, session=session).first()
    if rec is None:
        raise OperationsError(f"recommendation {recommendation_id} is not one of session {session.pk}'s")
    _check_current(session, session.current_step)
    if rec.status == RecommendationStatus.EXPIRED or rec.step != session.current_step:
        why = f": {rec.expired_because}" if rec.expired_because else ""
        raise StaleStepError(
            f"recommendation {rec.pk} expired at step {rec.step}{why}; decide on the current cards"
        )
    first = rec.first_step if rec.first_step is not None else rec.step
    if not first <= step <= session.current_step:
        raise StaleStepError(
            f"recommendation {rec.pk} was shown from step {first} to {session.current_step}, not at step {step}"
        )
    if decision == "accept":
        _check_free(session, session.current_step)
        if rec.error:
            raise OperationsError(f"this recommendation cannot be played: {rec.error}")
    elif rec.status == RecommendationStatus.ACCEPTED:
        raise DecisionConflictError(
            f"recommendation {rec.pk} was already accepted; it can no longer be rejected"
        )
    return rec


@transaction.atomic
def recommendation_decide(
    *,
    session_id: int,
    recommendation_id: int,
    user: AbstractBaseUser,
    step: int,
    decision: str,
    comment: str = "",
) -> Decision:
    """Accept (played at the next step) or reject one of the current step's recommendations."""
    if decision not in ("accept", "reject"):
        raise OperationsError(f"unknown decision {decision!r}; accepted: accept, reject")
    check_comment(comment)
    session = locked_session(session_id)
    rec = _decidable(session, recommendation_id=recommendation_id, step=step, decision=decision)
    step = session.current_step  # the step it is decided on, with that step's figures
    seen = seen_for_recommendation(session, rec)
    made = _decision_create(
        session=session,
        step=step,
        kind=DecisionKind.ACCEPT if decision == "accept" else DecisionKind.REJECT,
        recommendation=rec,
        action=rec.action,
        description=rec.description,
        decided_by=user,
        decided_at=timezone.now(),
        comment=comment,
        status=DecisionStatus.PENDING if decision == "accept" else DecisionStatus.CLOSED,
        figures_seen=seen,
    )
    before_status = rec.status
    rec.status = RecommendationStatus.ACCEPTED if decision == "accept" else RecommendationStatus.REJECTED
    rec.save(update_fields=["status"])
    session_changed(session)
    audit_record(
        actor=user,
        action=f"live.recommendation.{decision}",
        target=made,
        before={"recommendation_status": before_status},
        after={
            "session": session.pk,
            "step": step,
            "recommendation": rec.pk,
            "rank": rec.rank,
            "source": rec.source,
            "action": rec.description,
            "expected_max_rho_after": rec.max_rho_after,
            "decision": decision,
            "figures_seen": seen,
        },
        comment=comment,
    )
    return made


@transaction.atomic
def action_apply(
    *, session_id: int, user: AbstractBaseUser, step: int, action: Any, comment: str = ""
) -> Decision:
    """Play an operator's own action (composed in the what-if panel) at the next step, after
    checking it on the current state: an illegal action is refused with the reason."""
    from webapp.operations.mirror import what_if

    check_comment(comment)
    session = locked_session(session_id)
    _check_current(session, step)
    _check_free(session, step)
    outcome = what_if(session=session, step=step, action=action)
    if not outcome["legal"]:
        raise OperationsError(f"this action cannot be played: {outcome['refusal']}")
    seen = seen_for_what_if(session, step, outcome)
    made = _decision_create(
        session=session,
        step=step,
        kind=DecisionKind.APPLY,
        action=outcome["action"],
        description=outcome["description"],
        decided_by=user,
        decided_at=timezone.now(),
        comment=comment,
        status=DecisionStatus.PENDING,
        figures_seen=seen,
    )
    session_changed(session)
    audit_record(
        actor=user,
        action="live.action.apply",
        target=made,
        after={
            "session": session.pk,
            "step": step,
            "action": outcome["description"],
            "expected_max_rho_after": outcome["max_rho_after"],
            "decision": "apply",
            "figures_seen": seen,
        },
        comment=comment,
    )
    return made


@transaction.atomic
def alarm_acknowledge(*, session_id: int, alarm_id: int, user: AbstractBaseUser) -> Alarm:
    session = locked_session(session_id)
    alarm = Alarm.objects.filter(pk=alarm_id, session=session).first()
    if alarm is None:
        raise UnknownObjectError(f"alarm {alarm_id} is not one of session {session.pk}'s")
    if alarm.acknowledged_at is not None:
        raise DecisionConflictError(
            f"alarm {alarm.pk} was already acknowledged by {alarm.acknowledged_by.get_username()}"
        )
    alarm.acknowledged_by = user
    alarm.acknowledged_at = timezone.now()
    alarm.save(update_fields=["acknowledged_by", "acknowledged_at"])
    session_changed(session)
    audit_record(
        actor=user,
        action="live.alarm.acknowledge",
        target=alarm,
        after={"session": session.pk, "step": alarm.step},
    )
    return alarm
