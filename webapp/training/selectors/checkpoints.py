"""A run's checkpoints, as the run page, the deploy pages and the HTTP API read them: a run's
newest checkpoint, and one checkpoint of a run by id."""

from __future__ import annotations

from webapp.training.models import Checkpoint, TrainingRun


def run_checkpoint_latest(*, run: TrainingRun) -> Checkpoint | None:
    return run.checkpoints.order_by("-id").first()


def checkpoint_get(*, run_id: int, pk: int) -> Checkpoint | None:
    return Checkpoint.objects.select_related("run").filter(run_id=run_id, pk=pk).first()
