"""``manage.py demo``'s set-up of the live console (no servers started here): a policy deployed
(trained briefly, or freshly initialised) and one live session of a 14-bus scenario at one step
every 2 s, which the live feed steps; running the set-up again makes no copies."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from tests.webapp.operations.conftest import run_feed
from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.operations.models import LiveSession, SessionStep
from webapp.operations.services import session_control
from webapp.training.models import Checkpoint, Deployment, EpisodeRecord, MetricPoint, TrainingRun
from webapp.training.services import demo_live as demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_users() -> None:
    call_command("seed_demo", password="demo-password-123")


def _counts() -> tuple[int, int, int, int]:
    return (
        TrainingRun.objects.count(),
        Checkpoint.objects.count(),
        Deployment.objects.count(),
        LiveSession.objects.count(),
    )


def test_the_demo_deploys_a_policy_and_starts_one_live_session_once(demo_users):
    session = demo.live_demo_setup(policy_steps=0, log=lambda _: None)

    deployment = Deployment.objects.get()
    run = deployment.checkpoint.run
    assert run.status == JobStatus.SUCCEEDED and run.label == "demo live policy (untrained)"
    assert run.env == "rte_case14_realistic" and Path(deployment.path).is_file()
    assert (session.label, session.env, session.scenario_index, session.speed_seconds, session.k) == (
        "demo",
        "rte_case14_realistic",
        4,  # the first test day: no policy trained on it
        2.0,
        3,
    )
    assert session.status == "running" and session.policy_path == deployment.path
    assert session.deployment == deployment and session.created_by.username == "engineer"
    assert {"run.launch", "checkpoint.deploy", "live.session.start"} <= set(
        AuditEntry.objects.values_list("action", flat=True)
    )

    # the live feed the demo starts steps it with the deployed policy's recommendations
    run_feed(session, 1)
    session.refresh_from_db()
    assert session.current_step == 1 and session.status == "running"
    steps = list(SessionStep.objects.filter(session=session).order_by("step"))
    assert len(steps) == 2
    # every step is assessed against doing nothing (cards only where an action beats it)
    assert all(step.assessment["reference"]["description"] for step in steps)
    assert all(rec.step in (0, 1) for rec in session.recommendations.all())

    # running the demo again reuses all of it (a restarted live feed resumes the session)
    before = _counts()
    assert demo.live_demo_setup(policy_steps=0, log=lambda _: None) == session
    assert _counts() == before

    # once the session has ended, the next demo starts a fresh one with the same policy
    engineer = get_user_model().objects.get(username="engineer")
    session_control(session_id=session.pk, user=engineer, command="stop")
    again = demo.live_demo_setup(policy_steps=0, log=lambda _: None)
    assert again.pk != session.pk and again.status == "running" and again.deployment == deployment
    assert LiveSession.objects.filter(status__in=["running", "paused"]).count() == 1
    assert Deployment.objects.count() == 1 and TrainingRun.objects.count() == 1


def test_the_demo_trains_the_live_policy_when_none_is_deployed(demo_users, monkeypatch):
    monkeypatch.setitem(demo.LIVE_POLICY_RUN, "log_every", 100)
    monkeypatch.setitem(demo.LIVE_POLICY_RUN, "checkpoint_every", 300)
    printed: list[str] = []
    engineer = get_user_model().objects.get(username="engineer")
    deployment = demo.live_policy_ensure(engineer=engineer, steps=300, log=printed.append)

    run = deployment.checkpoint.run
    assert run.label == "demo live policy" and run.status == JobStatus.SUCCEEDED
    assert run.total_steps == 300 and run.progress_step == 300 and run.config["llm"] == "none"
    assert deployment.checkpoint.step == 300 and Path(deployment.path).is_file()
    assert MetricPoint.objects.filter(run=run).count() == 3  # charts on the run's page
    assert EpisodeRecord.objects.filter(run=run).exists()
    assert "300 steps of SAC on rte_case14_realistic" in printed[0]
    # deployed already: nothing is trained again
    assert demo.live_policy_ensure(engineer=engineer, steps=300, log=printed.append) == deployment
    assert TrainingRun.objects.count() == 1 and len(printed) == 1


def test_the_demo_keeps_the_policy_an_engineer_deployed(demo_users, make_run, tmp_path):
    from ace_core.live import untrained_policy
    from webapp.training.services.deployment import checkpoint_deploy

    engineer = get_user_model().objects.get(username="engineer")
    run = make_run(env="l2rpn_case14_sandbox")
    run.status = JobStatus.SUCCEEDED
    run.save(update_fields=["status"])
    policy = untrained_policy("l2rpn_case14_sandbox", tmp_path / "policy.pt", hidden=32)
    deployed = checkpoint_deploy(
        checkpoint=Checkpoint.objects.create(run=run, step=10, path=str(policy)), user=engineer
    )
    session = demo.live_demo_setup(policy_steps=300, log=lambda _: None)
    assert Deployment.objects.get() == deployed and TrainingRun.objects.count() == 1
    assert session.env == "l2rpn_case14_sandbox" and session.scenario_index == 4  # its first test day
