"""The metrics a run reports, in words: the readable name (with its unit) of each metrics.jsonl
name and the heading of each namespace, as the run's charts and the comparison page show them;
the names of the trainer's in-training validation metrics; and a run's metric points, a page at
a time (the HTTP API's metrics resource)."""

from __future__ import annotations

from ace_core.training.best_choice import SURVIVAL, SURVIVAL_UNDER_ATTACKS, SURVIVAL_UNEVEN
from webapp.training.models import MetricPoint, TrainingRun

VALIDATION_SURVIVAL_METRIC = SURVIVAL
"""the trainer's in-training validation: the policy's mean survival on the validation days"""
VALIDATION_DECISIONS_METRIC = "eval/validation_decisions"
"""the run's decision count when the trainer validated (absent from runs older than it)"""
METRIC_LABELS = {
    # training progress
    "charts/episodic_return": "episode reward (sum over the episode)",
    "charts/episodic_length": "episode length (steps survived)",
    "charts/survival": "episode survival (fraction of the episode)",
    "charts/SPS": "training speed (steps per second)",
    "charts/buffer_size": "replay buffer (transitions)",
    "charts/decisions": "decisions taken (count)",
    "charts/episodes": "episodes played (count)",
    "charts/updates": "gradient updates (count)",
    # validation during training
    VALIDATION_SURVIVAL_METRIC: "validation survival (policy on the validation days, during training)",
    "eval/validation_reward": "validation reward (policy on the validation days, during training)",
    SURVIVAL_UNDER_ATTACKS: "validation survival under attacks (policy on the attacked validation days, during training)",
    SURVIVAL_UNEVEN: "validation survival, uneven (policy on the heavier, uneven validation days, during training)",
    VALIDATION_DECISIONS_METRIC: "decisions taken when validated (during training)",
    # losses and the temperature
    "losses/qf1_loss": "critic loss, first Q network",
    "losses/qf2_loss": "critic loss, second Q network",
    "losses/actor_loss": "policy loss",
    "losses/alpha": "entropy temperature (alpha)",
    "losses/alpha_loss": "temperature loss",
    "losses/entropy": "policy entropy (nats)",
    "losses/q_target_mean": "mean Q target",
    "losses/anchor": "expert anchor loss",
    "losses/conservative": "conservative Q penalty",
    "losses/imitation": "imitation loss",
    # the LLM: counts since the run started, rates, times
    "llm/calls": "LLM calls (count)",
    "llm/critic_calls": "LLM calls by the critic (count)",
    "llm/critic_refused": "critic answers refused (count)",
    "llm/refinements": "refinements (count)",
    "llm/accepted": "refinements accepted by simulation (count)",
    "llm/approved": "refinements approved by reviewers (count)",
    "llm/rejected": "refinements rejected by reviewers (count)",
    "llm/awaiting_approval": "refinements awaiting a reviewer (count)",
    "llm/shapings": "reward shapings (count)",
    "llm/finetunes": "LoRA fine-tunes (count)",
    "llm/buffer_size": "LLM buffer (transitions)",
    "llm/acceptance_rate": "refinement acceptance rate (fraction accepted by simulation)",
    "llm/call_seconds": "time per LLM call (seconds)",
    "llm/refine_seconds": "time per refinement (seconds)",
    "llm/critic_seconds": "time per critic pass (seconds)",
    # the imitation start
    "pretrain/mining": "mining done (fraction)",
    "pretrain/cloning": "cloning done (fraction)",
    "pretrain/mined_decisions": "mined expert decisions (count)",
    "pretrain/loss_last_epoch": "cloning loss, last epoch",
    "pretrain/agreement_before": "agreement with the expert before cloning (fraction)",
    "pretrain/agreement_after": "agreement with the expert after cloning (fraction)",
}
"""readable names, with their units, of the metrics the run's charts and the comparison page show
(others keep their metrics.jsonl name)"""
METRIC_GROUPS = {
    "charts": "training progress",
    "eval": "validation",
    "losses": "losses",
    "llm": "LLM",
    "pretrain": "imitation start",
}
"""the heading of each metric namespace in the comparison page's menu"""


def metric_names() -> dict[str, dict[str, str]]:
    """What the charts' scripts read (json_script): ``labels`` by metric, ``groups`` by namespace."""
    return {"labels": METRIC_LABELS, "groups": METRIC_GROUPS}


def run_metric_points(*, run: TrainingRun, after_id: int = 0, limit: int = 1000) -> list[MetricPoint]:
    """The run's metric points with an id above ``after_id``, oldest first (a page of them)."""
    return list(run.metrics.filter(pk__gt=after_id).order_by("id")[:limit])
