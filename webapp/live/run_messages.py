"""The live messages a run page receives, built from rows.

The worker's sink sends one right after writing each row; the run page's websocket sends a
snapshot of all of them on connect, and (without Redis) polls for newer rows. Every message has a
``kind`` and the row ``id``, so the page can drop duplicates.
"""

from __future__ import annotations

from typing import Any

from webapp.training.models import Checkpoint, EpisodeRecord, FinetuneRecord, MetricPoint, TrainingRun


def status_message(run: TrainingRun) -> dict[str, Any]:
    return {
        "kind": "status",
        "id": run.pk,
        "status": run.status,
        "attempt": run.attempt,
        "progress_step": run.progress_step,
        "total_steps": run.total_steps,
        "cancel_requested": run.cancel_requested,
        "error": run.error,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


def metric_message(point: MetricPoint) -> dict[str, Any]:
    """``time``: when the trainer reported it (the charts' wall-clock axis)."""
    time = point.created_at.isoformat() if point.created_at else None
    return {"kind": "metrics", "id": point.pk, "step": point.step, "time": time, "values": point.values}


def episode_message(episode: EpisodeRecord) -> dict[str, Any]:
    return {
        "kind": "episode",
        "id": episode.pk,
        "step": episode.step,
        "index": episode.index,
        "scenario": episode.scenario,
        "steps_survived": episode.steps_survived,
        "max_steps": episode.max_steps,
        "reward": episode.reward,
    }


def checkpoint_message(checkpoint: Checkpoint) -> dict[str, Any]:
    return {"kind": "checkpoint", "id": checkpoint.pk, "step": checkpoint.step}


def finetune_message(finetune: FinetuneRecord) -> dict[str, Any]:
    return {
        "kind": "finetune",
        "id": finetune.pk,
        "step": finetune.step,
        "adapter_version": finetune.adapter_version,
        "samples": finetune.samples,
        "loss": finetune.loss,
        "skipped_reason": finetune.skipped_reason,
    }


def refinement_message(refinement: Any) -> dict[str, Any]:
    """A refinement, as the run page charts it (acceptance over steps)."""
    return {
        "kind": "refinement",
        "id": refinement.pk,
        "run_id": refinement.run_id,
        "step": refinement.step,
        "accepted_by_simulation": refinement.accepted_by_simulation,
        "status": refinement.status,
    }
