"""Training runs and what their trainer reports: metrics, episodes, checkpoints, fine-tunes.

A run's ``config`` is a :class:`ace_core.config.TrainConfig` as a dict. Its status moves
queued -> running -> succeeded | cancelled | failed; a cancelled or failed run with a checkpoint
can be queued again (resume). While running, the worker stamps ``heartbeat_at``; the watchdog
treats a run without heartbeat for ``GRIDACE_STALE_AFTER_SECONDS`` as lost.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models


class RunStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    SUCCEEDED = "succeeded", "succeeded"
    CANCELLED = "cancelled", "cancelled"
    FAILED = "failed", "failed"


ACTIVE_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)
ENDED_STATUSES = (RunStatus.SUCCEEDED, RunStatus.CANCELLED, RunStatus.FAILED)


class TrainingRun(models.Model):
    label = models.CharField(max_length=100, blank=True)
    config = models.JSONField(help_text="the TrainConfig, as a dict")
    env = models.CharField(max_length=100, db_index=True)
    total_steps = models.PositiveBigIntegerField()
    status = models.CharField(
        max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True
    )
    progress_step = models.PositiveBigIntegerField(default=0)
    launched_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="training_runs"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempt = models.PositiveIntegerField(default=1, help_text="1 for the first start, +1 per resume")
    auto_resumes = models.PositiveIntegerField(default=0, help_text="resumes started by stale-run recovery")
    resume = models.BooleanField(default=False, help_text="the next start continues from the last checkpoint")
    cancel_requested = models.BooleanField(default=False)
    worker_token = models.CharField(
        max_length=64, blank=True, help_text="identifies the attempt that owns the run"
    )
    worker_id = models.CharField(max_length=64, blank=True)
    task_id = models.CharField(
        max_length=64, blank=True, help_text="the django-tasks result of the current attempt"
    )
    out_dir = models.CharField(max_length=500)
    error = models.TextField(blank=True, help_text="why the run failed or was recovered")

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [
            ("launch_trainingrun", "Can launch, cancel and resume training runs"),
            ("evaluate_trainingrun", "Can evaluate a run against the baselines"),
            ("deploy_checkpoint", "Can mark a checkpoint as the deployed policy"),
        ]

    def __str__(self) -> str:
        name = f" {self.label}" if self.label else ""
        return f"run {self.pk}{name} ({self.env}, {self.total_steps} steps)"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    # The status changes: the fields that always change together. The caller saves (these
    # return the fields they changed, for ``save(update_fields=...)``).
    def mark_running(self, *, worker_token: str, worker_id: str, now: datetime) -> list[str]:
        """An attempt claimed the run: it owns it through ``worker_token`` from now on."""
        self.status = RunStatus.RUNNING
        self.started_at = self.started_at or now
        self.heartbeat_at = now
        self.worker_token = worker_token
        self.worker_id = worker_id[:64]
        return ["status", "started_at", "heartbeat_at", "worker_token", "worker_id"]

    def mark_ended(self, status: str, *, now: datetime, error: str | None = None) -> list[str]:
        """The run succeeded, was cancelled or failed; ``error`` (when given) says why."""
        if status not in ENDED_STATUSES:
            raise ValueError(f"status {status!s} does not end a run; accepted: {', '.join(ENDED_STATUSES)}")
        self.status = status
        self.finished_at = now
        fields = ["status", "finished_at"]
        if error is not None:
            self.error = error
            fields.append("error")
        return fields

    def mark_requeued(self, *, reason: str = "") -> list[str]:
        """The run goes back to the queue for its next attempt, continuing from its checkpoint."""
        self.status = RunStatus.QUEUED
        self.attempt += 1
        self.resume = True
        self.cancel_requested = False
        self.worker_token = ""
        self.finished_at = None
        self.error = reason
        return ["status", "attempt", "resume", "cancel_requested", "worker_token", "finished_at", "error"]


class MetricPoint(models.Model):
    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="metrics")
    step = models.PositiveBigIntegerField()
    values = models.JSONField(help_text="namespaced metrics, e.g. losses/qf1_loss")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["run", "id"])]


class EpisodeRecord(models.Model):
    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="episodes")
    step = models.PositiveBigIntegerField()
    index = models.PositiveIntegerField()
    scenario = models.CharField(max_length=200)
    steps_survived = models.PositiveIntegerField()
    max_steps = models.PositiveIntegerField()
    reward = models.FloatField()

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["run", "id"])]


class Checkpoint(models.Model):
    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="checkpoints")
    step = models.PositiveBigIntegerField()
    path = models.CharField(max_length=500)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["run", "id"])]

    def __str__(self) -> str:
        return f"run {self.run_id} checkpoint at step {self.step}"


class FinetuneRecord(models.Model):
    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="finetunes")
    step = models.PositiveBigIntegerField()
    adapter_version = models.PositiveIntegerField()
    samples = models.PositiveIntegerField()
    seconds = models.FloatField()
    loss = models.FloatField(null=True, blank=True)
    path = models.CharField(max_length=500, blank=True)
    skipped_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]


class Deployment(models.Model):
    """One row per deployment decision; the newest names the policy live sessions use."""

    checkpoint = models.ForeignKey(Checkpoint, on_delete=models.PROTECT, related_name="deployments")
    deployed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    deployed_at = models.DateTimeField()
    path = models.CharField(max_length=500, help_text="the frozen copy live sessions load")
    comment = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-deployed_at", "-id"]
        get_latest_by = ["deployed_at", "id"]

    def __str__(self) -> str:
        return f"{self.checkpoint} deployed {self.deployed_at:%Y-%m-%d %H:%M}"


class EvaluationStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    SUCCEEDED = "succeeded", "succeeded"
    FAILED = "failed", "failed"


class Evaluation(models.Model):
    """A run's final checkpoint evaluated against the baseline agents on held-out episodes."""

    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="evaluations")
    checkpoint = models.ForeignKey(Checkpoint, on_delete=models.PROTECT, related_name="evaluations")
    split = models.CharField(max_length=16)
    nb_episode = models.PositiveIntegerField()
    status = models.CharField(
        max_length=16, choices=EvaluationStatus.choices, default=EvaluationStatus.QUEUED, db_index=True
    )
    results = models.JSONField(default=dict, blank=True, help_text="agent name -> evaluate() result")
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"evaluation {self.pk} of run {self.run_id} ({self.split}, {self.nb_episode} episodes)"


class MineStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    SUCCEEDED = "succeeded", "succeeded"
    FAILED = "failed", "failed"


class Mine(models.Model):
    """A mine of expert decisions started from the web app (:mod:`ace_core.mining`).

    The mine itself lives on disk (``out_dir``: action_set.json, dataset.npz, summary.json); this
    row records who started it, its settings, and how it is going or why it failed. While it runs,
    the worker stamps ``heartbeat_at`` like a run's; a mine silent for
    ``GRIDACE_STALE_AFTER_SECONDS`` is failed by the watchdog, and started again it resumes from
    the episodes on disk. Mines made with the command line have no row: the mines page finds them
    on disk.
    """

    name = models.CharField(max_length=200, db_index=True, help_text="the mine directory's name")
    env = models.CharField(max_length=100)
    expert = models.CharField(max_length=500, help_text="greedy, greedy:BUDGET or greedy:key=value,...")
    split = models.CharField(max_length=16, default="train")
    seeds = models.PositiveIntegerField()
    episodes = models.PositiveIntegerField(null=True, blank=True, help_text="first N scenarios; empty: all")
    episode_length = models.PositiveIntegerField()
    opponent = models.CharField(
        max_length=16, default="env", help_text="line attacks: env (the env's own), none or random-line"
    )
    demand_scale = models.FloatField(
        default=1.0, help_text="every load and production of the mined days times this (1: as they are)"
    )
    episodes_total = models.PositiveIntegerField(
        null=True, blank=True, help_text="(scenario, seed) episodes to play, known once the worker starts"
    )
    status = models.CharField(
        max_length=16, choices=MineStatus.choices, default=MineStatus.QUEUED, db_index=True
    )
    out_dir = models.CharField(max_length=500)
    error = models.TextField(blank=True)
    launched_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="mines")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="stamped by the mining worker while it runs; the watchdog fails a silent one",
    )
    task_id = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"mine {self.name} ({self.expert}, {self.seeds} seeds)"

    @property
    def is_active(self) -> bool:
        return self.status in (MineStatus.QUEUED, MineStatus.RUNNING)
