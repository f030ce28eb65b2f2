"""The training and evaluation tasks, run by ``manage.py db_worker --batch`` in this process."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from tests.webapp.conftest import client_for, local_llm
from webapp.jobs.models import JobStatus
from webapp.review.models import Refinement, RewardShaping
from webapp.training.models import (
    Checkpoint,
    EpisodeRecord,
    Evaluation,
    FinetuneRecord,
    MetricPoint,
    TrainingRun,
)
from webapp.training.services.evaluations import evaluation_request
from webapp.training.services.runs import run_cancel, run_resume
from webapp.training.worker.evaluation import run_agents

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


def _metrics(run: TrainingRun) -> list[MetricPoint]:
    return list(MetricPoint.objects.filter(run=run).order_by("step"))


def test_worker_runs_a_run_and_stores_every_event(make_run, tiny_llm_dir):
    run = make_run(**local_llm(tiny_llm_dir))  # the tiny local model: actor, critic and LoRA rounds
    work_off_queue()

    run = TrainingRun.objects.get(pk=run.pk)
    assert run.status == JobStatus.SUCCEEDED, run.error
    assert run.progress_step == 300 and run.started_at and run.finished_at and run.heartbeat_at
    points = _metrics(run)
    assert [p.step for p in points] == [50, 100, 150, 200, 250, 300]
    last = points[-1].values
    summary = json.loads((Path(run.out_dir) / "summary.json").read_text())
    assert (summary["steps"], summary["stopped"]) == (300, False)
    assert last["charts/updates"] == summary["updates"] > 0  # SAC learnt
    assert EpisodeRecord.objects.filter(run=run).count() == summary["episodes"] == last["charts/episodes"] > 0
    assert list(Checkpoint.objects.filter(run=run).values_list("step", flat=True)) == [100, 200, 300, 300]

    refinements = Refinement.objects.filter(run=run)
    assert refinements.count() == last["llm/refinements"] > 0
    assert refinements.filter(accepted_by_simulation=True).count() == last["llm/accepted"] > 0
    assert set(refinements.values_list("model", flat=True)) == {tiny_llm_dir.name}
    for refinement in refinements:
        assert 1 <= refinement.rounds.count() <= 3 and refinement.state_text and refinement.rl_action_text
        if refinement.accepted_by_simulation:
            assert refinement.llm_reward > refinement.rl_reward
    # a LoRA round every 2 accepted refinements, each with its adapter on disk
    finetunes = FinetuneRecord.objects.filter(run=run)
    assert finetunes.count() == last["llm/accepted"] // 2 == last["llm/finetunes"]
    assert all(Path(f.path).is_dir() and not f.skipped_reason for f in finetunes)
    # The critic read trajectories (two scored questions each: which step, which adjustment) and
    # every adjustment it applied to the replay buffer is stored with its rationale.
    critic_records = [
        json.loads(line) for line in (Path(run.out_dir) / "critic.jsonl").read_text().splitlines()
    ]
    assert 2 * len(critic_records) == last["llm/critic_calls"] > 0
    shapings = RewardShaping.objects.filter(run=run)
    assert shapings.count() == last["llm/shapings"] == sum(len(r["applied"]) for r in critic_records) > 0
    assert all(s.adjustment in (-0.2, -0.1, 0.1, 0.2) and "picked among" in s.rationale for s in shapings)
    task = DBTaskResult.objects.get(id=run.task_id)
    assert task.status == TaskResultStatus.SUCCESSFUL
    assert task.return_value == {"run": run.pk, "attempt": 1, "status": "succeeded"}


def test_a_trainer_error_fails_the_run_with_its_message(make_run, tmp_path):
    # Launching checks that the action subset file exists; only the trainer, on the grid, finds
    # that an index in it is no action of this grid (a list written for the 36-bus grid, say).
    subset = tmp_path / "actions.txt"
    subset.write_text("60\n66000\n")
    run = make_run(action_subset=str(subset))
    work_off_queue()
    run = TrainingRun.objects.get(pk=run.pk)
    assert run.status == JobStatus.FAILED
    assert run.error.startswith("ActionIndexError: ") and "66000" in run.error, run.error
    assert DBTaskResult.objects.get(id=run.task_id).status == TaskResultStatus.FAILED


def test_cancel_stops_the_trainer_at_its_next_step_and_resume_finishes_the_run(make_run, engineer):
    run = make_run()

    def cancel_once_running() -> None:
        for _ in range(1000):
            current = TrainingRun.objects.get(pk=run.pk)
            if current.status == JobStatus.RUNNING and current.progress_step >= 50:
                run_cancel(run=current, user=engineer)
                return
            threading.Event().wait(0.02)

    canceller = threading.Thread(target=cancel_once_running)
    canceller.start()
    work_off_queue()
    canceller.join()

    run = TrainingRun.objects.get(pk=run.pk)
    assert run.status == JobStatus.CANCELLED
    stopped_at = run.checkpoints.order_by("-id").first().step
    assert 50 <= stopped_at < 300  # stopped early, and checkpointed where it stopped
    assert json.loads((Path(run.out_dir) / "summary.json").read_text())["stopped"] is True

    run_resume(run=run, user=engineer)
    work_off_queue()
    run = TrainingRun.objects.get(pk=run.pk)
    assert (run.status, run.attempt, run.progress_step) == (JobStatus.SUCCEEDED, 2, 300)
    points = _metrics(run)
    assert [p.step for p in points] == [50, 100, 150, 200, 250, 300]  # no step drawn twice
    # the resumed trainer numbers refinements on from the checkpoint: none lost, none twice
    count = int(points[-1].values["llm/refinements"])
    ids = sorted(Refinement.objects.filter(run=run).values_list("refinement_id", flat=True))
    assert count > 0 and ids == [f"r{n:05d}" for n in range(1, count + 1)]


def test_evaluation_task_stores_the_run_and_every_baseline(make_run, engineer, settings):
    settings.GRIDACE_BASELINES = ["do-nothing", "greedy"]  # the real evaluator: ~5 s an agent here
    run = make_run(steps=100)  # a checkpoint is all an evaluation needs
    work_off_queue()
    evaluation = evaluation_request(
        run=TrainingRun.objects.get(pk=run.pk), user=engineer, split="test", nb_episode=1
    )
    work_off_queue()
    evaluation.refresh_from_db()
    assert evaluation.status == JobStatus.SUCCEEDED, evaluation.error
    results = evaluation.results
    assert set(results) == {"ace", "ace-checked", "do-nothing", "greedy"}
    assert results["ace"]["agent"] == f"sac:{run.out_dir}/checkpoint.pt"
    # the policy as deployed: its top 50 checked by simulation, the first safe one played
    assert results["ace-checked"]["agent"] == f"sac-checked:{run.out_dir}/checkpoint.pt:50:stop=0.95:expert"
    assert results["ace-checked"]["simulate_calls_per_step"] >= 0
    for name, result in results.items():
        [episode] = result["episodes"]  # the sandbox's one test day
        assert result["survival_mean"] == episode["steps_survived"] / episode["max_steps"], name
        # grid2op's EpisodeData of each agent, beside its report
        report = Path(run.out_dir) / "evaluations" / str(evaluation.pk) / name / "report.json"
        assert json.loads(report.read_text())["episodes"] == result["episodes"]
    page = client_for(engineer).get(reverse("training:run_detail", args=[run.pk])).content.decode()
    table = page[page.index(f'id="evaluation-{evaluation.pk}"') :]
    names = ["this run", "this run, checked by simulation", "do-nothing", "greedy"]
    rows = sorted(names, key=lambda name: table.index(f"<td>{name}</td>"))
    assert rows[:2] == names[:2]  # the run first, plain then checked, then the baselines, best survival first
    survival = [results[name]["survival_mean"] for name in rows[2:]]
    assert survival == sorted(survival, reverse=True)


def test_an_evaluation_checks_each_grid_policy_as_that_grid_deploys_it(settings, tmp_path):
    checkpoint = Checkpoint(path=str(tmp_path / "checkpoint.pt"))

    def agents(env: str) -> dict[str, str]:
        return run_agents(Evaluation(run=TrainingRun(env=env), checkpoint=checkpoint))

    def checked(env: str) -> str | None:
        return agents(env).get("ace-checked")

    settings.GRIDACE_CHECKED_AGENT = None  # unset: each grid's validated check
    assert (
        checked("l2rpn_neurips_2020_track1")
        == f"sac-checked:{checkpoint.path}:50:stop=0.9:act=0.95:expert=30:revert:flex=4:release=0.85"
    )
    assert checked("rte_case14_realistic") == f"sac-checked:{checkpoint.path}:10:stop=0.95:expert=10"
    assert checked("l2rpn_case14_sandbox") == f"sac-checked:{checkpoint.path}:50:stop=0.95:expert"
    # the plain policy acts from its grid's validated max rho, or its run's threshold
    assert agents("l2rpn_neurips_2020_track1")["ace"] == f"sac:{checkpoint.path}:act=1.0"
    assert agents("rte_case14_realistic")["ace"] == f"sac:{checkpoint.path}"
    settings.GRIDACE_CHECKED_AGENT = "10:stop=1.0:expert"  # set: every grid
    assert checked("l2rpn_neurips_2020_track1") == f"sac-checked:{checkpoint.path}:10:stop=1.0:expert"
    settings.GRIDACE_CHECKED_AGENT = ""  # empty: the plain policy only
    assert checked("l2rpn_neurips_2020_track1") is None
