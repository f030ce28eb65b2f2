"""Run lifecycle services: launch, cancel, resume, the worker's claim/heartbeat/finish, deploy,
evaluation requests. Each refusal says why and leaves nothing half-written."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django_tasks_db.models import DBTaskResult

from ace_core.errors import ConfigError
from tests.webapp.conftest import tiny_config
from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.jobs.services import job_heartbeat
from webapp.training.errors import RunStateError
from webapp.training.models import Checkpoint, Deployment, MetricPoint, TrainingRun
from webapp.training.services.deployment import checkpoint_deploy
from webapp.training.services.evaluations import evaluation_request
from webapp.training.services.runs import (
    run_cancel,
    run_fail,
    run_finish,
    run_launch,
    run_release,
    run_resume,
    run_start,
)
from webapp.training.worker.evaluation import agent_spec_for

pytestmark = pytest.mark.django_db


def test_launch_creates_a_queued_run_its_task_and_an_audit_entry(engineer):
    run = run_launch(config=tiny_config(seed=7), launched_by=engineer, label="first")

    assert run.status == JobStatus.QUEUED
    assert run.config["seed"] == 7 and run.env == "l2rpn_case14_sandbox" and run.total_steps == 300
    assert run.out_dir.endswith(f"run-{run.pk}")
    task = DBTaskResult.objects.get(id=run.task_id)
    assert task.queue_name == "training"
    assert task.args_kwargs["kwargs"] == {"run_id": run.pk, "attempt": 1}
    entry = AuditEntry.objects.get(action="run.launch")
    assert entry.actor == engineer and entry.after["config"]["seed"] == 7


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"env": "no_such_grid"}, "unknown env 'no_such_grid'"),
        ({"steps": -1}, "steps=-1 is out of range"),
        ({"steps": 0}, "steps=0 is a clone-only run"),
        ({"gamma": 1.5}, "gamma=1.5 is out of range"),
        ({"head": "wide"}, "head='wide' is not accepted"),
        ({"learning_starts": 8, "batch_size": 32}, "learning_starts (8) must be at least batch_size (32)"),
    ],
)
def test_launch_refuses_a_bad_config_and_writes_nothing(engineer, overrides, named):
    with pytest.raises(ConfigError, match=named.replace("(", r"\(").replace(")", r"\)")):
        run_launch(config=tiny_config(**overrides), launched_by=engineer)
    assert not TrainingRun.objects.exists()
    assert not DBTaskResult.objects.exists()
    assert not AuditEntry.objects.exists()


def test_cancel_of_a_queued_run_is_immediate(make_run, engineer):
    run = run_cancel(run=make_run(), user=engineer)
    assert run.status == JobStatus.CANCELLED and run.finished_at is not None
    assert AuditEntry.objects.filter(
        action="run.cancel", before__status="queued", after__status="cancelled"
    ).exists()


def test_cancel_of_a_running_run_asks_the_worker_to_stop(make_run, engineer):
    run = make_run()
    run_start(run_id=run.pk, attempt=1, worker_token="t1")
    run = run_cancel(run=run, user=engineer)
    assert run.status == JobStatus.RUNNING and run.cancel_requested
    assert job_heartbeat(model=TrainingRun, job_id=run.pk, worker_token="t1").cancel_requested
    with pytest.raises(RunStateError, match="already stopping"):
        run_cancel(run=run, user=engineer)
    assert run_finish(run_id=run.pk, worker_token="t1").status == JobStatus.CANCELLED


def test_cancel_of_a_finished_run_is_refused(make_run, engineer):
    run = make_run()
    run_start(run_id=run.pk, attempt=1, worker_token="t1")
    run_finish(run_id=run.pk, worker_token="t1")
    with pytest.raises(
        RunStateError, match=f"run {run.pk} is succeeded; only queued or running runs can be cancelled"
    ):
        run_cancel(run=run, user=engineer)
    assert not AuditEntry.objects.filter(action="run.cancel").exists()


def test_start_refuses_stale_tasks(make_run, engineer):
    run = make_run()
    assert run_start(run_id=run.pk, attempt=2, worker_token="t") is None  # not this attempt
    run_cancel(run=run, user=engineer)
    assert run_start(run_id=run.pk, attempt=1, worker_token="t") is None  # cancelled while queued


def test_a_worker_that_lost_the_run_cannot_finish_or_fail_it(make_run):
    run = make_run()
    run_start(run_id=run.pk, attempt=1, worker_token="owner")
    assert job_heartbeat(model=TrainingRun, job_id=run.pk, worker_token="intruder").owned is False
    assert run_finish(run_id=run.pk, worker_token="intruder") is None
    assert run_fail(run_id=run.pk, worker_token="intruder", error="x") is None
    assert TrainingRun.objects.get(pk=run.pk).status == JobStatus.RUNNING


def test_fail_records_the_reason(make_run):
    run = make_run()
    run_start(run_id=run.pk, attempt=1, worker_token="t")
    run = run_fail(run_id=run.pk, worker_token="t", error="RuntimeError: diverged")
    assert run.status == JobStatus.FAILED and run.error == "RuntimeError: diverged"


def _run_with_checkpoint(make_run, step: int = 100) -> TrainingRun:
    run = make_run()
    run_start(run_id=run.pk, attempt=1, worker_token="t")
    path = Path(run.out_dir) / "checkpoint.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'{{"step": {step}}}')
    Checkpoint.objects.create(run=run, step=step, path=str(path))
    MetricPoint.objects.create(run=run, step=step, values={"a": 1.0})
    MetricPoint.objects.create(run=run, step=step + 50, values={"a": 2.0})
    return run


def test_resume_queues_the_next_attempt_from_the_last_checkpoint(make_run, engineer):
    run = _run_with_checkpoint(make_run)
    run_cancel(run=run, user=engineer)
    run_finish(run_id=run.pk, worker_token="t")
    run = run_resume(run=run, user=engineer)
    assert (run.status, run.attempt, run.resume) == (JobStatus.QUEUED, 2, True)
    assert DBTaskResult.objects.get(id=run.task_id).args_kwargs["kwargs"] == {"run_id": run.pk, "attempt": 2}
    assert AuditEntry.objects.get(action="run.resume").after["from_step"] == 100
    # The new attempt rolls the charts back to the checkpoint.
    run = run_start(run_id=run.pk, attempt=2, worker_token="t2")
    assert run.progress_step == 100
    assert list(MetricPoint.objects.filter(run=run).values_list("step", flat=True)) == [100]


def test_resume_refuses_active_runs_and_runs_without_checkpoint(make_run, engineer):
    run = make_run()
    with pytest.raises(RunStateError, match="only cancelled or failed runs can be resumed"):
        run_resume(run=run, user=engineer)
    run_cancel(run=run, user=engineer)
    with pytest.raises(RunStateError, match="wrote no checkpoint"):
        run_resume(run=run, user=engineer)
    assert TrainingRun.objects.get(pk=run.pk).status == JobStatus.CANCELLED


def test_release_on_worker_shutdown_queues_the_run_again(make_run):
    run = _run_with_checkpoint(make_run)
    run = run_release(run_id=run.pk, worker_token="t")
    assert (run.status, run.attempt, run.resume) == (JobStatus.QUEUED, 2, True)
    assert "worker shut down" in run.error


def test_deploy_copies_the_last_checkpoint_of_a_succeeded_run(make_run, engineer, settings):
    run = _run_with_checkpoint(make_run)
    checkpoint = run.checkpoints.get()
    with pytest.raises(RunStateError, match="only checkpoints of succeeded runs can be deployed"):
        checkpoint_deploy(checkpoint=checkpoint, user=engineer)
    run_finish(run_id=run.pk, worker_token="t")
    deployment = checkpoint_deploy(checkpoint=checkpoint, user=engineer, comment="best so far")
    assert Path(deployment.path).read_text() == '{"step": 100}'
    assert Path(deployment.path).parent == Path(settings.GRIDACE_RUNS_DIR) / "deployed"
    assert AuditEntry.objects.get(action="checkpoint.deploy").after["deployed_checkpoint"] == checkpoint.pk


def test_deploy_copies_the_best_policy_of_a_run_that_validated(make_run, engineer):
    run = _run_with_checkpoint(make_run)
    checkpoint = run.checkpoints.get()
    Path(checkpoint.path).with_name("best.pt").write_text('{"best": 40}')
    run_finish(run_id=run.pk, worker_token="t")
    deployment = checkpoint_deploy(checkpoint=checkpoint, user=engineer)
    assert Path(deployment.path).read_text() == '{"best": 40}'
    assert Path(deployment.path).name == f"run-{run.pk}-step-100-best.pt"


def test_an_evaluation_plays_the_policy_a_deployment_would_serve(make_run, engineer):
    run = _run_with_checkpoint(make_run)
    checkpoint = run.checkpoints.get()
    run_finish(run_id=run.pk, worker_token="t")
    evaluation = evaluation_request(run=run, user=engineer, split="test", nb_episode=1)
    assert agent_spec_for(evaluation) == f"sac:{checkpoint.path}"  # no validation: the checkpoint
    Path(checkpoint.path).with_name("best.pt").write_text("{}")
    assert agent_spec_for(evaluation) == f"sac:{Path(checkpoint.path).with_name('best.pt')}"


def test_deploy_refuses_an_overwritten_checkpoint(make_run, engineer):
    run = _run_with_checkpoint(make_run)
    old = run.checkpoints.get()
    Checkpoint.objects.create(run=run, step=200, path=old.path)
    run_finish(run_id=run.pk, worker_token="t")
    with pytest.raises(RunStateError, match="was overwritten; only the run's last checkpoint .step 200."):
        checkpoint_deploy(checkpoint=old, user=engineer)
    assert not Deployment.objects.exists()


def test_evaluation_request_checks_the_run_and_its_inputs(make_run, engineer):
    run = _run_with_checkpoint(make_run)
    with pytest.raises(RunStateError, match="only succeeded runs can be evaluated"):
        evaluation_request(run=run, user=engineer, split="test", nb_episode=2)
    run_finish(run_id=run.pk, worker_token="t")
    with pytest.raises(RunStateError, match="split 'train' is not accepted; choose one of: validation, test"):
        evaluation_request(run=run, user=engineer, split="train", nb_episode=2)
    with pytest.raises(RunStateError, match="nb_episode=0 is out of range; accepted: 1 to 100"):
        evaluation_request(run=run, user=engineer, split="test", nb_episode=0)
    evaluation = evaluation_request(run=run, user=engineer, split="test", nb_episode=2)
    assert DBTaskResult.objects.get(id=evaluation.task_id).task_path.endswith("evaluate_run")
    with pytest.raises(RunStateError, match="already has an evaluation in progress"):
        evaluation_request(run=run, user=engineer, split="test", nb_episode=2)


def test_heartbeat_stamps_only_the_owner(make_run):
    run = run_start(run_id=make_run().pk, attempt=1, worker_token="t")
    long_ago = run.heartbeat_at - timedelta(minutes=5)
    TrainingRun.objects.filter(pk=run.pk).update(heartbeat_at=long_ago)
    assert job_heartbeat(model=TrainingRun, job_id=run.pk, worker_token="other").owned is False
    assert TrainingRun.objects.get(pk=run.pk).heartbeat_at == long_ago
    assert job_heartbeat(model=TrainingRun, job_id=run.pk, worker_token="t").owned
    assert TrainingRun.objects.get(pk=run.pk).heartbeat_at > long_ago


def test_launch_run_command_types_values_and_refuses_bad_ones(engineer, capsys):
    from django.core.management import CommandError, call_command

    call_command(
        "launch_run",
        "--user",
        engineer.username,
        "--set",
        "steps=200",
        "--set",
        "actor=off",
        "--set",
        "learning_starts=32",
        "--set",
        "batch_size=32",
    )
    run = TrainingRun.objects.get()
    assert (run.total_steps, run.config["actor"]) == (200, False)
    for assignment, message in [
        ("gamma=2", "gamma=2.0 is out of range; accepted: 0.0 to 1.0"),
        ("gama=0.9", "unknown config field 'gama'"),
        ("steps=lots", "steps='lots' is not a valid int"),
        ("actor=maybe", "actor='maybe' is not a valid bool"),
    ]:
        with pytest.raises(CommandError, match=message):
            call_command("launch_run", "--user", engineer.username, "--set", assignment)
    with pytest.raises(CommandError, match="no user named 'ghost'"):
        call_command("launch_run", "--user", "ghost")
