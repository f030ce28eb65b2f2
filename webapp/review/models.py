"""Refinements (the LLM Policy Actor's proposals, round by round) and reward shapings (the LLM
Value Critic's adjustments), as the trainer reported them, plus reviewers' decisions."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from ace_core.recommend.outcomes import max_rho_words
from webapp.review.evidence import Verdict, refinement_verdict
from webapp.training.models import TrainingRun

COMMENT_MAX_LENGTH = 2000


class RefinementStatus(models.TextChoices):
    PENDING = "pending", "pending"
    APPROVED = "approved", "approved"
    REJECTED = "rejected", "rejected"


class Refinement(models.Model):
    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="refinements")
    refinement_id = models.CharField(max_length=100, help_text="the trainer's id, unique within the run")
    step = models.PositiveBigIntegerField()
    state_text = models.TextField(help_text="the grid state in words (T_s)")
    rl_action_index = models.IntegerField()
    rl_action_text = models.TextField()
    rl_reward = models.FloatField()
    rl_max_rho = models.FloatField()
    llm_action_index = models.IntegerField(null=True, blank=True)
    llm_action_text = models.TextField(blank=True)
    llm_reward = models.FloatField(null=True, blank=True)
    llm_max_rho = models.FloatField(null=True, blank=True)
    rl_n1 = models.TextField(blank=True, help_text="the RL action's N-1 worst case, in words")
    llm_n1 = models.TextField(blank=True, help_text="the LLM action's N-1 worst case, in words")
    accepted_by_simulation = models.BooleanField(db_index=True)
    model = models.CharField(max_length=200)
    adapter_version = models.PositiveIntegerField(default=0)
    reason = models.TextField(blank=True, help_text="why the RL action stands when nothing was accepted")
    status = models.CharField(
        max_length=16, choices=RefinementStatus.choices, default=RefinementStatus.PENDING, db_index=True
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True, max_length=COMMENT_MAX_LENGTH)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "refinement_id"], name="refinement_unique_within_run"),
        ]
        permissions = [("decide_refinement", "Can approve or reject refinements")]

    def __str__(self) -> str:
        return f"refinement {self.refinement_id} of run {self.run_id} at step {self.step}"

    @property
    def rl_outcome(self) -> str:
        """The RL action's simulated outcome in the operators' words ("game over in simulation")."""
        return max_rho_words(self.rl_max_rho)

    @property
    def llm_outcome(self) -> str:
        if self.llm_action_index is None:
            return "no action accepted"
        return max_rho_words(self.llm_max_rho)

    @property
    def verdict(self) -> Verdict:
        """The LLM action against the RL action in the reviewers' words ("safe and better than
        RL", "better than RL, still unsafe"...; :mod:`webapp.review.evidence`)."""
        return refinement_verdict(
            accepted=self.accepted_by_simulation,
            rl_reward=self.rl_reward,
            rl_max_rho=self.rl_max_rho,
            llm_reward=self.llm_reward if self.llm_action_index is not None else None,
            llm_max_rho=self.llm_max_rho,
        )


class RefinementRound(models.Model):
    refinement = models.ForeignKey(Refinement, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveIntegerField(help_text="1 for the first round")
    prompt = models.TextField()
    response = models.TextField()
    action_index = models.IntegerField(null=True, blank=True)
    simulated_reward = models.FloatField(null=True, blank=True)
    simulated_max_rho = models.FloatField(null=True, blank=True)
    accepted = models.BooleanField()
    error = models.TextField(blank=True)
    seconds = models.FloatField(default=0.0)

    class Meta:
        ordering = ["refinement", "number"]
        constraints = [models.UniqueConstraint(fields=["refinement", "number"], name="round_unique_number")]

    @property
    def outcome(self) -> str:
        """The round's simulated outcome in the operators' words."""
        if self.action_index is None:
            return "no action parsed"
        return max_rho_words(self.simulated_max_rho, self.error)


class RewardShaping(models.Model):
    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="shapings")
    step = models.PositiveBigIntegerField()
    episode_index = models.PositiveIntegerField()
    trajectory_step = models.PositiveIntegerField()
    adjustment = models.FloatField(help_text="one of -2K, -K, +K, +2K")
    rationale = models.TextField()
    model = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        default_permissions = ("view",)

    def __str__(self) -> str:
        return f"shaping {self.adjustment:+g} at episode {self.episode_index} step {self.trajectory_step}"
