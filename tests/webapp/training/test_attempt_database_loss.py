"""A training attempt whose database goes away under it (a restart, a dropped connection) queues
its run again to continue from the checkpoint, instead of failing it for good."""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from webapp.jobs.models import JobStatus
from webapp.training.models import TrainingRun
from webapp.training.worker.attempt import train_attempt

pytestmark = pytest.mark.django_db(transaction=True)


def trainer_losing_the_database(config, out_dir, sink, resume=False):
    raise OperationalError("terminating connection due to administrator command")


def test_a_lost_database_queues_the_run_again(make_run, settings):
    settings.GRIDACE_TRAINER = f"{__name__}.trainer_losing_the_database"
    run = make_run()
    with pytest.raises(OperationalError):
        train_attempt(run_id=run.pk, attempt=run.attempt, worker_id="w")
    run = TrainingRun.objects.get(pk=run.pk)
    assert run.status == JobStatus.QUEUED and run.attempt == 2, run.error
    assert run.error.startswith("the worker lost the database (OperationalError: terminating")
    assert DBTaskResult.objects.get(id=run.task_id).status == TaskResultStatus.READY
