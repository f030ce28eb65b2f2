"""What a worker writes on the job it runs, whatever the job: claim it, stamp its heartbeat, end it.

Each start claims the job with a random ``worker_token``. Once the watchdog takes the job from a
silent worker (failed, or queued again for a new attempt), the old worker, if it was only frozen,
no longer owns it: its heartbeats return not owned (its work should stop) and its end changes
nothing. The apps wrap these where their jobs need more (a run's page is told, its charts roll
back); ``model`` is the job's model class. How each kind of job is recovered when its worker falls
silent is registered in :mod:`webapp.jobs.recovery`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from webapp.jobs.models import Claimed, Job, JobStatus

ERROR_MAX_LENGTH = 4000

J = TypeVar("J", bound=Job)


@dataclass(frozen=True)
class HeartbeatReply:
    owned: bool
    """False once the job belongs to another attempt or is no longer running"""
    cancel_requested: bool


def heartbeat_stamp(*, model: type[Claimed], pk: int, worker_token: str, **still: Any) -> bool:
    """Stamp the heartbeat of a row this worker owns; False (nothing stamped) when it no longer
    owns it, or the row no longer matches ``still`` (a status, say)."""
    owned = model.objects.filter(pk=pk, worker_token=worker_token, **still)
    return bool(owned.update(heartbeat_at=timezone.now()))


@transaction.atomic
def job_start(
    *, model: type[J], job_id: int, worker_token: str, worker_id: str = "", **expected: Any
) -> J | None:
    """Claim a queued job for this worker; None when it is gone, no longer queued, or no longer
    matches ``expected`` (a run's ``attempt``: a newer attempt was queued since)."""
    job = model.objects.select_for_update().filter(pk=job_id, status=JobStatus.QUEUED, **expected).first()
    if job is None:
        return None
    job.save(
        update_fields=job.mark_running(worker_token=worker_token, worker_id=worker_id, now=timezone.now())
    )
    return job


@transaction.atomic
def job_heartbeat(*, model: type[Job], job_id: int, worker_token: str) -> HeartbeatReply:
    """Stamp a running job's heartbeat, and say whether this worker still owns it and whether it
    was asked to stop."""
    if not heartbeat_stamp(model=model, pk=job_id, worker_token=worker_token, status=JobStatus.RUNNING):
        return HeartbeatReply(owned=False, cancel_requested=False)
    cancel = model.cancellable and (
        model.objects.filter(pk=job_id).values_list("cancel_requested", flat=True).first()
    )
    return HeartbeatReply(owned=True, cancel_requested=bool(cancel))


def job_owned(*, model: type[J], job_id: int, worker_token: str) -> J | None:
    """The job, locked, if it is running and this worker owns it (inside the caller's transaction)."""
    job = model.objects.select_for_update().filter(pk=job_id).first()
    if job is None or job.worker_token != worker_token or job.status != JobStatus.RUNNING:
        return None
    return job


@transaction.atomic
def job_finish(*, model: type[J], job_id: int, worker_token: str, **fields: Any) -> J | None:
    """The worker's work returned: the job succeeded, or is cancelled if a cancel was asked.
    ``fields`` are saved with it (an evaluation's results). None, and nothing changed, when this
    worker no longer owns the job."""
    job = job_owned(model=model, job_id=job_id, worker_token=worker_token)
    if job is None:
        return None
    cancelled = job.cancellable and job.cancel_requested
    ended = job.mark_ended(JobStatus.CANCELLED if cancelled else JobStatus.SUCCEEDED, now=timezone.now())
    for name, value in fields.items():
        setattr(job, name, value)
    job.save(update_fields=[*ended, *fields])
    return job


@transaction.atomic
def job_fail(*, model: type[J], job_id: int, worker_token: str, error: str) -> J | None:
    """The worker's work raised: the job failed, with ``error`` (cut to :data:`ERROR_MAX_LENGTH`).
    None, and nothing changed, when this worker no longer owns the job."""
    job = job_owned(model=model, job_id=job_id, worker_token=worker_token)
    if job is None:
        return None
    job.save(
        update_fields=job.mark_ended(JobStatus.FAILED, now=timezone.now(), error=error[:ERROR_MAX_LENGTH])
    )
    return job


def job_silent(job: Job, *, now: datetime, stale_after: timedelta) -> bool:
    """Whether ``job`` is one :func:`jobs_stale` finds: running, and silent for longer than
    ``stale_after`` (no heartbeat yet: since it started)."""
    last_seen = job.heartbeat_at or job.started_at
    return job.status == JobStatus.RUNNING and last_seen is not None and last_seen < now - stale_after


def jobs_stale(*, model: type[J], now: datetime, stale_after: timedelta) -> QuerySet[J]:
    """The running jobs silent for longer than ``stale_after``, locked (those another watchdog
    holds are skipped); evaluate it inside a transaction."""
    cutoff = now - stale_after
    return (
        model.objects.select_for_update(skip_locked=True)
        .filter(status=JobStatus.RUNNING)
        .filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff))
        .order_by("id")
    )
