"""Evaluating a finished run against the baseline agents (do-nothing, reconnect, greedy...).

The worker runs :func:`ace_core.evaluation.runner.evaluate` once for the run's policy and once per
baseline, on the same held-out episodes, and stores each result under the agent's name
(:mod:`webapp.training.worker.evaluation`; it starts, finishes and fails the evaluation through
the job lifecycle every job shares, :mod:`webapp.jobs.services`).
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from webapp.audit.services import audit_record
from webapp.jobs.models import JobStatus
from webapp.training.errors import RunStateError
from webapp.training.models import Evaluation, TrainingRun
from webapp.training.tasks import evaluate_run

SPLITS = ("validation", "test")
MAX_EPISODES = 100


@transaction.atomic
def evaluation_request(
    *, run: TrainingRun, user: AbstractBaseUser, split: str, nb_episode: int
) -> Evaluation:
    run = TrainingRun.objects.select_for_update().get(pk=run.pk)
    if run.status != JobStatus.SUCCEEDED:
        raise RunStateError(f"run {run.pk} is {run.status}; only succeeded runs can be evaluated")
    if split not in SPLITS:
        raise RunStateError(f"split {split!r} is not accepted; choose one of: {', '.join(SPLITS)}")
    if isinstance(nb_episode, bool) or not 1 <= nb_episode <= MAX_EPISODES:
        raise RunStateError(f"nb_episode={nb_episode!r} is out of range; accepted: 1 to {MAX_EPISODES}")
    checkpoint = run.checkpoints.order_by("-id").first()
    if checkpoint is None:
        raise RunStateError(f"run {run.pk} has no checkpoint to evaluate")
    if run.evaluations.filter(status__in=(JobStatus.QUEUED, JobStatus.RUNNING)).exists():
        raise RunStateError(f"run {run.pk} already has an evaluation in progress; wait for it to finish")
    evaluation = Evaluation.objects.create(
        run=run, checkpoint=checkpoint, split=split, nb_episode=nb_episode, requested_by=user
    )
    result = evaluate_run.enqueue(evaluation_id=evaluation.pk)
    evaluation.task_id = str(result.id)
    evaluation.save(update_fields=["task_id"])
    audit_record(
        actor=user,
        action="run.evaluate",
        target=run,
        after={
            "evaluation": evaluation.pk,
            "split": split,
            "nb_episode": nb_episode,
            "checkpoint_step": checkpoint.step,
        },
    )
    return evaluation
