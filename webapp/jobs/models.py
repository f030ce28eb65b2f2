"""The abstract rows of background jobs: the fields and status changes a training run, an
evaluation and a mine share (and, for :class:`Claimed`, a live session too).

A job's status moves queued -> running -> succeeded | cancelled | failed. The worker that starts it
owns it through a random ``worker_token`` and stamps ``heartbeat_at`` while it works; a job whose
heartbeat stops is recovered by the watchdog, and its old worker, if it was only frozen, finds the
job no longer its own (see :mod:`webapp.jobs.services`).
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from django.db import models


class JobStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    SUCCEEDED = "succeeded", "succeeded"
    CANCELLED = "cancelled", "cancelled"
    FAILED = "failed", "failed"


ACTIVE_STATUSES = (JobStatus.QUEUED, JobStatus.RUNNING)
ENDED_STATUSES = (JobStatus.SUCCEEDED, JobStatus.CANCELLED, JobStatus.FAILED)


class Claimed(models.Model):
    """A row a worker owns while it works on it, and keeps fresh with its heartbeat."""

    worker_token = models.CharField(
        max_length=64, blank=True, help_text="identifies the worker (and attempt) that owns it"
    )
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="stamped by its worker while it works; a silent one is taken over"
    )

    class Meta:
        abstract = True


class Job(Claimed):
    """Something a worker runs from a queue, to its end."""

    noun: ClassVar[str] = "job"
    """what its messages call it"""
    cancellable: ClassVar[bool] = False
    """whether it has a ``cancel_requested`` its worker obeys (it then ends cancelled)"""

    status = models.CharField(
        max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True
    )
    error = models.TextField(blank=True, help_text="why it failed or was recovered")
    task_id = models.CharField(
        max_length=64, blank=True, help_text="the django-tasks result of the current attempt"
    )
    worker_id = models.CharField(max_length=64, blank=True, help_text="the worker process that started it")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    # The status changes: the fields that always change together. The caller saves (these
    # return the fields they changed, for ``save(update_fields=...)``).
    def mark_running(self, *, worker_token: str, now: datetime, worker_id: str = "") -> list[str]:
        """A worker claimed the job: it owns it through ``worker_token`` from now on."""
        self.status = JobStatus.RUNNING
        self.started_at = self.started_at or now
        self.heartbeat_at = now
        self.worker_token = worker_token
        self.worker_id = worker_id[:64]
        return ["status", "started_at", "heartbeat_at", "worker_token", "worker_id"]

    def mark_ended(self, status: str, *, now: datetime, error: str | None = None) -> list[str]:
        """The job succeeded, was cancelled or failed; ``error`` (when given) says why."""
        if status not in ENDED_STATUSES:
            raise ValueError(
                f"status {status!s} does not end a {self.noun}; accepted: {', '.join(ENDED_STATUSES)}"
            )
        self.status = status
        self.finished_at = now
        fields = ["status", "finished_at"]
        if error is not None:
            self.error = error
            fields.append("error")
        return fields
