"""A run's status changes: the fields that change together change together, and only the
statuses that end a run can end it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from webapp.jobs.models import JobStatus
from webapp.training.models import TrainingRun

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def test_a_requeued_run_starts_its_next_attempt_clean():
    run = TrainingRun(
        status=JobStatus.FAILED,
        attempt=2,
        cancel_requested=True,
        worker_token="old",
        finished_at=NOW,
        error="boom",
    )

    fields = run.mark_requeued(reason="resuming")

    assert (run.status, run.attempt, run.resume, run.cancel_requested) == (JobStatus.QUEUED, 3, True, False)
    assert (run.worker_token, run.finished_at, run.error) == ("", None, "resuming")
    assert set(fields) == {
        "status",
        "attempt",
        "resume",
        "cancel_requested",
        "worker_token",
        "finished_at",
        "error",
    }


def test_running_keeps_the_first_start_and_owns_the_run_by_token():
    run = TrainingRun(status=JobStatus.QUEUED, started_at=NOW)

    run.mark_running(worker_token="t", worker_id="w" * 80, now=NOW + timedelta(hours=1))

    assert run.status == JobStatus.RUNNING and run.started_at == NOW
    assert run.heartbeat_at == NOW + timedelta(hours=1)
    assert run.worker_token == "t" and run.worker_id == "w" * 64


def test_ending_keeps_the_error_unless_told_why():
    run = TrainingRun(status=JobStatus.RUNNING, error="recovered once")

    assert run.mark_ended(JobStatus.SUCCEEDED, now=NOW) == ["status", "finished_at"]
    assert run.error == "recovered once" and run.finished_at == NOW
    assert "error" in run.mark_ended(JobStatus.FAILED, now=NOW, error="ValueError: x")
    assert run.error == "ValueError: x"


def test_only_an_ending_status_ends_a_run():
    with pytest.raises(ValueError, match="status running does not end a run; accepted: succeeded"):
        TrainingRun(status=JobStatus.QUEUED).mark_ended(JobStatus.RUNNING, now=NOW)
