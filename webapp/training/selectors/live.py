"""What a run's page receives live: every message of the run so far when it connects (the newest
rows of each kind), and the rows newer than a cursor (the database relay used when there is no
Redis), as :mod:`webapp.live.run_messages` builds them."""

from __future__ import annotations

from typing import Any

from webapp.live import run_messages
from webapp.training.models import Checkpoint, EpisodeRecord, FinetuneRecord, MetricPoint, TrainingRun

SNAPSHOT_LIMIT = 5_000
"""rows of each kind a page receives on connect (the most recent ones)"""


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
