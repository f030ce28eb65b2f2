"""A run's evaluations against the baselines: the names the run's own policy has in their results,
a run's evaluations and one evaluation, and an evaluation's results as the run page's table (one
row per agent)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from webapp.training.models import Evaluation, TrainingRun

RUN_AGENT = "ace"
"""the name a run's own policy has in an evaluation's results (the others are baselines)"""
RUN_CHECKED_AGENT = "ace-checked"
"""the run's policy as deployed: its most likely actions checked by simulation"""
RUN_LABELS = {RUN_AGENT: "this run", RUN_CHECKED_AGENT: "this run, checked by simulation"}


def run_evaluations(*, run: TrainingRun) -> QuerySet[Evaluation]:
    return run.evaluations.select_related("checkpoint", "requested_by").order_by("-created_at", "-id")


def evaluation_get(*, pk: int) -> Evaluation | None:
    return Evaluation.objects.select_related("checkpoint", "requested_by").filter(pk=pk).first()


EVALUATION_COLUMNS = (
    ("survival_mean", "mean survival"),
    ("survival_std", "std"),
    ("episodes_fully_survived", "fully survived"),
    ("reward_mean", "mean reward"),
    ("decision_ms_p50", "decision ms p50"),
    ("decision_ms_p95", "decision ms p95"),
    ("simulate_calls_per_step", "simulations per step"),
)


def evaluation_table(*, evaluation: Evaluation) -> list[dict[str, Any]]:
    """One row per agent (the run's policy first, plain then checked by simulation, then the
    baselines, best survival first), with the columns of :data:`EVALUATION_COLUMNS`."""
    rows = []
    for agent, result in evaluation.results.items():
        result = result if isinstance(result, dict) else {}
        rows.append(
            {
                "agent": RUN_LABELS.get(agent, agent),
                "is_run": agent in RUN_LABELS,
                "order": list(RUN_LABELS).index(agent) if agent in RUN_LABELS else len(RUN_LABELS),
                "values": [result.get(key) for key, _ in EVALUATION_COLUMNS],
                "episodes": len(result.get("episodes", [])),
            }
        )
    rows.sort(key=lambda row: (row["order"], -(row["values"][0] or 0.0)))
    return rows
