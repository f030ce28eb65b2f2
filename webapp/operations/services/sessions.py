"""Writing live sessions: starting and controlling them, operators' decisions, alarms,
explanations, and what the feed worker records at each step.

Every write runs under ``transaction.atomic`` and locks the session row first, so decisions on one
session are serialised: of two operators accepting at the same moment exactly one wins (the
database's conditional unique constraint is the second guard). Decisions are audited in the same
transaction; the outcome of an applied decision is audited when the worker records the next step.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from ace_core.live import (
    LiveActionError,
    StepResult,
    absolute_action,
    card_dict,
    describe_action,
    parse_action,
)
from webapp.audit.services import audit_record
from webapp.live import session_messages
from webapp.operations import selectors
from webapp.operations.errors import (
    DecisionConflictError,
    LostOwnershipError,
    OperationsError,
    StaleStepError,
)
from webapp.operations.models import (
    LIVE_STATUSES,
    Alarm,
    Decision,
    DecisionKind,
    DecisionStatus,
    ExplanationStatus,
    LiveRecommendation,
    LiveSession,
    RecommendationStatus,
    SessionStatus,
    SessionStep,
)
from webapp.training.models import Deployment

K_RANGE = (1, 10)
SPEED_RANGE = (0.0, 60.0)
COMMENT_MAX_LENGTH = 500
CONTROL_COMMANDS = ("pause", "resume", "step", "speed", "stop")


def _locked(session_id: int) -> LiveSession:
    session = LiveSession.objects.select_for_update().filter(pk=session_id).first()
    if session is None:
        raise OperationsError(f"live session {session_id} does not exist")
    return session


def _changed(session: LiveSession, *fields: str) -> None:
    """Save ``fields``, bump the revision and tell the session's consoles after commit."""
    session.revision += 1
    session.save(update_fields=[*fields, "revision"])
    session_id = session.pk
    transaction.on_commit(lambda: _send_panel(session_id))


def _send_panel(session_id: int) -> None:
    from webapp.live.broadcast import send_now

    session = LiveSession.objects.filter(pk=session_id).first()
    if session is not None:
        send_now(session_messages.group_name(session_id), selectors.panel(session=session))


# ----- sessions -------------------------------------------------------------------------------
@transaction.atomic
def session_start(
    *,
    user: AbstractBaseUser,
    scenario_index: int,
    seed: int = 0,
    k: int = 3,
    speed_seconds: float = 2.0,
    max_steps: int = 0,
    label: str = "",
) -> LiveSession:
    """A new session of the deployed policy's env; a feed worker picks it up within a second."""
    deployment = Deployment.objects.select_related("checkpoint__run").order_by("-deployed_at", "-id").first()
    if deployment is None:
        raise OperationsError("no policy is deployed; an engineer must deploy a checkpoint first")
    env = deployment.checkpoint.run.env
    if not K_RANGE[0] <= k <= K_RANGE[1]:
        raise OperationsError(
            f"k={k} is out of range; accepted: {K_RANGE[0]} to {K_RANGE[1]} recommendations"
        )
    if not SPEED_RANGE[0] <= speed_seconds <= SPEED_RANGE[1]:
        raise OperationsError(
            f"speed={speed_seconds} s is out of range; accepted: {SPEED_RANGE[0]} to {SPEED_RANGE[1]} s per step"
        )
    if seed < 0 or max_steps < 0:
        raise OperationsError("seed and max_steps must be 0 or more")
    names = selectors.scenario_names(env)
    if not 0 <= scenario_index < len(names):
        raise OperationsError(
            f"scenario {scenario_index} does not exist for {env}; accepted: 0 to {len(names) - 1}"
        )
    if len(label) > 100:
        raise OperationsError(f"label is {len(label)} characters long; accepted: at most 100")
    session = LiveSession.objects.create(
        label=label,
        env=env,
        scenario_index=scenario_index,
        scenario_name=names[scenario_index],
        max_steps=max_steps,
        seed=seed,
        k=k,
        speed_seconds=speed_seconds,
        deployment=deployment,
        policy_path=deployment.path,
        created_by=user,
    )
    audit_record(
        actor=user,
        action="live.session.start",
        target=session,
        after={
            "env": env,
            "scenario": session.scenario_name,
            "seed": seed,
            "k": k,
            "speed": speed_seconds,
            "deployment": deployment.pk,
        },
    )
    return session


