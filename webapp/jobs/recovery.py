"""How the watchdog recovers the jobs whose worker fell silent, whatever the job.

Each kind of job registers, in its app's ``AppConfig.ready()``, the function that recovers its
silent jobs (:func:`job_recovery_register`): a run is resumed from its checkpoint or failed, a mine
or a day's play is failed with the reason, so that its page offers it again. ``manage.py watchdog``
walks the registry (:func:`jobs_recover_stale`) and names no app: a new kind of job is recovered
once it registers. A recovery that only fails its silent jobs is :func:`jobs_fail_silent`.

A kind is registered by the dotted path of its function, imported on the watchdog's first check:
registering must not import an app's services (and the ML stack behind them) into every process.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from django.utils.module_loading import import_string
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from webapp.audit.services import audit_record
from webapp.jobs.errors import WorkerLost
from webapp.jobs.models import Job, JobStatus
from webapp.jobs.services import ERROR_MAX_LENGTH, jobs_stale

logger = logging.getLogger(__name__)
J = TypeVar("J", bound=Job)


@dataclass(frozen=True)
class Recovered:
    """One silent job the watchdog took back, as its log line says it."""

    job: str
    """the job in words: ``run 12``, ``mine 3 (greedy-...)``"""
    outcome: str
    """``resumed``, ``failed`` or ``cancelled``"""
    reason: str

    def __str__(self) -> str:
        return f"{self.job} {self.outcome}: {self.reason}"


class StaleRecovery(Protocol):
    """Recovers every job of one kind silent for longer than ``stale_after`` (in its own
    transaction, locking with SKIP LOCKED so that several watchdogs are safe)."""

    def __call__(self, *, now: datetime, stale_after: timedelta) -> Iterable[Recovered]: ...


_recoveries: dict[str, str] = {}
"""kind of job (its plural, as the watchdog names it) -> dotted path of its :class:`StaleRecovery`"""


def job_recovery_register(*, kind: str, recover: str) -> None:
    """Register how the silent jobs of ``kind`` (``runs``, ``mines``) are recovered: ``recover``
    is the dotted path of a :class:`StaleRecovery`. Registering the same again changes nothing;
    another function for a registered kind is refused."""
    registered = _recoveries.setdefault(kind, recover)
    if registered != recover:
        raise ImproperlyConfigured(
            f"the recovery of {kind} is already registered as {registered}; {recover} cannot replace it"
        )


def job_recoveries() -> dict[str, str]:
    """The registered kinds of job and their recoveries, in the order they were registered."""
    return dict(_recoveries)


def jobs_recover_stale(
    *, now: datetime | None = None, stale_after: timedelta | None = None
) -> list[Recovered]:
    """Recover the silent jobs of every registered kind (``stale_after``: the setting
    ``GRIDACE_STALE_AFTER_SECONDS`` unless given). A kind whose recovery raises does not keep the
    others from theirs: the first error is raised once all were tried."""
    now, stale_after = stale_window(now, stale_after)
    recovered: list[Recovered] = []
    errors: list[Exception] = []
    for kind, path in _recoveries.items():
        try:
            recover: StaleRecovery = import_string(path)
            recovered.extend(recover(now=now, stale_after=stale_after))
        except Exception as error:
            logger.exception("recovering the silent %s failed", kind)
            errors.append(error)
    if errors:
        raise errors[0]
    return recovered


def task_mark_lost(
    task_id: str, *, reason: str, now: datetime, lost: type[BaseException] = WorkerLost
) -> None:
    """django-tasks-db has no heartbeat: close the dead attempt's task row ourselves, ``lost``
    recorded as its exception."""
    if not task_id:
        return
    DBTaskResult.objects.filter(id=task_id, status=TaskResultStatus.RUNNING).update(
        status=TaskResultStatus.FAILED,
        finished_at=now,
        exception_class_path=f"{lost.__module__}.{lost.__qualname__}",
        traceback=reason,
    )


def job_fail_lost(
    job: Job, *, reason: str, now: datetime, audit_action: str, lost: type[BaseException] = WorkerLost
) -> None:
    """Fail a running job whose worker fell silent, with ``reason`` (what its page shows, and how
    to go on), inside the caller's transaction: its task row is closed, and the recovery audited
    as ``audit_action`` (no actor: the system decided)."""
    last_seen = job.heartbeat_at or job.started_at
    task_mark_lost(job.task_id, reason=reason, now=now, lost=lost)
    job.save(update_fields=job.mark_ended(JobStatus.FAILED, now=now, error=reason[:ERROR_MAX_LENGTH]))
    audit_record(
        actor=None,
        action=audit_action,
        target=job,
        before={"status": JobStatus.RUNNING, "heartbeat_at": last_seen.isoformat() if last_seen else None},
        after={"status": job.status},
        comment=reason,
    )
    logger.warning("%s %s failed: %s", job.noun, job.pk, reason)


def job_fail_silent(
    job: Job,
    *,
    lost: str,
    now: datetime,
    stale_after: timedelta,
    audit_action: str,
    error: type[BaseException] = WorkerLost,
) -> str:
    """:func:`job_fail_lost` for a job :func:`~webapp.jobs.services.jobs_stale` found, the reason
    being ``lost`` (what happened, and how to go on) and when the job was last heard of; returns
    the reason."""
    last_seen = job.heartbeat_at or job.started_at
    reason = (
        f"{lost} (no heartbeat since {last_seen:%Y-%m-%d %H:%M:%S} UTC, "
        f"{stale_after.total_seconds():g} s allowed)"
    )
    job_fail_lost(job, reason=reason, now=now, audit_action=audit_action, lost=error)
    return reason


def stale_window(now: datetime | None, stale_after: timedelta | None) -> tuple[datetime, timedelta]:
    """``(now, stale_after)`` with their defaults: the current time, and the setting
    ``GRIDACE_STALE_AFTER_SECONDS``."""
    if stale_after is None:
        stale_after = timedelta(seconds=settings.GRIDACE_STALE_AFTER_SECONDS)
    return now or timezone.now(), stale_after


def jobs_fail_silent(
    *,
    model: type[J],
    lost: str,
    audit_action: str,
    now: datetime | None = None,
    stale_after: timedelta | None = None,
    error: type[BaseException] = WorkerLost,
) -> list[tuple[J, str]]:
    """:func:`job_fail_silent` for every running job of ``model`` silent for longer than
    ``stale_after`` (:func:`stale_window`'s defaults; SKIP LOCKED: several watchdogs are safe),
    inside the caller's transaction; returns each job failed with its reason. What a kind whose
    silent jobs are only failed (mines, evaluations, day plays) registers, worded its own way."""
    now, stale_after = stale_window(now, stale_after)
    return [
        (
            job,
            job_fail_silent(
                job, lost=lost, now=now, stale_after=stale_after, audit_action=audit_action, error=error
            ),
        )
        for job in jobs_stale(model=model, now=now, stale_after=stale_after)
    ]
