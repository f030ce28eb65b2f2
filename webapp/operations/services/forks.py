"""A new session from a step of another: the same day, seed, settings and frozen policy, with the
steps before it copied, so the grid is the one the operators had at that step (an incident to go
over again, another decision to try).

The new session holds steps ``0 .. step - 1`` of the source and, as a pending decision, the action
the source played to reach ``step``; it starts paused with one step asked for, so its feed worker
rebuilds the grid by replaying the copied actions (as any resumed session does), plays that
action and records ``step`` afresh, with the cards of that moment. grid2op is deterministic for a
seed and actions, so that step is the source's.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from webapp.audit.services import audit_record
from webapp.operations.errors import OperationsError
from webapp.operations.models import (
    Decision,
    DecisionKind,
    DecisionStatus,
    LiveSession,
    SessionStatus,
    SessionStep,
)

COPIED_STEP_FIELDS = (
    "step",
    "state",
    "text",
    "max_rho",
    "overloads",
    "reward",
    "done",
    "applied_action",
    "recommend_ms",
    "assessment",
    "stepped_at",
)


@transaction.atomic
def session_fork(*, session_id: int, step: int, user: AbstractBaseUser, label: str = "") -> LiveSession:
    """A paused session that opens at ``step`` of session ``session_id`` (see the module)."""
    source = LiveSession.objects.filter(pk=session_id).select_related("deployment").first()
    if source is None:
        raise OperationsError(f"live session {session_id} does not exist")
    last = source.current_step
    if last < 0:
        raise OperationsError(f"session {source.pk} has recorded no step yet; nothing to open from")
    if not 0 <= step <= last:
        raise OperationsError(
            f"step {step} is not a recorded step of session {source.pk}; accepted: 0 to {last}", field="step"
        )
    reached = SessionStep.objects.get(session=source, step=step)
    if reached.done:
        raise OperationsError(
            f"the grid of session {source.pk} was over at step {step}; accepted: 0 to {last - 1}",
            field="step",
        )
    label = label or f"from session {source.pk} at step {step}"
    if len(label) > 100:
        raise OperationsError(f"label is {len(label)} characters long; accepted: at most 100", field="label")
    fork = LiveSession.objects.create(
        label=label,
        env=source.env,
        scenario_index=source.scenario_index,
        scenario_name=source.scenario_name,
        start_step=source.start_step,
        max_steps=source.max_steps,
        seed=source.seed,
        k=source.k,
        speed_seconds=source.speed_seconds,
        deployment=source.deployment,
        policy_path=source.policy_path,
        status=SessionStatus.PAUSED,
        steps_requested=1 if step > 0 else 0,  # step 0 is recorded on its own
        current_step=step - 1,
        layout=source.layout,
        created_by=user,
    )
    copied = SessionStep.objects.filter(session=source, step__lt=step).order_by("step")
    SessionStep.objects.bulk_create(
        [
            SessionStep(session=fork, **{name: getattr(row, name) for name in COPIED_STEP_FIELDS})
            for row in copied
        ]
    )
    if step > 0 and reached.applied_action:
        Decision.objects.create(
            session=fork,
            step=step - 1,
            kind=DecisionKind.APPLY,
            action=reached.applied_action,
            description=_played(source, step),
            decided_by=user,
            decided_at=timezone.now(),
            comment=f"played in session {source.pk} to reach step {step}",
            status=DecisionStatus.PENDING,
        )
    audit_record(
        actor=user,
        action="live.session.fork",
        target=fork,
        after={"source": source.pk, "step": step, "scenario": fork.scenario_name, "seed": fork.seed},
    )
    return fork


def _played(source: LiveSession, step: int) -> str:
    """How the source's decision that reached ``step`` was worded (the action it played)."""
    decision = Decision.objects.filter(
        session=source, applied_step=step, status=DecisionStatus.APPLIED
    ).first()
    return (
        decision.description if decision is not None else f"the action of session {source.pk}'s step {step}"
    )
