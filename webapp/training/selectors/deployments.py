"""Deployments and the deploy guard: the deployment live sessions use now, every deploy and
rollback, one deployment; a run's policy on test days beside do-nothing (as a finished
evaluation played it), and the guard that reads that outcome before a checkpoint is deployed
without an override."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from webapp.jobs.models import JobStatus
from webapp.training.models import Checkpoint, Deployment, Evaluation, TrainingRun
from webapp.training.selectors.evaluations import RUN_AGENT, RUN_CHECKED_AGENT, RUN_LABELS


def deployment_current() -> Deployment | None:
    return (
        Deployment.objects.select_related(
            "checkpoint__run", "deployed_by", "previous__checkpoint__run", "evaluation"
        )
        .order_by("-deployed_at", "-id")
        .first()
    )


def deployment_list() -> QuerySet[Deployment]:
    """Every deployment decision (deploys and rollbacks), newest first: the first is current."""
    return Deployment.objects.select_related("checkpoint", "deployed_by").order_by("-deployed_at", "-id")


def deployment_get(*, pk: int) -> Deployment | None:
    return (
        Deployment.objects.select_related("checkpoint__run", "deployed_by", "previous__checkpoint__run")
        .filter(pk=pk)
        .first()
    )


# --- outcomes on test days, and the deploy guard that reads them ---

DO_NOTHING = "do-nothing"
"""the baseline a policy must at least match on test days to be deployed without an override"""
DEPLOY_SPLIT = "test"
"""the days the deploy guard reads an evaluation on"""


@dataclass(frozen=True)
class OutcomeOnTestDays:
    """A run's policy on test days, as one finished evaluation played it, beside do-nothing.

    ``agent`` is the policy as deployed (checked by simulation) when the evaluation played it, else
    the plain policy (an evaluation made with ``GRIDACE_CHECKED_AGENT`` empty)."""

    evaluation: Evaluation
    agent: str
    survival: float | None
    do_nothing: float | None
    simulations_per_step: float | None
    episodes: int

    @property
    def agent_label(self) -> str:
        return RUN_LABELS[self.agent]

    @property
    def at_least_do_nothing(self) -> bool:
        """The policy survives, on average, at least as long as do-nothing on these days."""
        return self.survival is not None and self.do_nothing is not None and self.survival >= self.do_nothing


def _number(result: Any, key: str) -> float | None:
    value = result.get(key) if isinstance(result, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def outcome_on_test_days(*, evaluation: Evaluation) -> OutcomeOnTestDays:
    """The run's policy (checked by simulation when played so) against do-nothing in ``evaluation``."""
    results = evaluation.results if isinstance(evaluation.results, dict) else {}
    agent = RUN_CHECKED_AGENT if isinstance(results.get(RUN_CHECKED_AGENT), dict) else RUN_AGENT
    result = results.get(agent)
    episodes = result.get("episodes", []) if isinstance(result, dict) else []
    return OutcomeOnTestDays(
        evaluation=evaluation,
        agent=agent,
        survival=_number(result, "survival_mean"),
        do_nothing=_number(results.get(DO_NOTHING), "survival_mean"),
        simulations_per_step=_number(result, "simulate_calls_per_step"),
        episodes=len(episodes) if isinstance(episodes, list) else 0,
    )


def _finished_test_evaluations() -> QuerySet[Evaluation]:
    return Evaluation.objects.filter(split=DEPLOY_SPLIT, status=JobStatus.SUCCEEDED).order_by(
        "-finished_at", "-id"
    )


def runs_test_outcomes(*, runs: Iterable[TrainingRun]) -> dict[int, OutcomeOnTestDays]:
    """Each run's newest finished evaluation on test days, as an :class:`OutcomeOnTestDays`, by run id, in
    one query; a run without one is absent."""
    outcomes: dict[int, OutcomeOnTestDays] = {}
    for evaluation in _finished_test_evaluations().filter(run__in=[run.pk for run in runs]):
        if evaluation.run_id not in outcomes:
            outcomes[evaluation.run_id] = outcome_on_test_days(evaluation=evaluation)
    return outcomes


@dataclass(frozen=True)
class DeployCheck:
    """What the deploy guard finds for a checkpoint: the newest finished evaluation of it on test
    days, and ``refusal``, what is missing for a deploy without an override (empty: nothing)."""

    checkpoint: Checkpoint
    outcome: OutcomeOnTestDays | None
    refusal: str

    @property
    def passed(self) -> bool:
        return not self.refusal


def deploy_check(*, checkpoint: Checkpoint) -> DeployCheck:
    """The deploy guard: deploying ``checkpoint`` without an override needs a finished evaluation
    of it on test days in which the policy as deployed (checked by simulation) survives at least as
    long as do-nothing, on average. The newest such evaluation is the one read."""
    run_id, step = checkpoint.run_id, checkpoint.step
    evaluation = _finished_test_evaluations().filter(checkpoint=checkpoint).first()
    if evaluation is None:
        pending = checkpoint.evaluations.filter(
            split=DEPLOY_SPLIT, status__in=(JobStatus.QUEUED, JobStatus.RUNNING)
        ).first()
        if pending is not None:
            refusal = (
                f"evaluation {pending.pk} of run {run_id} on test days is {pending.status}, not finished"
            )
        else:
            refusal = f"run {run_id} has no finished evaluation on test days of its checkpoint at step {step}"
        return DeployCheck(checkpoint=checkpoint, outcome=None, refusal=refusal)
    outcome = outcome_on_test_days(evaluation=evaluation)
    where = f"evaluation {evaluation.pk} (test days, {evaluation.nb_episode} episodes)"
    if outcome.do_nothing is None:
        refusal = f"{where} has no do-nothing figure to compare with (do-nothing was not among its baselines)"
    elif outcome.survival is None:
        refusal = f"{where} has no survival figure for {outcome.agent_label}"
    elif not outcome.at_least_do_nothing:
        refusal = (
            f"in {where} {outcome.agent_label} survives {outcome.survival:.3f} of the steps on average, "
            f"below do-nothing's {outcome.do_nothing:.3f}"
        )
    else:
        refusal = ""
    return DeployCheck(checkpoint=checkpoint, outcome=outcome, refusal=refusal)