@transaction.atomic
def session_control(
    *, session_id: int, user: AbstractBaseUser, command: str, speed_seconds: float | None = None
) -> LiveSession:
    """pause, resume, step (one step while paused), speed (seconds per step), stop."""
    if command not in CONTROL_COMMANDS:
        raise OperationsError(f"unknown command {command!r}; accepted: {', '.join(CONTROL_COMMANDS)}")
    session = _locked(session_id)
    if session.status not in LIVE_STATUSES:
        raise OperationsError(
            f"session {session.pk} is {session.status}; only running or paused sessions obey"
        )
    before = {"status": session.status, "speed_seconds": session.speed_seconds}
    fields = ["status"]
    if command == "pause":
        session.status = SessionStatus.PAUSED
    elif command == "resume":
        session.status = SessionStatus.RUNNING
        session.steps_requested = 0
        fields.append("steps_requested")
    elif command == "step":
        if session.status != SessionStatus.PAUSED:
            raise OperationsError("single steps are for paused sessions; pause the session first")
        session.steps_requested += 1
        fields.append("steps_requested")
    elif command == "speed":
        if speed_seconds is None or not SPEED_RANGE[0] <= speed_seconds <= SPEED_RANGE[1]:
            raise OperationsError(
                f"speed={speed_seconds} s is out of range; accepted: {SPEED_RANGE[0]} to {SPEED_RANGE[1]} s per step"
            )
        session.speed_seconds = speed_seconds
        fields.append("speed_seconds")
    else:
        session.status = SessionStatus.STOPPED
        session.end_reason = f"stopped by {user.get_username()}"
        session.finished_at = timezone.now()
        session.decisions_open = False
        fields += ["end_reason", "finished_at", "decisions_open"]
        _expire_open(session)
    _changed(session, *fields)
    audit_record(
        actor=user,
        action=f"live.session.{command}",
        target=session,
        before=before,
        after={"status": session.status, "speed_seconds": session.speed_seconds},
    )
    return session


def _expire_open(session: LiveSession) -> None:
    LiveRecommendation.objects.filter(session=session, status=RecommendationStatus.OPEN).update(
        status=RecommendationStatus.EXPIRED
    )


# ----- decisions ------------------------------------------------------------------------------
def _check_current(session: LiveSession, step: int) -> None:
    if session.status not in LIVE_STATUSES:
        raise OperationsError(f"session {session.pk} is {session.status}; decisions are closed")
    if step != session.current_step or not session.decisions_open:
        raise StaleStepError(
            f"step {step} is stale: the grid is now at step {session.current_step}"
            + ("" if session.decisions_open else " and is moving to the next one")
            + "; decide on the current step's recommendations"
        )


def _taken(session: LiveSession, step: int) -> Decision | None:
    return (
        Decision.objects.filter(
            session=session, step=step, kind__in=[DecisionKind.ACCEPT, DecisionKind.APPLY]
        )
        .select_related("decided_by")
        .first()
    )


