"""Training runs: engineers' decisions (launch, cancel, resume; each audited in the same
transaction), and what the worker records of an attempt (start, finish, fail, release).

The attempt's lifecycle is the one every job shares (:mod:`webapp.jobs.services`: it owns the run
through its ``worker_token``; a worker that lost the run changes nothing); a run adds the roll-back
of its charts when a new attempt starts, the hand-back to the queue when its worker stops, and a
status message to its pages after every change.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from ace_core.config import TrainConfig
from ace_core.errors import ConfigError
from ace_core.llm.openai_compat import ENV_BASE_URL
from ace_core.training.recipes import recipe_get
from webapp.audit.services import audit_record
from webapp.jobs.models import JobStatus
from webapp.jobs.services import job_fail, job_finish, job_owned, job_start
from webapp.live import broadcast, run_messages
from webapp.training.errors import RunStateError
from webapp.training.models import EpisodeRecord, MetricPoint, TrainingRun
from webapp.training.tasks import train_run

LABEL_MAX_LENGTH = 100


def _run_state(run: TrainingRun) -> dict:
    return {"status": run.status, "attempt": run.attempt, "cancel_requested": run.cancel_requested}


def run_status_announce(run: TrainingRun) -> None:
    """Tell the run's pages its new status once the transaction commits."""
    broadcast.send_after_commit(broadcast.run_group(run.pk), run_messages.status_message(run))


def run_enqueue(run: TrainingRun) -> TrainingRun:
    """Put the run's current attempt on the ``training`` queue (inside the caller's transaction:
    with the database task backend the task row commits together with the run)."""
    result = train_run.enqueue(run_id=run.pk, attempt=run.attempt)
    run.task_id = str(result.id)
    run.save(update_fields=["task_id"])
    return run


def missing_server(config: TrainConfig) -> str:
    """What ``config`` needs of this server's configuration and does not find, in words (empty:
    nothing). A run with ``llm=openai`` talks to an OpenAI-compatible server its worker finds in
    ``GRIDACE_LLM_BASE_URL``; without it the run would fail in the worker, so it is refused here,
    at launch. (The web app and its workers share their environment.)"""
    if config.llm == "openai" and not os.environ.get(ENV_BASE_URL, "").strip():
        return (
            f"llm=openai needs an OpenAI-compatible server, and {ENV_BASE_URL} is not set on this "
            f"server; accepted: set {ENV_BASE_URL} (e.g. http://localhost:8000/v1 for vLLM) where "
            "the web app and its workers run, or choose llm local, random or none"
        )
    return ""


@transaction.atomic
def run_launch(
    *, config: TrainConfig, launched_by: AbstractBaseUser, label: str = "", recipe: str = ""
) -> TrainingRun:
    """Validate the config, create the run and queue it. Raises ConfigError on a bad config, or
    one that needs a server this one has not configured (:func:`missing_server`). ``recipe`` is
    the recipe the settings started from (the launch form's), recorded so that a run whose
    settings were then edited is shown as that recipe with the settings changed."""
    config.validate()
    missing = missing_server(config)
    if missing:
        raise ConfigError(missing)
    label = label.strip()
    if len(label) > LABEL_MAX_LENGTH:
        raise RunStateError(f"label is {len(label)} characters long; accepted: at most {LABEL_MAX_LENGTH}")
    if recipe:
        recipe_get(recipe)  # ConfigError naming the recipes accepted
    run = TrainingRun.objects.create(
        from_recipe=recipe,
        label=label,
        config=config.to_dict(),
        env=config.env,
        total_steps=config.steps,
        launched_by=launched_by,
        out_dir="",
    )
    run.out_dir = str(Path(settings.GRIDACE_RUNS_DIR) / f"run-{run.pk}")
    run.save(update_fields=["out_dir"])
    run_enqueue(run)
    audit_record(
        actor=launched_by,
        action="run.launch",
        target=run,
        after={"config": run.config, "label": label, "recipe": recipe},
    )
    return run


