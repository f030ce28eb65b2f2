"""``manage.py demo --live-policy PATH``: a policy trained beforehand (here the 36-bus grid's, with
random weights: the same files and loading code as a behaviour-cloned one) is recorded as a run,
deployed in place of the demo's own, and played by the live session on its env at a test day; a
path that is not a policy stops the demo with one clear line before anything starts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.webapp.operations.conftest import run_feed
from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.operations.models import LiveSession, SessionStep
from webapp.training.models import Deployment, TrainingRun
from webapp.training.services import demo_live as demo

ROOT = Path(__file__).resolve().parents[3]
ENV_36 = "l2rpn_neurips_2020_track1"


@pytest.fixture(scope="module")
def policy_36(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory holding a 36-bus policy, as ``pretrain --out`` leaves one."""
    from ace_core.live import untrained_policy

    folder = tmp_path_factory.mktemp("bc36")
    untrained_policy(ENV_36, folder / "checkpoint.pt", hidden=32)
    return folder


@pytest.fixture
def demo_users() -> None:
    call_command("seed_demo", password="demo-password-123")


def _test_day(env_name: str) -> str:
    from ace_core.grid.envs import make_env
    from ace_core.grid.scenarios import scenarios

    return scenarios(make_env(env_name), "test")[0].name


@pytest.mark.django_db
def test_a_policy_trained_beforehand_replaces_the_deployed_one_and_plays_a_test_day(demo_users, policy_36):
    first = demo.live_demo_setup(policy_steps=0, log=lambda _: None)  # the demo's own 14-bus policy
    assert first.scenario_index == 4 and first.scenario_name == _test_day("rte_case14_realistic")
    printed: list[str] = []

    session = demo.live_demo_setup(
        policy_steps=0, policy=demo.live_policy_check(str(policy_36)), log=printed.append
    )

    deployment = Deployment.objects.order_by("-id").first()
    run = deployment.checkpoint.run
    assert Deployment.objects.count() == 2 and TrainingRun.objects.count() == 2
    assert (
        run.status == JobStatus.SUCCEEDED
        and run.env == ENV_36
        and run.label == f"demo live policy ({policy_36})"
    )
    assert (
        Path(run.out_dir).parent == Path(deployment.path).parent.parent
    )  # a folder of its own under the runs
    assert Path(deployment.path).read_bytes() == (policy_36 / "checkpoint.pt").read_bytes()
    assert printed == [f"live console's policy: {policy_36} ({ENV_36})"]
    launch = AuditEntry.objects.filter(action="run.launch").order_by("-id").first()
    assert launch.after["source"] == str((policy_36 / "checkpoint.pt").resolve())
    assert AuditEntry.objects.filter(action="checkpoint.deploy").count() == 2

    # the 14-bus session is stopped; the new one plays the 36-bus grid's first test day
    first.refresh_from_db()
    assert first.status == "stopped"
    assert (session.env, session.deployment, session.policy_path) == (ENV_36, deployment, deployment.path)
    assert session.scenario_name == _test_day(ENV_36) and session.status == "running"

    # the live feed steps the 36-bus grid with the policy's recommendations
    run_feed(session, 1)
    session.refresh_from_db()
    assert session.current_step == 1 and session.status == "running"
    steps = list(SessionStep.objects.filter(session=session).order_by("step"))
    assert len(steps) == 2 and all(step.assessment["reference"]["description"] for step in steps)

    # the same policy again (the demo restarted with the same flag): nothing new
    again = demo.live_demo_setup(
        policy_steps=0, policy=demo.live_policy_check(str(policy_36)), log=printed.append
    )
    assert again == session and Deployment.objects.count() == 2 and TrainingRun.objects.count() == 2
    # without the flag, the demo keeps it
    assert demo.live_demo_setup(policy_steps=0, log=printed.append) == session
    assert LiveSession.objects.filter(status__in=["running", "paused"]).count() == 1


def test_a_run_directory_offers_its_best_policy_first(tmp_path, policy_36):
    (tmp_path / "checkpoint.pt").write_bytes(b"the last state, not the policy asked for")
    (tmp_path / "best.pt").write_bytes((policy_36 / "checkpoint.pt").read_bytes())
    policy = demo.live_policy_check(str(tmp_path))
    assert policy.path == (tmp_path / "best.pt").resolve() and policy.config.env == ENV_36


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda tmp: tmp / "nowhere", "no such file or directory; give a run directory or a checkpoint file"),
        (lambda tmp: tmp, "the directory holds no best.pt or checkpoint.pt"),
        (
            lambda tmp: tmp / "broken.pt",
            "the policy does not load: checkpoint {path} is corrupt or not a GridACE checkpoint",
        ),
    ],
    ids=["missing", "empty-directory", "not-a-checkpoint"],
)
def test_a_path_that_is_not_a_policy_is_refused_in_one_line(tmp_path, make, expected):
    (tmp_path / "broken.pt").write_bytes(b"not a torch file")
    path = make(tmp_path)
    with pytest.raises(CommandError) as refused:
        demo.live_policy_check(str(path))
    message = str(refused.value)
    assert message.startswith(f"--live-policy {path}: ") and "\n" not in message
    assert expected.format(path=path) in message


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _demo(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    clean.update(GRIDACE_VAR_DIR=str(tmp_path / "var"), GRIDACE_DEMO_PASSWORD="demo-password-123", **env)
    return subprocess.run(
        [sys.executable, "manage.py", "demo", "--port", str(_free_port()), *args],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_bad_live_policy_stops_the_demo_before_anything_starts(tmp_path):
    result = _demo(tmp_path, "--live-policy", str(tmp_path / "runs" / "bc36"))
    assert result.returncode != 0
    assert f"--live-policy {tmp_path / 'runs' / 'bc36'}: no such file or directory" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "var" / "gridace.sqlite3").exists()  # no database, hence no users nor server
    assert not (tmp_path / "var" / "runs").exists()


def test_a_live_policy_without_a_live_session_is_refused(tmp_path):
    result = _demo(tmp_path, "--no-live", "--live-policy", "runs/bc36")
    assert result.returncode != 0
    assert "--live-policy deploys a policy for the live session and --no-live starts none" in result.stderr
    assert not (tmp_path / "var" / "gridace.sqlite3").exists()


def test_the_demo_checks_with_the_policy_named_by_its_environment_variable(tmp_path, policy_36):
    """``demo --check`` with ``GRIDACE_DEMO_LIVE_POLICY``: the servers, the worker and the live feed
    start, and the feed steps the 36-bus session."""
    result = _demo(tmp_path, "--check", "--no-run", GRIDACE_DEMO_LIVE_POLICY=str(policy_36))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"live console's policy: {policy_36} ({ENV_36})" in result.stdout
    assert f"({ENV_36}, {_test_day(ENV_36)}, one step every 2 s)" in result.stdout
    assert "check passed" in result.stdout
