"""Background tasks of the live console, on the ``explain`` queue
(``manage.py db_worker --queue-name explain``): LLM explanations of recommendations, kept off the
feed's fast path so a recommendation never waits for a language model.

Entry points only: the work is :mod:`webapp.operations.worker.explain`, imported when the task
runs, in the worker process (the service that queues the task imports this module without it).
Queued rows name these functions by their dotted path, so they stay here.
"""

from __future__ import annotations

from typing import Any

from django_tasks import task


@task(queue_name="explain")
def explain_recommendation(recommendation_id: int) -> dict[str, Any]:
    from webapp.operations.worker.explain import explain

    return explain(recommendation_id=recommendation_id)