@transaction.atomic
def run_cancel(*, run: TrainingRun, user: AbstractBaseUser) -> TrainingRun:
    """A queued run is cancelled at once; a running one is asked to stop (its trainer checkpoints
    and returns at the next step)."""
    run = TrainingRun.objects.select_for_update().get(pk=run.pk)
    before = _run_state(run)
    if run.status == JobStatus.QUEUED:
        run.save(update_fields=run.mark_ended(JobStatus.CANCELLED, now=timezone.now()))
    elif run.status == JobStatus.RUNNING:
        if run.cancel_requested:
            raise RunStateError(f"run {run.pk} is already stopping; wait for it to checkpoint and stop")
        run.cancel_requested = True
        run.save(update_fields=["cancel_requested"])
    else:
        raise RunStateError(f"run {run.pk} is {run.status}; only queued or running runs can be cancelled")
    audit_record(actor=user, action="run.cancel", target=run, before=before, after=_run_state(run))
    run_status_announce(run)
    return run


@transaction.atomic
def run_resume(*, run: TrainingRun, user: AbstractBaseUser | None, reason: str = "") -> TrainingRun:
    """Queue a cancelled or failed run again; it continues from its last checkpoint."""
    run = TrainingRun.objects.select_for_update().get(pk=run.pk)
    if run.status not in (JobStatus.CANCELLED, JobStatus.FAILED):
        raise RunStateError(f"run {run.pk} is {run.status}; only cancelled or failed runs can be resumed")
    checkpoint = run.checkpoints.order_by("-id").first()
    if checkpoint is None:
        raise RunStateError(
            f"run {run.pk} wrote no checkpoint before it stopped, so it cannot resume; launch a new run"
        )
    before = _run_state(run)
    run.mark_requeued()
    run.save()
    run_enqueue(run)
    audit_record(
        actor=user,
        action="run.resume",
        target=run,
        before=before,
        after={**_run_state(run), "from_step": checkpoint.step},
        comment=reason,
    )
    run_status_announce(run)
    return run


# --- what the worker records of an attempt ---


@transaction.atomic
def run_start(*, run_id: int, attempt: int, worker_token: str, worker_id: str = "") -> TrainingRun | None:
    """Claim a queued run for this attempt; None when the task is stale (run cancelled meanwhile,
    or a newer attempt was queued)."""
    run = job_start(
        model=TrainingRun, job_id=run_id, worker_token=worker_token, worker_id=worker_id, attempt=attempt
    )
    if run is None:
        return None
    if run.attempt > 1:
        # The trainer rolls back to its last checkpoint (or starts over): charts drop what the
        # earlier attempt drew after it. Refinements, shapings and fine-tunes stay (they are the
        # review record).
        checkpoint = run.checkpoints.order_by("-id").first() if run.resume else None
        resume_step = checkpoint.step if checkpoint else 0
        MetricPoint.objects.filter(run=run, step__gt=resume_step).delete()
        EpisodeRecord.objects.filter(run=run, step__gt=resume_step).delete()
        run.progress_step = resume_step
        run.save(update_fields=["progress_step"])
    run_status_announce(run)
    return run


@transaction.atomic
def run_finish(*, run_id: int, worker_token: str) -> TrainingRun | None:
    """The trainer returned: succeeded, or cancelled if a cancel was requested."""
    run = job_finish(model=TrainingRun, job_id=run_id, worker_token=worker_token, resume=False)
    if run is not None:
        run_status_announce(run)
    return run


@transaction.atomic
def run_fail(*, run_id: int, worker_token: str, error: str) -> TrainingRun | None:
    run = job_fail(model=TrainingRun, job_id=run_id, worker_token=worker_token, error=error)
    if run is not None:
        run_status_announce(run)
    return run


RELEASED_ON_SHUTDOWN = "the worker shut down; queued again to continue from its last checkpoint"


@transaction.atomic
def run_release(*, run_id: int, worker_token: str, reason: str = RELEASED_ON_SHUTDOWN) -> TrainingRun | None:
    """The worker is shutting down (SIGTERM) and the trainer checkpointed, or the attempt lost
    its database connection (``reason`` says which): queue the run again so a worker continues it
    from its last checkpoint."""
    run = job_owned(model=TrainingRun, job_id=run_id, worker_token=worker_token)
    if run is None:
        return None
    if run.cancel_requested:
        return run_finish(run_id=run_id, worker_token=worker_token)
    run.mark_requeued(reason=reason)
    run.resume = run.checkpoints.exists()
    run.save()
    run_enqueue(run)
    run_status_announce(run)
    return run
