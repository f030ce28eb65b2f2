"""The deployed policy on a finished session's day: the background play (grid2op's Runner, the
same day and as many steps as the operator's), who may ask for it, what is refused, and the
day-comparison page listing it beside the operator's decisions once a worker has played it."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from tests.webapp.conftest import client_for
from tests.webapp.operations.conftest import run_feed
from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.jobs.services import job_start
from webapp.operations.errors import SessionStateError
from webapp.operations.models import DayPlay
from webapp.operations.services import session_control
from webapp.operations.services.session_episodes import (
    PLAY_LOST,
    PLAY_RECOVERED,
    day_play_request,
    session_episode,
)
from webapp.operations.worker.plays import play_attempt

URL = reverse("operations:day_compare")
STEPS = 4


def _meta(folder: Path) -> dict:
    (episode,) = [p for p in folder.iterdir() if p.is_dir()]
    return {"name": episode.name, **json.loads((episode / "episode_meta.json").read_text())}


def work_off_queue() -> None:
    call_command(
        "db_worker",
        "--batch",
        "--queue-name",
        "default",
        "--no-startup-delay",
        "--no-reload",
        "--interval",
        "0",
        verbosity=0,
    )


@pytest.fixture
def data_dir(settings, tmp_path: Path) -> Path:
    settings.GRIDACE_DATA_DIR = tmp_path / "data"
    return settings.GRIDACE_DATA_DIR


@pytest.mark.django_db
def test_the_policy_plays_the_sessions_day_once_for_as_many_steps(make_session, engineer, data_dir):
    session = make_session(max_steps=STEPS + 3)
    run_feed(session, 2)
    with pytest.raises(SessionStateError, match="only a session that ended after at least one step"):
        day_play_request(session_id=session.pk, user=engineer)
    assert not DayPlay.objects.exists()
    run_feed(session, 1)
    session_control(session_id=session.pk, user=engineer, command="stop")  # stopped at step 3 of 7
    session.refresh_from_db()

    play = day_play_request(session_id=session.pk, user=engineer)
    assert play.status == JobStatus.QUEUED and play.task_id and play.steps == session.current_step == 3
    assert play.agent.startswith("sac-checked:") and play.agent.endswith(":50:stop=0.95:expert")
    assert play.agent_label.startswith(f"the deployed policy (deployment {session.deployment_id}:")
    assert AuditEntry.objects.filter(action="live.session.play_day").count() == 1
    with pytest.raises(SessionStateError, match="already queued"):
        day_play_request(session_id=session.pk, user=engineer)
    with pytest.raises(SessionStateError, match="play of session .* day is queued"):
        session_episode(session=session, play="policy")

    assert play_attempt(play_id=play.pk)["session"] == session.pk
    play.refresh_from_db()
    assert play.status == JobStatus.SUCCEEDED, play.error
    policy = session_episode(session=session, play="policy")
    operator = session_episode(session=session, play="operator")
    assert policy.parent == operator.parent and policy.name == "policy"
    # the same day (chronic and start), for as many steps as the operator played
    policy_meta, operator_meta = _meta(policy), _meta(operator)
    assert policy_meta["name"] == operator_meta["name"]
    assert policy_meta["chronics_path"] == operator_meta["chronics_path"]
    assert policy_meta["nb_timestep_played"] == operator_meta["nb_timestep_played"] == 3
    assert not [p for p in policy.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left
    with pytest.raises(SessionStateError, match="already played by the deployed policy"):
        day_play_request(session_id=session.pk, user=engineer)
    assert DayPlay.objects.count() == 1


@pytest.mark.django_db
def test_refusals_say_why_and_queue_nothing_and_a_silent_play_is_asked_again(
    make_session, operator, data_dir
):
    running = make_session(max_steps=STEPS)
    run_feed(running, 1)
    client = client_for(operator)
    refused = client.post(reverse("operations:day_play", args=[running.pk]))
    assert refused.status_code == 400 and "only a session that ended" in refused.context["error"]
    missing = client.post(reverse("operations:day_play", args=[999999]))
    assert missing.status_code == 400 and "live session 999999 does not exist" in missing.context["error"]
    assert not DayPlay.objects.exists()
    run_feed(running, 10)
    # the policy's play is never played inside a request: until its job wrote it, the page says how
    page = client.get(URL, {"a": f"session/{running.pk}/policy", "b": f"session/{running.pk}/operator"})
    assert page.status_code == 400 and "has not been asked for" in page.context["error"]
    assert (
        not DayPlay.objects.exists()
        and not (data_dir / "session-episodes" / f"session-{running.pk}" / "policy").exists()
    )
    # a play whose worker died (no heartbeat) is failed with the reason, and asked for again
    long_ago = timezone.now() - timedelta(hours=1)
    silent = DayPlay.objects.create(
        session=running,
        play="policy",
        agent="greedy",
        agent_label="the greedy expert",
        steps=STEPS,
        requested_by=operator,
        status=JobStatus.RUNNING,
        started_at=long_ago,
        heartbeat_at=long_ago,
    )
    again = day_play_request(session_id=running.pk, user=operator)
    silent.refresh_from_db()
    assert silent.status == JobStatus.FAILED and silent.error.startswith(PLAY_LOST)
    assert AuditEntry.objects.get(action=PLAY_RECOVERED).target_id == str(silent.pk)  # as the watchdog does
    assert again.status == JobStatus.QUEUED and DayPlay.objects.count() == 2
    assert "queued: the deployed policy" in client.get(URL).content.decode()


@pytest.mark.django_db(transaction=True)
def test_an_operator_asks_for_the_play_and_the_page_lists_it_when_a_worker_is_done(
    make_session, operator, reviewer, data_dir
):
    session = make_session(max_steps=STEPS)
    run_feed(session, 10)
    play_url = reverse("operations:day_play", args=[session.pk])
    client = client_for(operator)
    page = client.get(URL)
    policy_key = f"session/{session.pk}/policy"
    assert "Play the deployed policy on this day" in page.content.decode()
    assert policy_key not in {choice.key for choice in page.context["choices"]}
    assert client_for(reviewer).post(play_url).status_code == 403

    asked = client.post(play_url)
    assert asked.status_code == 302 and asked["Location"] == URL + "#day-plays"
    waiting = client.get(URL).content.decode()
    assert "queued: the deployed policy" in waiting and 'http-equiv="refresh"' in waiting
    assert "Play the deployed policy on this day" not in waiting
    again = client.post(play_url)
    assert again.status_code == 400 and "already queued" in again.context["error"]
    assert DayPlay.objects.count() == 1

    work_off_queue()
    assert DayPlay.objects.get().status == JobStatus.SUCCEEDED, DayPlay.objects.get().error
    listed = client.get(URL)
    labels = {choice.key: choice.label for choice in listed.context["choices"]}
    assert labels[policy_key].startswith(f"session {session.pk}: the deployed policy (deployment ")
    assert 'http-equiv="refresh"' not in listed.content.decode()
    compared = client.get(URL, {"a": f"session/{session.pk}/operator", "b": policy_key})
    assert compared.status_code == 200, compared.context.get("error")
    rows = {name: (a, b) for name, a, b in compared.context["rows"]}
    assert rows["Survival"] == (f"{STEPS} / {STEPS} steps (100 %)",) * 2
    assert rows["Decision time"][0].startswith("not recorded in a replay")
    assert "ms median" in rows["Decision time"][1]  # the policy's own times, as the Runner took them


@pytest.mark.django_db
def test_the_watchdog_fails_a_silent_play_with_the_reason_and_the_page_offers_it_again(
    make_session, operator, data_dir, settings
):
    settings.GRIDACE_STALE_AFTER_SECONDS = 30
    session = make_session(max_steps=STEPS)
    run_feed(session, 10)
    play = day_play_request(session_id=session.pk, user=operator)
    # a worker claims it and dies mid-play
    job_start(model=DayPlay, job_id=play.pk, worker_token="dead")
    DBTaskResult.objects.filter(id=play.task_id).update(status=TaskResultStatus.RUNNING)
    call_command("watchdog", "--once", verbosity=0)
    assert DayPlay.objects.get(pk=play.pk).status == JobStatus.RUNNING  # its heartbeat is fresh yet
    DayPlay.objects.filter(pk=play.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=45))

    out = StringIO()
    call_command("watchdog", "--once", stdout=out)

    play.refresh_from_db()
    assert play.status == JobStatus.FAILED and play.finished_at is not None
    assert play.error.startswith(f"{PLAY_LOST} (no heartbeat since ") and "30 s allowed" in play.error
    assert "runs, mines, evaluations, plays silent for 30 s are recovered" in out.getvalue()
    assert f"play {play.pk} (session {session.pk}, policy) failed: {play.error}" in out.getvalue()
    task = DBTaskResult.objects.get(id=play.task_id)
    assert task.status == TaskResultStatus.FAILED
    assert task.exception_class_path == "webapp.jobs.errors.WorkerLost"
    # audited as the runs' and mines' recoveries are: by no one, with the reason
    entry = AuditEntry.objects.get(action=PLAY_RECOVERED)
    assert entry.actor is None and entry.target_id == str(play.pk) and entry.comment == play.error
    assert entry.before["status"] == JobStatus.RUNNING and entry.after == {"status": JobStatus.FAILED}
    call_command("watchdog", "--once", verbosity=0)
    assert AuditEntry.objects.filter(action=PLAY_RECOVERED).count() == 1  # failed once

    # the page says why and offers the play again; asked again, it is queued anew
    client = client_for(operator)
    page = client.get(URL).content.decode()
    assert f"failed: {PLAY_LOST}" in page and "Play the deployed policy on this day" in page
    assert client.post(reverse("operations:day_play", args=[session.pk])).status_code == 302
    again = DayPlay.objects.latest("id")
    assert again.pk != play.pk and again.status == JobStatus.QUEUED
