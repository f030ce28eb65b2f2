"""Background tasks on the ``training`` queue, run by ``manage.py db_worker --queue-name training``.

Entry points only: ``train_run`` runs one attempt of a run (:mod:`webapp.training.worker.attempt`),
``evaluate_run`` evaluates a finished run's checkpoint against the baselines
(:mod:`webapp.training.worker.evaluation`), ``mine_run`` mines expert decisions
(:mod:`webapp.training.worker.mining`). Queued rows name these functions by their dotted path, so
they stay here. Each imports the worker's code when it runs, in the worker process: the services
that queue these tasks import this module without loading the worker (nor what the worker loads).
"""

from __future__ import annotations

from typing import Any

from django_tasks import TaskContext, task


def _worker_id(context: TaskContext) -> str:
    worker_ids = context.task_result.worker_ids
    return worker_ids[-1] if worker_ids else ""


@task(queue_name="training", takes_context=True)
def train_run(context: TaskContext, run_id: int, attempt: int) -> dict[str, Any]:
    from webapp.training.worker.attempt import train_attempt

    return train_attempt(run_id=run_id, attempt=attempt, worker_id=_worker_id(context))


@task(queue_name="training", takes_context=True)
def evaluate_run(context: TaskContext, evaluation_id: int) -> dict[str, Any]:
    from webapp.training.worker.evaluation import evaluate_attempt

    return evaluate_attempt(evaluation_id=evaluation_id, worker_id=_worker_id(context))


@task(queue_name="training", takes_context=True)
def mine_run(context: TaskContext, mine_id: int) -> dict[str, Any]:
    from webapp.training.worker.mining import mine_attempt

    return mine_attempt(mine_id=mine_id, worker_id=_worker_id(context))
