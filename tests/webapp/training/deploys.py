"""What the deploy tests share: a succeeded run with its checkpoint on disk, and a finished
evaluation of it, recorded through the services the worker records them with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from webapp.jobs.services import job_finish, job_start
from webapp.training.models import Checkpoint, Evaluation, TrainingRun
from webapp.training.services.evaluations import evaluation_request
from webapp.training.services.runs import run_finish, run_start


def succeeded_run(run: TrainingRun, step: int = 300) -> TrainingRun:
    """``run`` (queued) carried to success by a worker, with its checkpoint file written."""
    run_start(run_id=run.pk, attempt=1, worker_token="worker")
    path = Path(run.out_dir) / "checkpoint.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'{{"run": {run.pk}, "step": {step}}}')
    Checkpoint.objects.create(run=run, step=step, path=str(path))
    return run_finish(run_id=run.pk, worker_token="worker")


def _result(survival: float, simulations: float = 0.0, episodes: int = 2) -> dict[str, Any]:
    """One agent's entry in an evaluation's results, shaped as ``ace_core.evaluation.runner.evaluate``
    reports it."""
    return {
        "survival_mean": survival,
        "survival_std": 0.0,
        "episodes_fully_survived": 0,
        "reward_mean": 100.0 * survival,
        "decision_ms_p50": 1.0,
        "decision_ms_p95": 2.0,
        "simulate_calls_per_step": simulations,
        "episodes": [
            {"scenario": f"day-{i}", "steps_survived": round(288 * survival), "max_steps": 288, "reward": 1.0}
            for i in range(episodes)
        ],
    }


def finished_evaluation(
    run: TrainingRun,
    user: AbstractBaseUser,
    *,
    checked: float | None,
    do_nothing: float | None,
    plain: float = 0.2,
    split: str = "test",
) -> Evaluation:
    """An evaluation of ``run`` requested by ``user`` and finished by a worker with these mean
    survivals: the policy plain, checked by simulation (None: not played), and do-nothing (None:
    not among the baselines)."""
    evaluation = evaluation_request(run=run, user=user, split=split, nb_episode=2)
    job_start(model=Evaluation, job_id=evaluation.pk, worker_token="evaluator")
    results = {"ace": _result(plain), "reconnect": _result(0.5)}
    if checked is not None:
        results["ace-checked"] = _result(checked, simulations=3.5)
    if do_nothing is not None:
        results["do-nothing"] = _result(do_nothing)
    return job_finish(model=Evaluation, job_id=evaluation.pk, worker_token="evaluator", results=results)