def _check_comment(comment: str) -> None:
    if len(comment) > COMMENT_MAX_LENGTH:
        raise OperationsError(
            f"comment is {len(comment)} characters long; accepted: at most {COMMENT_MAX_LENGTH}"
        )


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
    _check_comment(comment)
    session = _locked(session_id)
    rec = LiveRecommendation.objects.filter(pk=recommendation_id, session=session).first()
    if rec is None:
        raise OperationsError(f"recommendation {recommendation_id} is not one of session {session.pk}'s")
    _check_current(session, step)
    if rec.step != step:
        raise StaleStepError(
            f"recommendation {rec.pk} was made for step {rec.step}, not the current step {step}"
        )
    taken = _taken(session, step)
    if decision == "accept":
        if taken is not None:
            raise DecisionConflictError(
                f"step {step} already has an action: {taken.description!r}, chosen by "
                f"{taken.decided_by.get_username()}; one action per step"
            )
        if rec.error:
            raise OperationsError(f"this recommendation cannot be played: {rec.error}")
    elif rec.status == RecommendationStatus.ACCEPTED:
        raise DecisionConflictError(
            f"recommendation {rec.pk} was already accepted; it can no longer be rejected"
        )
    now = timezone.now()
    try:
        with transaction.atomic():  # a savepoint: the constraint's refusal leaves nothing behind
            made = Decision.objects.create(
                session=session,
                step=step,
                kind=DecisionKind.ACCEPT if decision == "accept" else DecisionKind.REJECT,
                recommendation=rec,
                action=rec.action,
                description=rec.description,
                decided_by=user,
                decided_at=now,
                comment=comment,
                status=DecisionStatus.PENDING if decision == "accept" else DecisionStatus.CLOSED,
            )
    except IntegrityError:
        raise DecisionConflictError(f"step {step} already has an action; one action per step") from None
    before_status = rec.status
    rec.status = RecommendationStatus.ACCEPTED if decision == "accept" else RecommendationStatus.REJECTED
    rec.save(update_fields=["status"])
    _changed(session)
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

    _check_comment(comment)
    session = _locked(session_id)
    _check_current(session, step)
    taken = _taken(session, step)
    if taken is not None:
        raise DecisionConflictError(
            f"step {step} already has an action: {taken.description!r}, chosen by "
            f"{taken.decided_by.get_username()}; one action per step"
        )
    outcome = what_if(session=session, step=step, action=action)
    if not outcome["legal"]:
        raise OperationsError(f"this action cannot be played: {outcome['refusal']}")
    try:
        with transaction.atomic():
            made = Decision.objects.create(
                session=session,
                step=step,
                kind=DecisionKind.APPLY,
                action=outcome["action"],
                description=outcome["description"],
                decided_by=user,
                decided_at=timezone.now(),
                comment=comment,
                status=DecisionStatus.PENDING,
            )
    except IntegrityError:
        raise DecisionConflictError(f"step {step} already has an action; one action per step") from None
    _changed(session)
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
        },
        comment=comment,
    )
    return made


@transaction.atomic
def alarm_acknowledge(*, session_id: int, alarm_id: int, user: AbstractBaseUser) -> Alarm:
    session = _locked(session_id)
    alarm = Alarm.objects.filter(pk=alarm_id, session=session).first()
    if alarm is None:
        raise OperationsError(f"alarm {alarm_id} is not one of session {session.pk}'s")
    if alarm.acknowledged_at is not None:
        raise DecisionConflictError(
            f"alarm {alarm.pk} was already acknowledged by {alarm.acknowledged_by.get_username()}"
        )
    alarm.acknowledged_by = user
    alarm.acknowledged_at = timezone.now()
    alarm.save(update_fields=["acknowledged_by", "acknowledged_at"])
    _changed(session)
    audit_record(
        actor=user,
        action="live.alarm.acknowledge",
        target=alarm,
        after={"session": session.pk, "step": alarm.step},
    )
    return alarm


# ----- explanations ---------------------------------------------------------------------------
@transaction.atomic
def explanation_request(
    *, session_id: int, recommendation_id: int, user: AbstractBaseUser
) -> LiveRecommendation:
    """Queue an LLM explanation of a recommendation (the ``explain`` queue; never on the feed's path)."""
    from webapp.operations.tasks import explain_recommendation

    session = _locked(session_id)
    rec = LiveRecommendation.objects.filter(pk=recommendation_id, session=session).first()
    if rec is None:
        raise OperationsError(f"recommendation {recommendation_id} is not one of session {session.pk}'s")
    if rec.explanation_status in (ExplanationStatus.PENDING, ExplanationStatus.READY):
        return rec  # asked already: the answer comes (or came) to every console
    rec.explanation_status = ExplanationStatus.PENDING
    rec.save(update_fields=["explanation_status"])
    _changed(session)
    transaction.on_commit(lambda: explain_recommendation.enqueue(recommendation_id=rec.pk))
    return rec


