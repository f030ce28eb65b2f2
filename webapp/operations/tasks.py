"""Background tasks of the live console: LLM explanations of recommendations on the ``explain``
queue (``manage.py db_worker --queue-name explain``), kept off the feed's fast path so a
recommendation never waits for a language model; an agent's play of a finished session's day on
the ``default`` queue (served with ``training``), for the day-comparison page.

Entry points only: the work is :mod:`webapp.operations.worker.explain` and
:mod:`webapp.operations.worker.plays`, imported when the task runs, in the worker process (the
services that queue the tasks import this module without them). Queued rows name these functions
by their dotted path, so they stay here.
"""

from __future__ import annotations

from typing import Any

from django_tasks import TaskContext, task


@task(queue_name="explain")
def explain_recommendation(recommendation_id: int) -> dict[str, Any]:
    from webapp.operations.worker.explain import explain

    return explain(recommendation_id=recommendation_id)


@task(queue_name="default", takes_context=True)
def play_session_day(context: TaskContext, play_id: int) -> dict[str, Any]:
    from webapp.operations.worker.plays import play_attempt

    worker_ids = context.task_result.worker_ids
    return play_attempt(play_id=play_id, worker_id=worker_ids[-1] if worker_ids else "")
