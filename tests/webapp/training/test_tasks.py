"""The training and evaluation tasks, run by ``manage.py db_worker --batch`` in this process."""

from __future__ import annotations

import threading

import pytest
from django.core.management import call_command
from django.urls import reverse
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from tests.webapp.conftest import client_for
from webapp.review.models import Refinement, RewardShaping
from webapp.training.models import (
    Checkpoint,
    EpisodeRecord,
    EvaluationStatus,
    MetricPoint,
    RunStatus,
    TrainingRun,
)
from webapp.training.services.evaluations import evaluation_request
from webapp.training.services.runs import run_cancel, run_resume

pytestmark = pytest.mark.django_db(transaction=True)


def work_off_queue() -> None:
    call_command(
        "db_worker",
        "--batch",
        "--queue-name",
        "training",
        "--no-startup-delay",
        "--no-reload",
        "--interval",
        "0",
        verbosity=0,
    )


def test_worker_runs_a_run_and_stores_every_event(make_run):
    run = make_run()
    work_off_queue()

    run = TrainingRun.objects.get(pk=run.pk)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.progress_step == 300 and run.started_at and run.finished_at and run.heartbeat_at
    assert list(MetricPoint.objects.filter(run=run).values_list("step", flat=True)) == [
        50,
        100,
        150,
        200,
        250,
        300,
    ]
    point = MetricPoint.objects.filter(run=run).first()
    assert point.values["losses/qf1_loss"] == pytest.approx(1 / 50)
    assert point.values["charts/nan_metric"] is None  # NaN is stored as null
    assert EpisodeRecord.objects.filter(run=run).count() == 3
    assert list(Checkpoint.objects.filter(run=run).values_list("step", flat=True)) == [100, 200, 300, 300]
    assert Refinement.objects.filter(run=run).count() == 6
    assert Refinement.objects.get(run=run, refinement_id="r50").rounds.count() == 1
    assert RewardShaping.objects.filter(run=run).count() == 3
    task = DBTaskResult.objects.get(id=run.task_id)
    assert task.status == TaskResultStatus.SUCCESSFUL
    assert task.return_value == {"run": run.pk, "attempt": 1, "status": "succeeded"}


def test_a_trainer_error_fails_the_run_with_its_message(make_run, settings):
    settings.GRIDACE_TRAINER = "tests.webapp.fakes.failing_train"
    run = make_run()
    work_off_queue()
    run = TrainingRun.objects.get(pk=run.pk)
    assert run.status == RunStatus.FAILED
    assert run.error == "RuntimeError: the grid diverged at step 1 (BackendError)"
    assert DBTaskResult.objects.get(id=run.task_id).status == TaskResultStatus.FAILED


def test_cancel_stops_the_trainer_at_its_next_step_and_resume_finishes_the_run(
    make_run, engineer, monkeypatch
):
    monkeypatch.setenv("FAKE_TRAIN_STEP_SECONDS", "0.004")
    run = make_run()

    def cancel_once_running() -> None:
        for _ in range(200):
            current = TrainingRun.objects.get(pk=run.pk)
            if current.status == RunStatus.RUNNING and current.progress_step >= 50:
                run_cancel(run=current, user=engineer)
                return
            threading.Event().wait(0.02)

    canceller = threading.Thread(target=cancel_once_running)
    canceller.start()
    work_off_queue()
    canceller.join()

    run = TrainingRun.objects.get(pk=run.pk)
    assert run.status == RunStatus.CANCELLED
    stopped_at = run.checkpoints.order_by("-id").first().step
    assert 50 <= stopped_at < 300  # stopped early, and checkpointed where it stopped

    run_resume(run=run, user=engineer)
    work_off_queue()
    run = TrainingRun.objects.get(pk=run.pk)
    assert (run.status, run.attempt, run.progress_step) == (RunStatus.SUCCEEDED, 2, 300)
    steps = list(MetricPoint.objects.filter(run=run).order_by("step").values_list("step", flat=True))
    assert steps == [50, 100, 150, 200, 250, 300]  # no step drawn twice
    assert Refinement.objects.filter(run=run).count() == 6  # re-reported ids are not duplicated


def test_evaluation_task_stores_the_run_and_every_baseline(make_run, engineer):
    run = make_run()
    work_off_queue()
    evaluation = evaluation_request(
        run=TrainingRun.objects.get(pk=run.pk), user=engineer, split="test", nb_episode=3
    )
    work_off_queue()
    evaluation.refresh_from_db()
    assert evaluation.status == EvaluationStatus.SUCCEEDED
    assert set(evaluation.results) == {"ace", "do-nothing", "reconnect", "greedy"}
    assert evaluation.results["ace"]["agent"] == f"sac:{run.out_dir}/checkpoint.pt"
    assert evaluation.results["greedy"]["survival_mean"] == 0.6
    page = client_for(engineer).get(reverse("training:run_detail", args=[run.pk])).content.decode()
    table = page[page.index(f'id="evaluation-{evaluation.pk}"') :]
    assert (
        table.index("this run") < table.index("greedy") < table.index("reconnect") < table.index("do-nothing")
    )