@transaction.atomic
def explanation_record(
    *, recommendation_id: int, text: str, model: str, failed: bool = False
) -> LiveRecommendation:
    rec = LiveRecommendation.objects.select_related("session").get(pk=recommendation_id)
    session = _locked(rec.session_id)
    rec.explanation = text
    rec.explanation_model = model
    rec.explanation_status = ExplanationStatus.FAILED if failed else ExplanationStatus.READY
    rec.save(update_fields=["explanation", "explanation_model", "explanation_status"])
    _changed(session)
    return rec


# ----- the feed worker ------------------------------------------------------------------------
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
    updated = LiveSession.objects.filter(pk=session_id, worker_token=worker_token).update(
        heartbeat_at=timezone.now()
    )
    if not updated:
        raise LostOwnershipError(f"session {session_id} is no longer owned by this worker")
    return LiveSession.objects.get(pk=session_id)


@transaction.atomic
def session_resumed(*, session_id: int, worker_token: str, layout: dict[str, Any]) -> LiveSession:
    session = _owned(session_id, worker_token)
    session.layout = layout
    fields = ["layout"]
    if session.current_step >= 0:
        session.resumes += 1
        fields.append("resumes")
    _changed(session, *fields)
    return session


def _owned(session_id: int, worker_token: str) -> LiveSession:
    session = _locked(session_id)
    if session.worker_token != worker_token:
        raise LostOwnershipError(f"session {session_id} is no longer owned by this worker")
    return session


@transaction.atomic
def decisions_close(*, session_id: int, worker_token: str) -> Decision | None:
    """Close the current step to decisions and return the action to play (if any)."""
    session = _owned(session_id, worker_token)
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
    session = _owned(session_id, worker_token)
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
        stepped_at=now,
    )
    _expire_open(session)
    recs = LiveRecommendation.objects.bulk_create(
        [
            LiveRecommendation(
                session=session,
                step=result.step,
                rank=rank,
                action=absolute_action(card.action_index, space).to_dict(),
                **{k: v for k, v in card_dict(card).items() if k not in ("action_index",)},
            )
            for rank, card in enumerate(result.cards)
        ]
    )
    raised = Alarm.objects.bulk_create(
        [Alarm(session=session, step=result.step, raised_at=now, **alarm) for alarm in alarms]
    )
    if applied is not None:
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
    session.current_step = result.step
    session.heartbeat_at = now
    fields = ["current_step", "heartbeat_at", "decisions_open"]
    if result.done:
        session.status = SessionStatus.FINISHED
        session.finished_at = now
        session.decisions_open = False
        session.end_reason = (
            "scenario finished" if result.finished else f"game over: {result.reason or 'the grid failed'}"
        )
        fields += ["status", "finished_at", "end_reason"]
        _expire_open(session)
    else:
        session.decisions_open = True
    if session.steps_requested and session.status == SessionStatus.PAUSED and result.step > 0:
        session.steps_requested -= 1
        fields.append("steps_requested")
    session.revision += 1
    session.save(update_fields=[*fields, "revision"])
    return session_messages.step_message(
        session=session,
        row=row,
        previous_state=previous_state,
        recommendations=recs if not result.done else [],
        alarms=raised,
        applied=applied,
    )


@transaction.atomic
def session_fail(*, session_id: int, worker_token: str, error: str) -> None:
    session = _locked(session_id)
    if session.worker_token != worker_token or session.status not in LIVE_STATUSES:
        return
    session.status = SessionStatus.FAILED
    session.end_reason = error[:2000]
    session.finished_at = timezone.now()
    session.decisions_open = False
    _expire_open(session)
    _changed(session, "status", "end_reason", "finished_at", "decisions_open")


def session_release(*, session_id: int, worker_token: str) -> None:
    """Hand the session back (worker stopping): another worker may take it at once."""
    LiveSession.objects.filter(pk=session_id, worker_token=worker_token).update(
        worker_token="", heartbeat_at=None, revision=F("revision") + 1
    )


def action_check(*, spec: Any, space: Any) -> dict[str, Any]:
    """Normalise an action for the record (raises OperationsError naming what is wrong)."""
    try:
        action = parse_action(spec, space)
    except LiveActionError as error:
        raise OperationsError(str(error)) from None
    return {"action": action.to_dict(), "description": describe_action(action, space)}
