"""Evaluations that lose their worker: the watchdog fails a silent one with the reason (the run's
page offers it again), audited with no actor, and leaves one that still beats alone."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.jobs.services import job_start
from webapp.training.models import Checkpoint, Evaluation
from webapp.training.services.recovery import EVALUATION_LOST

pytestmark = pytest.mark.django_db


def _running_evaluation(run, user, silent_for: float) -> Evaluation:
    checkpoint = run.checkpoints.first() or Checkpoint.objects.create(run=run, step=300, path="/x.pt")
    evaluation = Evaluation.objects.create(
        run=run, checkpoint=checkpoint, split="validation", nb_episode=2, requested_by=user
    )
    job_start(model=Evaluation, job_id=evaluation.pk, worker_token="dead")
    Evaluation.objects.filter(pk=evaluation.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=silent_for)
    )
    return evaluation


def test_the_watchdog_fails_a_silent_evaluation_and_leaves_a_beating_one(make_run, engineer, settings):
    settings.GRIDACE_STALE_AFTER_SECONDS = 30
    silent = _running_evaluation(make_run(), engineer, silent_for=45)
    beating = _running_evaluation(make_run(), engineer, silent_for=5)
    out = io.StringIO()
    call_command("watchdog", "--once", stdout=out)

    silent.refresh_from_db()
    assert silent.status == JobStatus.FAILED
    assert silent.error.startswith(EVALUATION_LOST + " (no heartbeat since ")
    assert f"evaluation {silent.pk} (run {silent.run_id}) failed: {EVALUATION_LOST}" in out.getvalue()
    (entry,) = AuditEntry.objects.filter(action="evaluation.recover.failed")
    assert entry.actor is None and entry.comment == silent.error
    assert Evaluation.objects.get(pk=beating.pk).status == JobStatus.RUNNING

    call_command("watchdog", "--once", stdout=io.StringIO())  # nothing more to recover
    assert AuditEntry.objects.filter(action="evaluation.recover.failed").count() == 1
