"""Writes for review: refinements and shapings as the trainer reports them, reviewers' decisions.

A decision is final: approving or rejecting locks the row, refuses a refinement already decided
and writes the audit entry in the same transaction.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from ace_core.events import RefinementEvent, ShapingEvent
from webapp.audit.services import audit_record
from webapp.live import broadcast, run_messages
from webapp.review.errors import DecisionError
from webapp.review.models import (
    COMMENT_MAX_LENGTH,
    Refinement,
    RefinementRound,
    RefinementStatus,
    RewardShaping,
)
from webapp.training.models import TrainingRun
from webapp.training.services.events import finite_or_none

DECISIONS = {"approve": RefinementStatus.APPROVED, "reject": RefinementStatus.REJECTED}


@transaction.atomic
def refinement_record(*, run_id: int, event: RefinementEvent) -> Refinement:
    """Store a refinement and all its rounds. A refinement id the run already reported (the
    trainer re-reporting after a resume) returns the stored row unchanged."""
    existing = Refinement.objects.filter(run_id=run_id, refinement_id=event.refinement_id).first()
    if existing is not None:
        return existing
    refinement = Refinement.objects.create(
        run_id=run_id,
        refinement_id=event.refinement_id[:100],
        step=event.step,
        state_text=event.state_text,
        rl_action_index=event.rl_action_index,
        rl_action_text=event.rl_action_text,
        rl_reward=finite_or_none(event.rl_reward) or 0.0,
        rl_max_rho=finite_or_none(event.rl_max_rho) or 0.0,
        llm_action_index=event.llm_action_index,
        llm_action_text=event.llm_action_text,
        llm_reward=finite_or_none(event.llm_reward),
        llm_max_rho=finite_or_none(event.llm_max_rho),
        rl_n1=event.rl_n1,
        llm_n1=event.llm_n1,
        accepted_by_simulation=event.accepted_by_simulation,
        model=event.model[:200],
        adapter_version=event.adapter_version,
        reason=event.reason,
    )
    RefinementRound.objects.bulk_create(
        RefinementRound(
            refinement=refinement,
            number=number,
            prompt=record.prompt,
            response=record.response,
            action_index=record.action_index,
            simulated_reward=finite_or_none(record.simulated_reward),
            simulated_max_rho=finite_or_none(record.simulated_max_rho),
            accepted=record.accepted,
            error=record.error,
            seconds=record.seconds,
        )
        for number, record in enumerate(event.rounds, start=1)
    )
    return refinement


@transaction.atomic
def shaping_record(*, run_id: int, event: ShapingEvent) -> RewardShaping:
    return RewardShaping.objects.create(
        run_id=run_id,
        step=event.step,
        episode_index=event.episode_index,
        trajectory_step=event.trajectory_step,
        adjustment=event.adjustment,
        rationale=event.rationale,
        model=event.model[:200],
    )


@transaction.atomic
def refinement_decide(
    *,
    refinement: Refinement,
    run: TrainingRun,
    reviewer: AbstractBaseUser,
    decision: str,
    comment: str = "",
) -> Refinement:
    """Approve or reject one refinement of ``run``. Raises DecisionError naming what was wrong."""
    if decision not in DECISIONS:
        raise DecisionError(f"decision {decision!r} is not accepted; choose one of: {', '.join(DECISIONS)}")
    if len(comment) > COMMENT_MAX_LENGTH:
        raise DecisionError(
            f"comment is {len(comment)} characters long; accepted: at most {COMMENT_MAX_LENGTH}"
        )
    locked = Refinement.objects.select_for_update().get(pk=refinement.pk)
    if locked.run_id != run.pk:
        raise DecisionError(
            f"refinement {locked.refinement_id} belongs to run {locked.run_id}, not run {run.pk}; "
            "decide it from its own run"
        )
    if locked.status != RefinementStatus.PENDING:
        who = locked.decided_by.get_username() if locked.decided_by else "someone"
        raise DecisionError(
            f"refinement {locked.refinement_id} was already {locked.status} by {who} "
            f"at {locked.decided_at:%Y-%m-%d %H:%M:%S} UTC; decisions are final"
        )
    before = {"status": locked.status}
    locked.status = DECISIONS[decision]
    locked.decided_by = reviewer
    locked.decided_at = timezone.now()
    locked.decision_comment = comment
    locked.save(update_fields=["status", "decided_by", "decided_at", "decision_comment"])
    audit_record(
        actor=reviewer,
        action=f"refinement.{decision}",
        target=locked,
        before=before,
        after={
            "status": locked.status,
            "run": run.pk,
            "accepted_by_simulation": locked.accepted_by_simulation,
        },
        comment=comment,
    )
    message = run_messages.refinement_message(locked)
    broadcast.send_after_commit(broadcast.run_group(run.pk), message)
    broadcast.send_after_commit(broadcast.REVIEW_QUEUE_GROUP, message)
    return locked
