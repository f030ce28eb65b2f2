"""Engineers' decisions on runs: launch, cancel, resume. Each is audited in the same transaction."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from ace_core.config import TrainConfig
from webapp.audit.services import audit_record
from webapp.live import broadcast, run_messages
from webapp.training.errors import RunStateError
from webapp.training.models import RunStatus, TrainingRun

LABEL_MAX_LENGTH = 100


def _run_state(run: TrainingRun) -> dict:
    return {"status": run.status, "attempt": run.attempt, "cancel_requested": run.cancel_requested}


def run_status_announce(run: TrainingRun) -> None:
    """Tell the run's pages its new status once the transaction commits."""
    broadcast.send_after_commit(broadcast.run_group(run.pk), run_messages.status_message(run))


def run_enqueue(run: TrainingRun) -> TrainingRun:
    """Put the run's current attempt on the ``training`` queue (inside the caller's transaction:
    with the database task backend the task row commits together with the run)."""
    from webapp.training.tasks import train_run

    result = train_run.enqueue(run_id=run.pk, attempt=run.attempt)
    run.task_id = str(result.id)
    run.save(update_fields=["task_id"])
    return run


@transaction.atomic
def run_launch(*, config: TrainConfig, launched_by: AbstractBaseUser, label: str = "") -> TrainingRun:
    """Validate the config, create the run and queue it. Raises ConfigError on a bad config."""
    config.validate()
    label = label.strip()
    if len(label) > LABEL_MAX_LENGTH:
        raise RunStateError(f"label is {len(label)} characters long; accepted: at most {LABEL_MAX_LENGTH}")
    run = TrainingRun.objects.create(
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
        actor=launched_by, action="run.launch", target=run, after={"config": run.config, "label": label}
    )
    return run


@transaction.atomic
def run_cancel(*, run: TrainingRun, user: AbstractBaseUser) -> TrainingRun:
    """A queued run is cancelled at once; a running one is asked to stop (its trainer checkpoints
    and returns at the next step)."""
    run = TrainingRun.objects.select_for_update().get(pk=run.pk)
    before = _run_state(run)
    if run.status == RunStatus.QUEUED:
        run.save(update_fields=run.mark_ended(RunStatus.CANCELLED, now=timezone.now()))
    elif run.status == RunStatus.RUNNING:
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
    if run.status not in (RunStatus.CANCELLED, RunStatus.FAILED):
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
