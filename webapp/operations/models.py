"""Live grid sessions and what happens in them: steps, recommendations, decisions, alarms.

A session plays one scenario of the deployed policy's env. Its status moves
running <-> paused -> finished | stopped | failed. The feed worker that owns it (``worker_token``)
stamps ``heartbeat_at``, as a training job's worker does (:class:`webapp.jobs.models.Claimed`); a
session without heartbeat for ``GRIDACE_LIVE_STALE_SECONDS`` is taken over by another worker,
which replays the applied actions to resume from ``current_step``.

Decisions are taken on the current step while ``decisions_open``; the worker closes the step when
it takes the pending decision to apply it, and opens the next one when it records that step.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models

from webapp.jobs.models import ACTIVE_STATUSES, Claimed, Job


class SessionStatus(models.TextChoices):
    RUNNING = "running", "running"
    PAUSED = "paused", "paused"
    FINISHED = "finished", "finished"
    STOPPED = "stopped", "stopped"
    FAILED = "failed", "failed"


LIVE_STATUSES = (SessionStatus.RUNNING, SessionStatus.PAUSED)
ENDED_STATUSES = (SessionStatus.FINISHED, SessionStatus.STOPPED, SessionStatus.FAILED)


class LiveSession(Claimed):
    label = models.CharField(max_length=100, blank=True)
    env = models.CharField(max_length=100)
    scenario_index = models.PositiveIntegerField(help_text="position in ace_core.live.live_scenarios(env)")
    scenario_name = models.CharField(max_length=200, blank=True)
    start_step = models.PositiveIntegerField(
        default=0, help_text="steps into the scenario where the session opens (0: its first step)"
    )
    max_steps = models.PositiveIntegerField(default=0, help_text="0: the whole scenario")
    seed = models.PositiveIntegerField(default=0)
    k = models.PositiveSmallIntegerField(default=3, help_text="recommendations per step")
    speed_seconds = models.FloatField(default=2.0, help_text="seconds between two grid steps")
    deployment = models.ForeignKey(
        "training.Deployment", on_delete=models.PROTECT, related_name="live_sessions"
    )
    policy_path = models.CharField(max_length=500, help_text="the frozen policy file the session uses")
    status = models.CharField(
        max_length=16, choices=SessionStatus.choices, default=SessionStatus.RUNNING, db_index=True
    )
    steps_requested = models.PositiveIntegerField(
        default=0, help_text="single steps asked for while paused, not yet played"
    )
    current_step = models.IntegerField(default=-1, help_text="last recorded step (-1: not started)")
    decisions_open = models.BooleanField(default=False)
    revision = models.PositiveBigIntegerField(default=0, help_text="bumped by every change pages show")
    layout = models.JSONField(default=dict, blank=True, help_text="the grid drawing, set by the worker")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    resumes = models.PositiveIntegerField(default=0, help_text="times a worker resumed it from its steps")
    end_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [
            ("start_livesession", "Can start and stop live sessions"),
            ("control_livesession", "Can pause, step and set the speed of live sessions"),
            ("operate_livesession", "Can decide on recommendations, run what-ifs and acknowledge alarms"),
        ]

    def __str__(self) -> str:
        name = f" {self.label}" if self.label else ""
        return f"session {self.pk}{name} ({self.env}, {self.scenario_name or self.scenario_index})"

    @property
    def is_live(self) -> bool:
        return self.status in LIVE_STATUSES

    def mark_ended(self, status: str, *, reason: str, now: datetime) -> list[str]:
        """The session finished, was stopped or failed, for ``reason``: decisions close with it.
        Returns the fields changed, for ``save(update_fields=...)`` (the caller saves)."""
        if status not in ENDED_STATUSES:
            raise ValueError(
                f"status {status!s} does not end a session; accepted: {', '.join(ENDED_STATUSES)}"
            )
        self.status = status
        self.end_reason = reason
        self.finished_at = now
        self.decisions_open = False
        return ["status", "end_reason", "finished_at", "decisions_open"]


class SessionStep(models.Model):
    session = models.ForeignKey(LiveSession, on_delete=models.CASCADE, related_name="steps")
    step = models.PositiveIntegerField()
    state = models.JSONField(help_text="ace_core.live.grid_state")
    text = models.TextField(blank=True, help_text="the state in words (for explanations)")
    max_rho = models.FloatField()
    overloads = models.PositiveIntegerField()
    reward = models.FloatField(default=0.0)
    done = models.BooleanField(default=False)
    applied_action = models.JSONField(
        default=dict, blank=True, help_text="the action played to reach this step (replayed on resume)"
    )
    recommend_ms = models.FloatField(
        null=True, blank=True, help_text="the recommendation pipeline's run, in the worker"
    )
    assessment = models.JSONField(
        default=dict,
        blank=True,
        help_text="doing nothing's outcome, the candidates rejected by simulation, the grid's N-1 "
        "status and look-ahead, the forecast used (ace_core.live.assessment_dict)",
    )
    stepped_at = models.DateTimeField()

    class Meta:
        ordering = ["session", "step"]
        constraints = [models.UniqueConstraint(fields=["session", "step"], name="one_row_per_session_step")]

    def __str__(self) -> str:
        return f"session {self.session_id} step {self.step}"


class RecommendationStatus(models.TextChoices):
    OPEN = "open", "open"
    ACCEPTED = "accepted", "accepted"
    REJECTED = "rejected", "rejected"
    EXPIRED = "expired", "expired"


class ExplanationStatus(models.TextChoices):
    NONE = "", "not asked"
    PENDING = "pending", "pending"
    READY = "ready", "ready"
    FAILED = "failed", "failed"


class LiveRecommendation(models.Model):
    """A card. It lasts as long as its situation: while the pipeline recommends the same action
    at each step, the card is re-simulated and updated in place (``step`` is the step of its
    figures, ``first_step`` the step it first appeared), and it expires with the reason when it is
    no longer among the cards (``expired_because``)."""

    session = models.ForeignKey(LiveSession, on_delete=models.CASCADE, related_name="recommendations")
    step = models.PositiveIntegerField(
        help_text="the step its figures are for (the latest it was simulated at)"
    )
    first_step = models.PositiveIntegerField(null=True, blank=True, help_text="the step it first appeared")
    rank = models.PositiveSmallIntegerField()
    action = models.JSONField(help_text="the action as ace_core.live.parse_action reads it")
    description = models.CharField(max_length=500)
    confidence = models.FloatField()
    source = models.CharField(max_length=16, help_text="policy, expert, both or default (reconnect)")
    max_rho_before = models.FloatField()
    max_rho_after = models.FloatField(null=True, blank=True)
    lines_relieved = models.JSONField(default=list)
    new_overloads = models.JSONField(default=list)
    error = models.CharField(max_length=500, blank=True)
    figures = models.JSONField(
        default=dict,
        blank=True,
        help_text="outcome in words, N-1 worst case and lines at risk, look-ahead, substations",
    )
    status = models.CharField(
        max_length=16, choices=RecommendationStatus.choices, default=RecommendationStatus.OPEN
    )
    explanation_status = models.CharField(
        max_length=16, choices=ExplanationStatus.choices, default=ExplanationStatus.NONE, blank=True
    )
    explanation = models.TextField(blank=True, help_text="the language model's text, as it wrote it")
    explanation_model = models.CharField(max_length=200, blank=True)
    explanation_facts = models.TextField(
        blank=True,
        help_text="the card's simulated figures in plain sentences (ace_core.recommend.explain.facts), "
        "shown before the language model's text",
    )
    explanation_flags = models.JSONField(
        default=list,
        blank=True,
        help_text="the figures the language model's text quotes that disagree with the simulation, in words",
    )
    expired_because = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["session", "step", "rank"]
        indexes = [models.Index(fields=["session", "step"])]

    def __str__(self) -> str:
        return f"session {self.session_id} step {self.step} #{self.rank + 1}: {self.description}"[:200]


class DecisionKind(models.TextChoices):
    ACCEPT = "accept", "accept"
    REJECT = "reject", "reject"
    APPLY = "apply", "apply an operator's action"


class DecisionStatus(models.TextChoices):
    PENDING = "pending", "waiting for the next step"
    APPLIED = "applied", "applied"
    REFUSED = "refused", "refused by the grid"
    CLOSED = "closed", "closed (nothing to apply)"


class Decision(models.Model):
    session = models.ForeignKey(LiveSession, on_delete=models.CASCADE, related_name="decisions")
    step = models.PositiveIntegerField(help_text="the step the operator decided on")
    kind = models.CharField(max_length=16, choices=DecisionKind.choices)
    recommendation = models.ForeignKey(
        LiveRecommendation, null=True, blank=True, on_delete=models.PROTECT, related_name="decisions"
    )
    action = models.JSONField(default=dict, blank=True)
    description = models.CharField(max_length=500, blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_at = models.DateTimeField()
    comment = models.CharField(max_length=500, blank=True)
    status = models.CharField(max_length=16, choices=DecisionStatus.choices)
    applied_step = models.PositiveIntegerField(null=True, blank=True)
    outcome = models.JSONField(default=dict, blank=True, help_text="the grid one step after applying")
    figures_seen = models.JSONField(
        default=dict,
        blank=True,
        help_text="the simulated figures the operator saw when deciding (card or what-if, and the "
        "grid's N-1 status and look-ahead)",
    )

    class Meta:
        ordering = ["-decided_at", "-id"]
        constraints = [
            # The database's own guard for the double-accept race: one action per step.
            models.UniqueConstraint(
                fields=["session", "step"],
                condition=models.Q(kind__in=["accept", "apply"]),
                name="one_action_per_session_step",
            )
        ]

    def __str__(self) -> str:
        return f"session {self.session_id} step {self.step}: {self.kind} {self.description}"[:200]


class AlarmKind(models.TextChoices):
    OVERLOAD = "overload", "overload (rho > 1)"
    LINE_TRIPPED = "line_tripped", "line tripped"
    MAINTENANCE = "maintenance", "line in maintenance"
    GAME_OVER = "game_over", "game over"
    N1_INSECURE = "n1_insecure", "not N-1 secure"
    OVERLOAD_AHEAD = "overload_ahead", "overload ahead if nothing is done"
    FAILURE_AHEAD = "failure_ahead", "early warning: game over ahead whatever is done"


class AlarmSeverity(models.TextChoices):
    CRITICAL = "critical", "critical: the grid is failing now"
    WARNING = "warning", "warning: it will or could"
    INFO = "info", "info: planned"


class Alarm(models.Model):
    session = models.ForeignKey(LiveSession, on_delete=models.CASCADE, related_name="alarms")
    step = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=AlarmKind.choices)
    severity = models.CharField(max_length=8, choices=AlarmSeverity.choices, default=AlarmSeverity.WARNING)
    line = models.IntegerField(null=True, blank=True)
    message = models.CharField(max_length=500)
    raised_at = models.DateTimeField()
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    acknowledged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-step", "-id"]
        indexes = [models.Index(fields=["session", "acknowledged_at"])]

    def __str__(self) -> str:
        return f"session {self.session_id} step {self.step}: {self.message}"[:200]


class DayPlay(Job):
    """An agent played by grid2op's Runner on a finished session's day, in the background (the
    ``default`` queue): the deployed policy on the day the operators ran, for the day-comparison
    page (:mod:`webapp.operations.services.session_episodes` writes the episode's folder). A play
    that succeeded is never played again; one that failed may be asked for again."""

    noun = "play"

    session = models.ForeignKey(LiveSession, on_delete=models.CASCADE, related_name="day_plays")
    play = models.CharField(max_length=32, help_text="the episode's name beside the session (policy)")
    agent = models.CharField(max_length=600, help_text="the agent played (ace_core.agents.spec.AgentSpec)")
    agent_label = models.CharField(max_length=300, help_text="which agent played, in words")
    steps = models.PositiveIntegerField(help_text="steps played: as many as the session's")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # the database's own guard against two plays of one day at once (two clicks)
            models.UniqueConstraint(
                fields=["session", "play"],
                condition=models.Q(status__in=ACTIVE_STATUSES),
                name="one_active_play_per_session_day",
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent_label} on session {self.session_id}'s day ({self.status})"[:200]
