"""Rows from the trainer's events (metrics, episodes, checkpoints, fine-tunes).

Called by the worker's event sink, one transaction per event, so whatever the sink has reported
is in the database even if the worker is killed the next instant.
"""

from __future__ import annotations

import math
from typing import Any

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest

from ace_core.events import CheckpointEvent, EpisodeEvent, FinetuneEvent, MetricsEvent
from webapp.training.models import Checkpoint, EpisodeRecord, FinetuneRecord, MetricPoint, TrainingRun


def finite_or_none(value: Any) -> float | None:
    """JSON (and Postgres jsonb) has no NaN or infinity: store those as null."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def jsonable(value: Any) -> Any:
    """Plain JSON types from what a trainer or evaluator returns (numpy scalars, tuples, NaN)."""
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, (str, bool)) or value is None:
        return value
    if isinstance(value, int):
        return value
    if hasattr(value, "item"):  # numpy scalars and 0-d arrays
        return jsonable(value.item())
    if hasattr(value, "tolist"):
        return jsonable(value.tolist())
    try:
        return finite_or_none(value)
    except (TypeError, ValueError):
        return str(value)


def _advance(run_id: int, step: int) -> None:
    TrainingRun.objects.filter(pk=run_id).update(progress_step=Greatest(F("progress_step"), step))


@transaction.atomic
def metrics_record(*, run_id: int, event: MetricsEvent) -> MetricPoint:
    values = {str(name): finite_or_none(value) for name, value in event.values.items()}
    point = MetricPoint.objects.create(run_id=run_id, step=event.step, values=values)
    _advance(run_id, event.step)
    return point


@transaction.atomic
def episode_record(*, run_id: int, event: EpisodeEvent) -> EpisodeRecord:
    episode = EpisodeRecord.objects.create(
        run_id=run_id,
        step=event.step,
        index=event.index,
        scenario=event.scenario[:200],
        steps_survived=event.steps_survived,
        max_steps=event.max_steps,
        reward=finite_or_none(event.reward) or 0.0,
    )
    _advance(run_id, event.step)
    return episode


@transaction.atomic
def checkpoint_record(*, run_id: int, event: CheckpointEvent) -> Checkpoint:
    checkpoint = Checkpoint.objects.create(run_id=run_id, step=event.step, path=str(event.path))
    _advance(run_id, event.step)
    return checkpoint


@transaction.atomic
def finetune_record(*, run_id: int, event: FinetuneEvent) -> FinetuneRecord:
    return FinetuneRecord.objects.create(
        run_id=run_id,
        step=event.step,
        adapter_version=event.adapter_version,
        samples=event.samples,
        seconds=event.seconds,
        loss=finite_or_none(event.loss),
        path=str(event.path),
        skipped_reason=event.skipped_reason,
    )
