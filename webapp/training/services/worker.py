"""What a worker does to a run: claim it, stamp its heartbeat, finish or fail it.

Each attempt owns the run through a random ``worker_token``. Once stale-run recovery hands the
run to a new attempt, the old worker (if it was only frozen, not dead) loses ownership: its
heartbeats and its final status are ignored, and its sink tells the trainer to stop.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from webapp.training.models import EpisodeRecord, MetricPoint, RunStatus, TrainingRun
from webapp.training.services.runs import run_enqueue, run_status_announce

ERROR_MAX_LENGTH = 4000


@dataclass(frozen=True)
class HeartbeatReply:
    owned: bool
    """False once the run belongs to another attempt or is no longer running"""
    cancel_requested: bool


@transaction.atomic
def run_start(*, run_id: int, attempt: int, worker_token: str, worker_id: str = "") -> TrainingRun | None:
    """Claim a queued run for this attempt; None when the task is stale (run cancelled meanwhile,
    or a newer attempt was queued)."""
    run = TrainingRun.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.status != RunStatus.QUEUED or run.attempt != attempt:
        return None
    now = timezone.now()
    if run.attempt > 1:
        # The trainer rolls back to its last checkpoint (or starts over): charts drop what the
        # earlier attempt drew after it. Refinements, shapings and fine-tunes stay (they are the
        # review record).
        checkpoint = run.checkpoints.order_by("-id").first() if run.resume else None
        resume_step = checkpoint.step if checkpoint else 0
        MetricPoint.objects.filter(run=run, step__gt=resume_step).delete()
        EpisodeRecord.objects.filter(run=run, step__gt=resume_step).delete()
        run.progress_step = resume_step
    run.mark_running(worker_token=worker_token, worker_id=worker_id, now=now)
    run.save()
    run_status_announce(run)
    return run


@transaction.atomic
def run_heartbeat(*, run_id: int, worker_token: str) -> HeartbeatReply:
    updated = TrainingRun.objects.filter(
        pk=run_id, worker_token=worker_token, status=RunStatus.RUNNING
    ).update(heartbeat_at=timezone.now())
    if not updated:
        return HeartbeatReply(owned=False, cancel_requested=False)
    cancel = TrainingRun.objects.filter(pk=run_id).values_list("cancel_requested", flat=True).first()
    return HeartbeatReply(owned=True, cancel_requested=bool(cancel))


def _owned_running(run_id: int, worker_token: str) -> TrainingRun | None:
    run = TrainingRun.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.worker_token != worker_token or run.status != RunStatus.RUNNING:
        return None
    return run


@transaction.atomic
def run_finish(*, run_id: int, worker_token: str) -> TrainingRun | None:
    """The trainer returned: succeeded, or cancelled if a cancel was requested."""
    run = _owned_running(run_id, worker_token)
    if run is None:
        return None
    status = RunStatus.CANCELLED if run.cancel_requested else RunStatus.SUCCEEDED
    fields = run.mark_ended(status, now=timezone.now())
    run.resume = False
    run.save(update_fields=[*fields, "resume"])
    run_status_announce(run)
    return run


@transaction.atomic
def run_release(*, run_id: int, worker_token: str) -> TrainingRun | None:
    """The worker is shutting down (SIGTERM) and the trainer checkpointed: queue the run again
    so another worker continues it from that checkpoint."""
    run = _owned_running(run_id, worker_token)
    if run is None:
        return None
    if run.cancel_requested:
        return run_finish(run_id=run_id, worker_token=worker_token)
    run.mark_requeued(reason="the worker shut down; queued again to continue from its last checkpoint")
    run.resume = run.checkpoints.exists()
    run.save()
    run_enqueue(run)
    run_status_announce(run)
    return run


@transaction.atomic
def run_fail(*, run_id: int, worker_token: str, error: str) -> TrainingRun | None:
    run = _owned_running(run_id, worker_token)
    if run is None:
        return None
    run.save(
        update_fields=run.mark_ended(RunStatus.FAILED, now=timezone.now(), error=error[:ERROR_MAX_LENGTH])
    )
    run_status_announce(run)
    return run
