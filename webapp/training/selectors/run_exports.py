"""A run's metrics and episodes as CSV rows, as the run page's charts draw them: metrics by
environment step with the time the trainer reported them, episodes one row each."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from webapp.training.models import EpisodeRecord, MetricPoint, TrainingRun

CHUNK = 2_000


def run_metric_keys(*, run: TrainingRun) -> list[str]:
    """Every metric name the run has reported, in alphabetical order."""
    names: set[str] = set()
    for values in MetricPoint.objects.filter(run=run).values_list("values", flat=True).iterator(CHUNK):
        names.update(values)
    return sorted(names)


def _cell(value: Any) -> Any:
    return "" if value is None else value


def run_metric_rows(*, run: TrainingRun, keys: list[str]) -> Iterator[list[Any]]:
    """A header (``step``, ``time_utc``, then ``keys``), then one row per metric report that has
    any of ``keys``, oldest first; a key the report lacks is an empty cell."""
    yield ["step", "time_utc", *keys]
    points = MetricPoint.objects.filter(run=run).order_by("id").values_list("step", "created_at", "values")
    for step, created_at, values in points.iterator(CHUNK):
        if any(key in values for key in keys):
            yield [step, created_at.isoformat(), *(_cell(values.get(key)) for key in keys)]


EPISODE_COLUMNS = ["step", "index", "scenario", "steps_survived", "max_steps", "survival", "reward"]


def run_episode_rows(*, run: TrainingRun) -> Iterator[list[Any]]:
    """A header, then one row per training episode, oldest first (``survival``: the fraction of
    the episode survived, as the survival chart shows it)."""
    yield EPISODE_COLUMNS
    episodes = EpisodeRecord.objects.filter(run=run).order_by("id")
    for episode in episodes.iterator(CHUNK):
        survival = episode.steps_survived / episode.max_steps if episode.max_steps else 0.0
        yield [
            episode.step,
            episode.index,
            episode.scenario,
            episode.steps_survived,
            episode.max_steps,
            survival,
            episode.reward,
        ]
