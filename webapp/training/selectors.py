"""Reads for training runs: lists, details, the live snapshot a run page starts from, and the
rows newer than a cursor (the database relay used when there is no Redis)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from webapp.live import run_messages
from webapp.training.models import (
    Checkpoint,
    Deployment,
    EpisodeRecord,
    Evaluation,
    FinetuneRecord,
    MetricPoint,
    TrainingRun,
)

SNAPSHOT_LIMIT = 5_000
"""rows of each kind a page receives on connect (the most recent ones)"""


def env_names() -> tuple[str, ...]:
    from ace_core.grid.envs import available_env_names  # imports grid2op: only when needed

    return available_env_names()


def run_list(*, status: str = "") -> QuerySet[TrainingRun]:
    runs = TrainingRun.objects.select_related("launched_by")
    if status:
        runs = runs.filter(status=status)
    return runs.order_by("-created_at", "-id")


def run_get(*, pk: int) -> TrainingRun | None:
    return TrainingRun.objects.select_related("launched_by").filter(pk=pk).first()


def run_checkpoint_latest(*, run: TrainingRun) -> Checkpoint | None:
    return run.checkpoints.order_by("-id").first()


def run_evaluations(*, run: TrainingRun) -> QuerySet[Evaluation]:
    return run.evaluations.select_related("checkpoint", "requested_by").order_by("-created_at", "-id")


EVALUATION_COLUMNS = (
    ("survival_mean", "mean survival"),
    ("survival_std", "std"),
    ("episodes_fully_survived", "fully survived"),
    ("reward_mean", "mean reward"),
    ("decision_ms_p50", "decision ms p50"),
    ("decision_ms_p95", "decision ms p95"),
)


def evaluation_table(*, evaluation: Evaluation) -> list[dict[str, Any]]:
    """One row per agent (the run's policy first, then the baselines), best survival first
    among the baselines, with the columns of :data:`EVALUATION_COLUMNS`."""
    rows = []
    for agent, result in evaluation.results.items():
        result = result if isinstance(result, dict) else {}
        rows.append(
            {
                "agent": "this run" if agent == "ace" else agent,
                "is_run": agent == "ace",
                "values": [result.get(key) for key, _ in EVALUATION_COLUMNS],
                "episodes": len(result.get("episodes", [])),
            }
        )
    rows.sort(key=lambda row: (not row["is_run"], -(row["values"][0] or 0.0)))
    return rows


def run_refinement_summary(*, run: TrainingRun) -> dict[str, int]:
    from django.db.models import Count, Q

    from webapp.review.models import RefinementStatus

    return run.refinements.aggregate(
        total=Count("id"),
        accepted=Count("id", filter=Q(accepted_by_simulation=True)),
        pending=Count("id", filter=Q(status=RefinementStatus.PENDING)),
        approved=Count("id", filter=Q(status=RefinementStatus.APPROVED)),
        rejected=Count("id", filter=Q(status=RefinementStatus.REJECTED)),
    )


def deployment_current() -> Deployment | None:
    return (
        Deployment.objects.select_related("checkpoint__run", "deployed_by")
        .order_by("-deployed_at", "-id")
        .first()
    )


def checkpoint_get(*, run_id: int, pk: int) -> Checkpoint | None:
    return Checkpoint.objects.select_related("run").filter(run_id=run_id, pk=pk).first()


def _sources() -> list[tuple[str, Any, Any]]:
    from webapp.review.models import Refinement

    return [
        ("metrics", MetricPoint, run_messages.metric_message),
        ("episode", EpisodeRecord, run_messages.episode_message),
        ("checkpoint", Checkpoint, run_messages.checkpoint_message),
        ("finetune", FinetuneRecord, run_messages.finetune_message),
        ("refinement", Refinement, run_messages.refinement_message),
    ]


def _status_key(run: TrainingRun) -> list[Any]:
    return [run.status, run.attempt, run.progress_step, run.cancel_requested]


def run_live_snapshot(*, run_id: int) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """Every live message of the run so far (the newest ``SNAPSHOT_LIMIT`` of each kind), and the
    cursor to ask for newer ones. None if the run does not exist."""
    run = TrainingRun.objects.filter(pk=run_id).first()
    if run is None:
        return None
    messages = [run_messages.status_message(run)]
    cursor: dict[str, Any] = {"status": _status_key(run)}
    for kind, model, build in _sources():
        rows = list(model.objects.filter(run_id=run_id).order_by("-id")[:SNAPSHOT_LIMIT])
        rows.reverse()
        messages.extend(build(row) for row in rows)
        cursor[kind] = rows[-1].pk if rows else 0
    return messages, cursor


def run_live_since(*, run_id: int, cursor: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Live messages for rows written after ``cursor`` (and the run's status if it changed)."""
    run = TrainingRun.objects.filter(pk=run_id).first()
    if run is None:
        return [], cursor
    cursor = dict(cursor)
    messages = []
    if _status_key(run) != cursor.get("status"):
        messages.append(run_messages.status_message(run))
        cursor["status"] = _status_key(run)
    for kind, model, build in _sources():
        rows = list(
            model.objects.filter(run_id=run_id, pk__gt=cursor.get(kind, 0)).order_by("id")[:SNAPSHOT_LIMIT]
        )
        messages.extend(build(row) for row in rows)
        if rows:
            cursor[kind] = rows[-1].pk
    return messages, cursor


def run_metric_points(*, run: TrainingRun, after_id: int = 0, limit: int = 1000) -> list[MetricPoint]:
    """The run's metric points with an id above ``after_id``, oldest first (a page of them)."""
    return list(run.metrics.filter(pk__gt=after_id).order_by("id")[:limit])
