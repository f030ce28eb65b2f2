"""The example client in docs/ against a running server: it follows a session fed by the real
feed worker and accepts the top recommendation, which the database then holds; and it runs the
whole loop (launch, wait, evaluate, deploy through the guard, start a session, read its
recommendations) with the real workers behind the server."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection

from tests.webapp.operations.conftest import run_feed
from tests.webapp.training.test_tasks import work_off_queue
from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.operations.models import Decision, DecisionKind, LiveSession
from webapp.operations.worker.feed import FeedWorker
from webapp.training.models import TrainingRun
from webapp.training.selectors.deployments import deploy_check, deployment_current

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.django_db(transaction=True)
def test_the_example_client_accepts_the_top_recommendation(live_server, operator, make_session, make_token):
    session = make_session()
    run_feed(session, 2)
    session.refresh_from_db()
    top = session.recommendations.filter(step=session.current_step, error="").order_by("rank").first()
    out = subprocess.run(
        [sys.executable, "docs/api_client.py", "--url", live_server.url, "--token", make_token(operator)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert f"following session {session.pk}" in out.stdout and "accepted: decision" in out.stdout
    decision = Decision.objects.get(session=session)
    assert (decision.kind, decision.recommendation_id, decision.step) == (
        DecisionKind.ACCEPT,
        top.pk,
        session.current_step,
    )
    assert decision.comment == "accepted by the example client"


OVERRIDE = "a drill of the whole loop from the example client"


@pytest.mark.django_db(transaction=True)
def test_the_example_client_runs_the_whole_loop(live_server, engineer, make_token, tmp_path):
    """The client in a process of its own; in this one, the training queue's worker (between the
    client's polls) and a live feed worker (in a thread), as a deployment runs them."""
    feed = FeedWorker(max_sessions=1)

    def feeding() -> None:
        try:
            feed.run()
        finally:
            connection.close()

    thread = threading.Thread(target=feeding)
    thread.start()
    output = tmp_path / "client.txt"
    settings = ("steps=300", "checkpoint_every=100", "log_every=50", "episode_length=20")
    command = [
        sys.executable,
        "docs/api_client.py",
        "--url",
        live_server.url,
        "--token",
        make_token(engineer),
    ]
    command += ["--loop", *[arg for setting in settings for arg in ("--config", setting)]]
    command += ["--episodes", "1", "--poll-jobs", "0.5", "--override-reason", OVERRIDE]
    try:
        with output.open("w") as out:
            client = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True)
            while client.poll() is None:
                work_off_queue()  # the run, then its evaluation
                time.sleep(0.2)
    finally:
        feed.stopping.set()
        thread.join()
    text = output.read_text()
    assert client.returncode == 0, text

    run = TrainingRun.objects.get()
    assert (run.status, run.label, run.config["steps"]) == (JobStatus.SUCCEEDED, "example client loop", 300)
    evaluation = run.evaluations.get()
    assert (evaluation.status, evaluation.split, evaluation.nb_episode) == (JobStatus.SUCCEEDED, "test", 1)
    # its test days cut as its training days were (another cut's test days can hold training days)
    assert {result["episode_length"] for result in evaluation.results.values()} == {20}
    deployment = deployment_current()
    assert deployment.checkpoint.run == run
    # the override only when the guard refused
    if deploy_check(checkpoint=deployment.checkpoint).passed:
        assert (deployment.evaluation, deployment.override_reason) == (evaluation, "")
    else:
        assert deployment.override_reason == OVERRIDE
    session = LiveSession.objects.get()
    assert (session.deployment, session.created_by, session.scenario_index) == (deployment, engineer, 0)
    actions = set(AuditEntry.objects.filter(actor=engineer).values_list("action", flat=True))
    assert {"run.launch", "run.evaluate", "checkpoint.deploy", "live.session.start", "api.request"} <= actions

    assert f"run {run.pk} launched on l2rpn_case14_sandbox for 300 steps" in text
    assert "this run, checked by simulation" in text and "do-nothing" in text
    assert f"deployment {deployment.pk}: run {run.pk} is the policy live sessions use" in text
    # the recommendations it read are the session's, as the feed worker recorded them
    read = re.search(r"^step (\d+): (\d+) recommendations$", text, flags=re.M)
    described = re.findall(r"^  \d+\. (.+) \(max rho ", text, flags=re.M)
    assert read and int(read.group(2)) == len(described) >= 1, text
    assert set(described) <= set(session.recommendations.values_list("description", flat=True))
    assert text.rstrip().endswith("accepting recommendations needs an operator's token: done")
