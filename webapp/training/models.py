"""Training runs and what their trainer reports: metrics, episodes, checkpoints, fine-tunes; the
evaluations of finished runs, the mines of expert decisions started from the web app, and the tags
and note engineers put on runs.

Runs, evaluations and mines are jobs (:class:`webapp.jobs.models.Job`): their status moves
queued -> running -> succeeded | cancelled | failed, and the worker that runs one owns it and
stamps ``heartbeat_at``; the watchdog treats a run or mine without heartbeat for
``GRIDACE_STALE_AFTER_SECONDS`` as lost. A run's ``config`` is a
:class:`ace_core.config.TrainConfig` as a dict; a cancelled or failed run with a checkpoint can be
queued again (resume).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.jobs.models import Job, JobStatus


class TrainingRun(Job):
    noun = "run"
    cancellable = True

    label = models.CharField(max_length=100, blank=True)
    config = models.JSONField(help_text="the TrainConfig, as a dict")
    env = models.CharField(max_length=100, db_index=True)
    total_steps = models.PositiveBigIntegerField()
    progress_step = models.PositiveBigIntegerField(default=0)
    launched_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="training_runs"
    )
    attempt = models.PositiveIntegerField(default=1, help_text="1 for the first start, +1 per resume")
    auto_resumes = models.PositiveIntegerField(default=0, help_text="resumes started by stale-run recovery")
    resume = models.BooleanField(default=False, help_text="the next start continues from the last checkpoint")
    cancel_requested = models.BooleanField(default=False)
    out_dir = models.CharField(max_length=500)
    from_recipe = models.CharField(
        max_length=100, blank=True, help_text="the recipe the launch form started from (empty: none recorded)"
    )
    note = models.TextField(blank=True, help_text="the engineers' note on the run")

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

    def mark_requeued(self, *, reason: str = "") -> list[str]:
        """The run goes back to the queue for its next attempt, continuing from its checkpoint.
        The caller saves (this returns the fields it changed, for ``save(update_fields=...)``)."""
        self.status = JobStatus.QUEUED
        self.attempt += 1
        self.resume = True
        self.cancel_requested = False
        self.worker_token = ""
        self.finished_at = None
        self.error = reason
        return ["status", "attempt", "resume", "cancel_requested", "worker_token", "finished_at", "error"]


class RunTag(models.Model):
    """A short word engineers put on runs to find them again (the runs list filters by it)."""

    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="tags")
    name = models.CharField(max_length=32, db_index=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="training_runtag_once_per_run")]

    def __str__(self) -> str:
        return self.name


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
    """One row per deployment decision; the newest names the policy live sessions use.

    A rollback is a decision too: a new row serving the policy of the deployment it returns to
    (``rollback_of`` names the one it replaced). ``previous`` is where a rollback of this row
    returns, so rolling back again and again walks back through the deployments as they were made.
    """

    checkpoint = models.ForeignKey(Checkpoint, on_delete=models.PROTECT, related_name="deployments")
    deployed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    deployed_at = models.DateTimeField()
    path = models.CharField(max_length=500, help_text="the frozen copy live sessions load")
    comment = models.CharField(max_length=500, blank=True)
    previous = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="the deployment a rollback of this one returns to (empty: none before it)",
    )
    rollback_of = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="the deployment this one rolled back (empty: a deploy)",
    )
    evaluation = models.ForeignKey(
        "Evaluation",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="the finished test evaluation the deploy guard read (empty: none)",
    )
    override_reason = models.CharField(
        max_length=500, blank=True, help_text="why it was deployed although the guard refused it"
    )

    class Meta:
        ordering = ["-deployed_at", "-id"]
        get_latest_by = ["deployed_at", "id"]

    def __str__(self) -> str:
        return f"{self.checkpoint} deployed {self.deployed_at:%Y-%m-%d %H:%M}"


class Evaluation(Job):
    """A run's final checkpoint evaluated against the baseline agents on held-out episodes."""

    noun = "evaluation"

    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="evaluations")
    checkpoint = models.ForeignKey(Checkpoint, on_delete=models.PROTECT, related_name="evaluations")
    split = models.CharField(max_length=16)
    nb_episode = models.PositiveIntegerField()
    results = models.JSONField(default=dict, blank=True, help_text="agent name -> evaluate() result")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"evaluation {self.pk} of run {self.run_id} ({self.split}, {self.nb_episode} episodes)"


class Mine(Job):
    """A mine of expert decisions started from the web app (:mod:`ace_core.imitation.mining`).

    The mine itself lives on disk (``out_dir``: action_set.json, dataset.npz, summary.json); this
    row records who started it, its settings (``spec``: a
    :class:`ace_core.imitation.mining.MineSpec` as a dict), and how it is going or why it failed.
    While it runs, the worker stamps ``heartbeat_at`` like a run's; a mine silent for
    ``GRIDACE_STALE_AFTER_SECONDS`` is failed by the watchdog, and started again it resumes from
    the episodes on disk. Mines made with the command line have no row: the mines page finds them
    on disk.
    """

    noun = "mine"

    name = models.CharField(max_length=200, db_index=True, help_text="the mine directory's name")
    env = models.CharField(max_length=100)
    spec = models.JSONField(help_text="the MineSpec, as a dict")
    episodes_total = models.PositiveIntegerField(
        null=True, blank=True, help_text="(scenario, seed) episodes to play, known once the worker starts"
    )
    out_dir = models.CharField(max_length=500)
    launched_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="mines")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"mine {self.name} ({self.spec.get('expert')}, {self.spec.get('seeds')} seeds)"
