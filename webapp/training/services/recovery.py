"""Stale-run recovery: a running run whose worker stopped sending heartbeats (SIGKILL, lost
machine) is resumed from its last checkpoint or marked failed with the reason; a running mine
whose worker went silent is marked failed, to be started again (it resumes from the episodes on
disk); so is a silent evaluation, to be asked for again. Never left running forever.

``manage.py watchdog`` calls them every few seconds through the registry of
:mod:`webapp.jobs.recovery` (:func:`runs_recover_silent`, :func:`mines_recover_silent`,
:func:`evaluations_recover_stale`, registered in :mod:`webapp.training.apps`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from webapp.audit.services import audit_record
from webapp.jobs.models import JobStatus
from webapp.jobs.recovery import Recovered, jobs_fail_silent, stale_window, task_mark_lost
from webapp.jobs.services import jobs_stale
from webapp.training.errors import WorkerLost
from webapp.training.models import Evaluation, Mine, TrainingRun
from webapp.training.services.runs import run_enqueue, run_status_announce

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Recovery:
    run_id: int
    outcome: str
    """``resumed``, ``failed`` or ``cancelled``"""
    reason: str


@dataclass(frozen=True)
class MineRecovery:
    mine_id: int
    name: str
    reason: str


MINE_LOST = "the worker stopped; start it again to resume where it stopped"
EVALUATION_LOST = "the worker evaluating this run stopped; ask for the evaluation again"


@transaction.atomic
def runs_recover_stale(
    *,
    now: datetime | None = None,
    stale_after: timedelta | None = None,
    max_auto_resumes: int | None = None,
) -> list[Recovery]:
    """Recover every running run whose heartbeat is older than ``stale_after``."""
    now, stale_after = stale_window(now, stale_after)
    if max_auto_resumes is None:
        max_auto_resumes = settings.GRIDACE_MAX_AUTO_RESUMES
    stale = jobs_stale(model=TrainingRun, now=now, stale_after=stale_after)
    return [
        _recover(run, now=now, stale_after=stale_after, max_auto_resumes=max_auto_resumes) for run in stale
    ]


def _recover(run: TrainingRun, *, now: datetime, stale_after: timedelta, max_auto_resumes: int) -> Recovery:
    """Cancel the run if a cancel was asked, resume it from its last checkpoint if it has one and
    may resume again, fail it otherwise; audited, and told to its pages."""
    last_seen = run.heartbeat_at or run.started_at
    lost = (
        f"worker {run.worker_id or '?'} stopped sending heartbeats "
        f"(last at {last_seen:%Y-%m-%d %H:%M:%S} UTC, {stale_after.total_seconds():g} s allowed)"
    )
    before = {"status": run.status, "attempt": run.attempt, "heartbeat_at": last_seen.isoformat()}
    checkpoint = run.checkpoints.order_by("-id").first()
    task_mark_lost(run.task_id, reason=lost, now=now, lost=WorkerLost)  # django-tasks-db has no heartbeat
    if run.cancel_requested:
        outcome, reason = "cancelled", f"{lost} while stopping; run cancelled"
        run.mark_ended(JobStatus.CANCELLED, now=now, error=reason)
        run.save()
    elif checkpoint is not None and run.auto_resumes < max_auto_resumes:
        outcome = "resumed"
        reason = f"{lost}; resuming from the checkpoint at step {checkpoint.step} (attempt {run.attempt + 1})"
        run.mark_requeued(reason=reason)
        run.auto_resumes += 1
        run.save()
        run_enqueue(run)
    else:
        outcome = "failed"
        if checkpoint is None:
            reason = f"{lost}; no checkpoint had been written, so it cannot resume"
        else:
            reason = f"{lost}; not resumed automatically again (already resumed {run.auto_resumes} times)"
        run.mark_ended(JobStatus.FAILED, now=now, error=reason)
        run.save()
    audit_record(
        actor=None,
        action=f"run.recover.{outcome}",
        target=run,
        before=before,
        after={"status": run.status, "attempt": run.attempt},
        comment=reason,
    )
    run_status_announce(run)
    logger.warning("run %s %s: %s", run.pk, outcome, reason)
    return Recovery(run_id=run.pk, outcome=outcome, reason=reason)


@transaction.atomic
def mines_recover_stale(
    *, now: datetime | None = None, stale_after: timedelta | None = None
) -> list[MineRecovery]:
    """Fail every running mine whose heartbeat is older than ``stale_after``, with the reason and
    how to go on (its episodes on disk are kept: started again, it plays only the others);
    audited as ``mine.recover.failed``."""
    failed = jobs_fail_silent(
        model=Mine,
        lost=MINE_LOST,
        audit_action="mine.recover.failed",
        now=now,
        stale_after=stale_after,
        error=WorkerLost,  # the name the mines' task rows carry
    )
    return [MineRecovery(mine_id=mine.pk, name=mine.name, reason=reason) for mine, reason in failed]


@transaction.atomic
def evaluations_recover_stale(
    *, now: datetime | None = None, stale_after: timedelta | None = None
) -> list[Recovered]:
    """Fail every running evaluation whose heartbeat is older than ``stale_after``, with the reason
    (the run's page offers the evaluation again); audited as ``evaluation.recover.failed``."""
    failed = jobs_fail_silent(
        model=Evaluation,
        lost=EVALUATION_LOST,
        audit_action="evaluation.recover.failed",
        now=now,
        stale_after=stale_after,
        error=WorkerLost,
    )
    return [
        Recovered(
            job=f"evaluation {evaluation.pk} (run {evaluation.run_id})", outcome="failed", reason=reason
        )
        for evaluation, reason in failed
    ]


def runs_recover_silent(*, now: datetime, stale_after: timedelta) -> list[Recovered]:
    """:func:`runs_recover_stale` as the watchdog's registry calls it
    (:mod:`webapp.jobs.recovery`; registered in :mod:`webapp.training.apps`)."""
    return [
        Recovered(job=f"run {r.run_id}", outcome=r.outcome, reason=r.reason)
        for r in runs_recover_stale(now=now, stale_after=stale_after)
    ]


def mines_recover_silent(*, now: datetime, stale_after: timedelta) -> list[Recovered]:
    """:func:`mines_recover_stale` as the watchdog's registry calls it."""
    return [
        Recovered(job=f"mine {m.mine_id} ({m.name})", outcome="failed", reason=m.reason)
        for m in mines_recover_stale(now=now, stale_after=stale_after)
    ]
