"""Heartbeat and stale-run recovery: a run whose worker died is resumed from its checkpoint or
failed with the reason, never left running; including a real worker process killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.db.models import Count
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.review.models import Refinement
from webapp.training.models import Checkpoint, MetricPoint, TrainingRun
from webapp.training.services.recovery import runs_recover_stale
from webapp.training.services.runs import run_cancel, run_start
from webapp.training.worker.heartbeat import Heartbeat

ROOT = Path(__file__).resolve().parents[3]


def _silent_for(run: TrainingRun, seconds: float) -> None:
    TrainingRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=seconds))


@pytest.mark.django_db
class TestRecoveryService:
    def test_a_fresh_heartbeat_is_left_alone(self, make_run):
        run = make_run()
        run_start(run_id=run.pk, attempt=1, worker_token="t")
        assert runs_recover_stale(stale_after=timedelta(seconds=30)) == []

    def test_a_silent_run_with_a_checkpoint_is_resumed(self, make_run):
        run = make_run()
        run_start(run_id=run.pk, attempt=1, worker_token="t", worker_id="w1")
        Checkpoint.objects.create(run=run, step=100, path="/x/checkpoint.pt")
        DBTaskResult.objects.filter(id=run.task_id).update(status=TaskResultStatus.RUNNING)
        _silent_for(run, 45)

        [recovery] = runs_recover_stale(stale_after=timedelta(seconds=30))

        assert recovery.outcome == "resumed"
        run.refresh_from_db()
        assert (run.status, run.attempt, run.auto_resumes, run.resume) == (JobStatus.QUEUED, 2, 1, True)
        assert "worker w1 stopped sending heartbeats" in run.error and "step 100" in run.error
        assert DBTaskResult.objects.get(id=run.task_id).args_kwargs["kwargs"]["attempt"] == 2
        lost = DBTaskResult.objects.filter(status=TaskResultStatus.FAILED).get()
        assert lost.exception_class_path == "webapp.training.errors.WorkerLost"
        entry = AuditEntry.objects.get(action="run.recover.resumed")
        assert entry.actor is None and entry.actor_name == "system"

    def test_a_silent_run_without_checkpoint_fails_with_the_reason(self, make_run):
        run = make_run()
        run_start(run_id=run.pk, attempt=1, worker_token="t")
        _silent_for(run, 45)
        [recovery] = runs_recover_stale(stale_after=timedelta(seconds=30))
        run.refresh_from_db()
        assert recovery.outcome == "failed" and run.status == JobStatus.FAILED
        assert "no checkpoint had been written" in run.error

    def test_auto_resume_is_bounded(self, make_run):
        run = make_run()
        run_start(run_id=run.pk, attempt=1, worker_token="t")
        Checkpoint.objects.create(run=run, step=100, path="/x/checkpoint.pt")
        TrainingRun.objects.filter(pk=run.pk).update(auto_resumes=2)
        _silent_for(run, 45)
        [recovery] = runs_recover_stale(stale_after=timedelta(seconds=30), max_auto_resumes=2)
        assert recovery.outcome == "failed" and "already resumed 2 times" in recovery.reason

    def test_a_silent_run_being_cancelled_ends_cancelled(self, make_run, engineer):
        run = make_run()
        run_start(run_id=run.pk, attempt=1, worker_token="t")
        run_cancel(run=run, user=engineer)
        _silent_for(run, 45)
        [recovery] = runs_recover_stale(stale_after=timedelta(seconds=30))
        assert recovery.outcome == "cancelled"
        assert TrainingRun.objects.get(pk=run.pk).status == JobStatus.CANCELLED

    def test_the_watchdog_command_recovers_once(self, make_run, settings):
        settings.GRIDACE_STALE_AFTER_SECONDS = 30
        run = make_run()
        run_start(run_id=run.pk, attempt=1, worker_token="t")
        _silent_for(run, 45)
        call_command("watchdog", "--once", verbosity=0)
        assert TrainingRun.objects.get(pk=run.pk).status == JobStatus.FAILED


@pytest.mark.django_db(transaction=True)
def test_heartbeat_thread_stamps_the_run_and_sees_a_cancel(make_run, engineer):
    run = make_run()
    run_start(run_id=run.pk, attempt=1, worker_token="t")
    _silent_for(run, 45)
    heartbeat = Heartbeat(model=TrainingRun, job_id=run.pk, worker_token="t", interval=0.05).start()
    try:
        run_cancel(run=run, user=engineer)
        deadline = time.monotonic() + 5
        while not heartbeat.should_stop and time.monotonic() < deadline:
            time.sleep(0.02)
        assert heartbeat.cancel_requested.is_set()
        assert timezone.now() - TrainingRun.objects.get(pk=run.pk).heartbeat_at < timedelta(seconds=5)
    finally:
        heartbeat.stop()


def _worker(env: dict[str, str], *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "db_worker",
            "--queue-name",
            "training",
            "--no-startup-delay",
            "--no-reload",
            "--interval",
            "0.1",
            *extra,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.mark.django_db(transaction=True)
def test_sigkill_of_the_worker_mid_run_resumes_from_the_checkpoint_and_loses_no_refinement(make_run):
    if connection.vendor != "postgresql":
        pytest.skip("a second process needs a shared database: set DATABASE_URL to Postgres")
    run = make_run(steps=400, checkpoint_every=100, actor_every=25, llm_budget=400)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "DATABASE_URL": f"postgres://{connection.settings_dict['USER']}@{connection.settings_dict['HOST']}:"
        f"{connection.settings_dict['PORT']}/{connection.settings_dict['NAME']}",
        "GRIDACE_TRAINER": "ace_core.training.run",
        "GRIDACE_RUNS_DIR": str(settings.GRIDACE_RUNS_DIR),
        "GRIDACE_HEARTBEAT_SECONDS": "0.5",
    }
    worker = _worker(env)
    try:
        _wait_for(
            lambda: (
                Checkpoint.objects.filter(run=run).exists()
                and Refinement.objects.filter(run=run).count() >= 10
            ),
            timeout=90,
            what="a checkpoint and 10 refinements",
        )
        worker.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert TrainingRun.objects.get(pk=run.pk).status == JobStatus.RUNNING  # nobody told the database

    # Each refinement the sink stored before the kill is whole (its rounds came in the same
    # transaction), and the trainer numbers them in order: no gap means nothing half-written.
    killed = Refinement.objects.filter(run=run).annotate(round_count=Count("rounds"))
    assert all(r.round_count >= 1 for r in killed)
    reported = sorted(killed.values_list("refinement_id", flat=True))
    assert reported == [f"r{n:05d}" for n in range(1, len(reported) + 1)]

    # The watchdog (stale after 2 s here; 30 s by default) notices and queues a resume.
    recoveries = []
    _wait_for(
        lambda: recoveries.extend(runs_recover_stale(stale_after=timedelta(seconds=2))) or recoveries,
        30,
        "recovery",
    )
    detected_after = time.monotonic() - killed_at
    assert recoveries[0].outcome == "resumed"
    resumed_from = Checkpoint.objects.filter(run=run).order_by("-id").first().step
    assert 100 <= resumed_from < 400
    print(
        f"\nSIGKILL recovery: detected {detected_after:.1f} s after the kill (stale_after=2 s, heartbeat 0.5 s); "
        f"resuming from step {resumed_from}"
    )

    # Another worker continues the run from the checkpoint to the end. The refinements between
    # the checkpoint and the kill come again with the same ids and are not stored twice.
    second = _worker(env, "--batch")
    try:
        assert second.wait(timeout=180) == 0, second.stderr.read().decode()[-2000:]
    finally:
        if second.poll() is None:
            second.kill()
    run.refresh_from_db()
    assert (run.status, run.attempt, run.progress_step) == (JobStatus.SUCCEEDED, 2, 400), run.error
    points = list(MetricPoint.objects.filter(run=run).order_by("step"))
    assert [p.step for p in points] == list(range(50, 401, 50))
    count = int(points[-1].values["llm/refinements"])
    ids = sorted(Refinement.objects.filter(run=run).values_list("refinement_id", flat=True))
    assert count > len(reported) and ids == [f"r{n:05d}" for n in range(1, count + 1)]
