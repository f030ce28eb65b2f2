"""Reads for review: the queue with its filters, a refinement with its rounds and the evidence
its page shows in words (verdict, actions, diagrams), shapings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet

from webapp.review.actions import action_diagram, action_words, run_action_space
from webapp.review.evidence import Answer, Verdict, round_answer, state_step
from webapp.review.models import Refinement, RefinementRound, RefinementStatus, RewardShaping

STATUS_FILTERS = ("pending", "approved", "rejected", "all")
SIMULATION_FILTERS = ("any", "accepted", "not_accepted")


def refinement_queue(
    *, status: str = "pending", run_id: int | None = None, simulation: str = "any"
) -> QuerySet[Refinement]:
    """Refinements, oldest pending first (the order a reviewer works through them)."""
    refinements = Refinement.objects.select_related("run", "decided_by")
    if status != "all":
        refinements = refinements.filter(status=status)
    if run_id is not None:
        refinements = refinements.filter(run_id=run_id)
    if simulation == "accepted":
        refinements = refinements.filter(accepted_by_simulation=True)
    elif simulation == "not_accepted":
        refinements = refinements.filter(accepted_by_simulation=False)
    order = ("step", "id") if status == "pending" else ("-decided_at", "-id")
    return refinements.order_by(*order)


def refinement_get(*, run_id: int, pk: int) -> Refinement | None:
    return (
        Refinement.objects.select_related("run", "decided_by")
        .prefetch_related("rounds")
        .filter(run_id=run_id, pk=pk)
        .first()
    )


@dataclass(frozen=True)
class RoundView:
    """A round as the reviewer reads it: the LLM's answer and the action it names in words first,
    then the simulated outcome, the scores and the prompt."""

    round: RefinementRound
    action: str
    answer: Answer


@dataclass(frozen=True)
class RefinementEvidence:
    """Everything the refinement page shows besides the stored row."""

    verdict: Verdict
    state_step: int | None
    """the episode step of the grid state shown (the row's ``step`` is the run's training step)"""
    rounds: list[RoundView]
    diagrams: dict[str, Any]
    """``rl`` and ``llm``: what :func:`webapp.review.actions.action_diagram` draws (None: nothing)"""


def refinement_evidence(*, refinement: Refinement) -> RefinementEvidence:
    """The verdict, the state's step, the rounds' actions in words and the actions' diagrams."""
    space = run_action_space(env=refinement.run.env, config=refinement.run.config)
    known = {refinement.rl_action_index: refinement.rl_action_text}
    if refinement.llm_action_index is not None and refinement.llm_action_text:
        known[refinement.llm_action_index] = refinement.llm_action_text
    rounds = [
        RoundView(
            round=row, action=action_words(space, row.action_index, known), answer=round_answer(row.response)
        )
        for row in refinement.rounds.all()
    ]
    return RefinementEvidence(
        verdict=refinement.verdict,
        state_step=state_step(refinement.state_text),
        rounds=rounds,
        diagrams={
            "rl": action_diagram(space, refinement.rl_action_index),
            "llm": action_diagram(space, refinement.llm_action_index),
        },
    )


def refinement_find(*, pk: int) -> Refinement | None:
    """A refinement by primary key, whatever its run (the decision service checks the run)."""
    return Refinement.objects.select_related("run").filter(pk=pk).first()


def refinement_decision(*, run_id: int, refinement_id: str) -> bool | None:
    """For the trainer: True approved, False rejected, None pending or unknown."""
    status = (
        Refinement.objects.filter(run_id=run_id, refinement_id=refinement_id)
        .values_list("status", flat=True)
        .first()
    )
    if status == RefinementStatus.APPROVED:
        return True
    if status == RefinementStatus.REJECTED:
        return False
    return None


def refinement_counts() -> dict[str, int]:
    return Refinement.objects.aggregate(
        pending=Count("id", filter=Q(status=RefinementStatus.PENDING)),
        approved=Count("id", filter=Q(status=RefinementStatus.APPROVED)),
        rejected=Count("id", filter=Q(status=RefinementStatus.REJECTED)),
    )


def refinement_run_ids() -> list[int]:
    return list(Refinement.objects.order_by("-run_id").values_list("run_id", flat=True).distinct())


def shaping_list(*, run_id: int | None = None) -> QuerySet[RewardShaping]:
    shapings = RewardShaping.objects.select_related("run")
    if run_id is not None:
        shapings = shapings.filter(run_id=run_id)
    return shapings.order_by("-id")


def refinement_messages_since(*, after_id: int | None) -> tuple[list[dict], int]:
    """Live messages of refinements stored after ``after_id`` (None: just the current cursor)."""
    from webapp.live import run_messages

    if after_id is None:
        return [], Refinement.objects.order_by("-id").values_list("id", flat=True).first() or 0
    rows = list(Refinement.objects.filter(pk__gt=after_id).order_by("id")[:500])
    return [run_messages.refinement_message(row) for row in rows], (rows[-1].pk if rows else after_id)
