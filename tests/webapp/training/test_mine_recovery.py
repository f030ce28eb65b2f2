"""Mines that lose their worker: the worker stamps a running mine's heartbeat; the watchdog fails a
silent one with how to go on, and started again from its page the mine resumes where it stopped
(a real tiny mine whose first episode was played before its worker died)."""

from __future__ import annotations

import re
import threading
import time
from datetime import timedelta
from html import unescape
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from tests.webapp.conftest import client_for
from tests.webapp.training.conftest import MINE_ENV, MINE_EXPERT
from tests.webapp.training.test_tasks import work_off_queue
from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.jobs.services import job_finish, job_start
from webapp.training.models import Mine
from webapp.training.services.mines import mine_launch, mine_spec
from webapp.training.services.recovery import MINE_LOST, mines_recover_stale
from webapp.training.worker.heartbeat import Heartbeat

STALE = timedelta(seconds=30)


class WorkerDied(Exception):
    """Stands for the worker's death: raised once the first episode is on disk."""


def _silent_for(mine: Mine, seconds: float) -> None:
    Mine.objects.filter(pk=mine.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=seconds))


def _play_first_episode_then_die(mine: Mine) -> None:
    """What the dead worker did: mined one of the mine's episodes into its directory."""
    from ace_core.imitation.mining import mine as run_mine
    from ace_core.workers import Workers

    def log(text: str) -> None:
        if text.startswith("mined 1/"):
            raise WorkerDied(text)

    with pytest.raises(WorkerDied):
        run_mine(mine_spec(mine), Path(mine.out_dir), workers=Workers(1), log=log)


def _hidden_inputs(html: str, form_id: str) -> dict[str, str]:
    form = html.split(f'id="{form_id}"')[1].split("</form>")[0]
    return {
        name: unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form)
        if name != "csrfmiddlewaretoken"
    }


@pytest.mark.django_db(transaction=True)  # the worker's heartbeat thread sees committed rows only
def test_a_silent_mine_is_failed_and_started_again_resumes_where_it_stopped(engineer, settings, tmp_path):
    settings.GRIDACE_MINES_DIR = str(tmp_path / "mines")
    mine = mine_launch(
        env=MINE_ENV, expert=MINE_EXPERT, seeds=2, episodes=1, episode_length=8, launched_by=engineer
    )
    # a worker claims it, mines one episode of two, and dies
    job_start(model=Mine, job_id=mine.pk, worker_token="dead")
    DBTaskResult.objects.filter(id=mine.task_id).update(status=TaskResultStatus.RUNNING)
    _play_first_episode_then_die(mine)
    _silent_for(mine, 0)  # its last heartbeat, as it died (a loaded machine may take 30 s to mine)
    assert len(list((Path(mine.out_dir) / "episodes").glob("*.npz"))) == 1
    assert mines_recover_stale(stale_after=STALE) == []  # its heartbeat is fresh yet
    _silent_for(mine, 45)

    [lost] = mines_recover_stale(stale_after=STALE)

    mine.refresh_from_db()
    assert (lost.mine_id, lost.name) == (mine.pk, mine.name)
    assert mine.status == JobStatus.FAILED and mine.finished_at is not None
    assert mine.error.startswith(f"{MINE_LOST} (no heartbeat since ") and "30 s allowed" in mine.error
    task = DBTaskResult.objects.get(id=mine.task_id)
    assert task.status == TaskResultStatus.FAILED
    assert task.exception_class_path == "webapp.training.errors.WorkerLost"
    entry = AuditEntry.objects.get(action="mine.recover.failed")
    assert entry.actor is None and entry.target_id == str(mine.pk) and entry.comment == mine.error
    assert mines_recover_stale(stale_after=STALE) == []  # failed once

    # its page says why and offers to start it again with the same settings
    client = client_for(engineer)
    page = client.get(reverse("training:mine_detail", args=[mine.name])).content.decode()
    assert MINE_LOST in unescape(page)
    again = _hidden_inputs(page, "mine-restart")
    assert again == {
        "env": MINE_ENV,
        "expert": MINE_EXPERT,
        "seeds": "2",
        "episodes": "1",
        "episode_length": "8",
        "opponent": "env",
        "demand_scale": "1.0",
    }
    response = client.post(reverse("training:mine_launch"), again)
    assert response.status_code == 302
    restarted = Mine.objects.latest("id")
    assert restarted.pk != mine.pk and restarted.status == JobStatus.QUEUED
    assert (restarted.name, restarted.out_dir) == (mine.name, mine.out_dir)

    work_off_queue()

    restarted.refresh_from_db()
    assert restarted.status == JobStatus.SUCCEEDED, restarted.error
    assert restarted.heartbeat_at is not None and restarted.episodes_total == 2
    summary = (Path(mine.out_dir) / "summary.json").read_text()
    assert '"episodes": 2' in summary and '"episodes_played_now": 1' in summary  # resumed, not replayed
    # finished: starting it again is refused
    refused = client.post(reverse("training:mine_launch"), again)
    assert refused.status_code == 400 and "already finished" in unescape(refused.content.decode())


@pytest.mark.django_db
def test_the_watchdog_fails_a_silent_mine_and_leaves_a_queued_one(engineer, settings, tmp_path):
    settings.GRIDACE_MINES_DIR = str(tmp_path / "mines")
    settings.GRIDACE_STALE_AFTER_SECONDS = 30
    running = mine_launch(env=MINE_ENV, expert=MINE_EXPERT, seeds=1, episode_length=8, launched_by=engineer)
    job_start(model=Mine, job_id=running.pk, worker_token="t")
    queued = mine_launch(env=MINE_ENV, expert=MINE_EXPERT, seeds=2, episode_length=8, launched_by=engineer)
    _silent_for(running, 45)
    call_command("watchdog", "--once", verbosity=0)
    assert Mine.objects.get(pk=running.pk).status == JobStatus.FAILED
    assert Mine.objects.get(pk=queued.pk).status == JobStatus.QUEUED


@pytest.mark.django_db(transaction=True)
def test_the_mine_heartbeat_thread_stamps_a_running_mine(engineer, settings, tmp_path):
    settings.GRIDACE_MINES_DIR = str(tmp_path / "mines")
    mine = mine_launch(env=MINE_ENV, expert=MINE_EXPERT, seeds=1, episode_length=8, launched_by=engineer)
    job_start(model=Mine, job_id=mine.pk, worker_token="t")
    _silent_for(mine, 45)
    heartbeat = Heartbeat(model=Mine, job_id=mine.pk, worker_token="t", interval=0.05).start()
    try:
        silent_since = Mine.objects.get(pk=mine.pk).heartbeat_at
        deadline = time.monotonic() + 5
        while Mine.objects.get(pk=mine.pk).heartbeat_at == silent_since and time.monotonic() < deadline:
            time.sleep(0.02)
        assert mines_recover_stale(stale_after=STALE) == []  # stamped: the watchdog leaves it
        assert Mine.objects.get(pk=mine.pk).status == JobStatus.RUNNING
    finally:
        heartbeat.stop()


@pytest.mark.django_db(transaction=True)
def test_a_worker_back_from_a_freeze_leaves_its_failed_mine_and_the_new_one_alone(
    engineer, settings, tmp_path
):
    settings.GRIDACE_MINES_DIR = str(tmp_path / "mines")
    frozen = mine_launch(env=MINE_ENV, expert=MINE_EXPERT, seeds=1, episode_length=8, launched_by=engineer)
    job_start(model=Mine, job_id=frozen.pk, worker_token="frozen")
    _silent_for(frozen, 45)
    assert [r.mine_id for r in mines_recover_stale(stale_after=STALE)] == [frozen.pk]
    again = mine_launch(env=MINE_ENV, expert=MINE_EXPERT, seeds=1, episode_length=8, launched_by=engineer)
    job_start(model=Mine, job_id=again.pk, worker_token="again")
    # the frozen worker wakes: its heartbeat tells it the mine is lost, and its finish changes nothing
    heartbeat = Heartbeat(model=Mine, job_id=frozen.pk, worker_token="frozen", interval=0.05).start()
    try:
        assert heartbeat.ownership_lost.wait(5)
    finally:
        heartbeat.stop()
    assert job_finish(model=Mine, job_id=frozen.pk, worker_token="frozen") is None
    assert Mine.objects.get(pk=frozen.pk).status == JobStatus.FAILED
    assert Mine.objects.get(pk=again.pk).status == JobStatus.RUNNING


@pytest.mark.django_db(transaction=True)
def test_a_worker_whose_mine_was_failed_mid_mine_stops_at_its_next_episode(engineer, settings, tmp_path):
    from webapp.training.worker.mining import mine_attempt

    settings.GRIDACE_MINES_DIR = str(tmp_path / "mines")
    settings.GRIDACE_HEARTBEAT_SECONDS = 0.05
    mine = mine_launch(
        env=MINE_ENV, expert=MINE_EXPERT, seeds=4, episodes=2, episode_length=48, launched_by=engineer
    )
    episodes = Path(mine.out_dir) / "episodes"
    failed: list = []

    def watchdog() -> None:
        """Fails the mine as the watchdog does, once its worker has mined an episode (every few
        milliseconds, as the watchdog does every cycle: a row its heartbeat is stamping is skipped)."""
        deadline = time.monotonic() + 120
        while not any(episodes.glob("*.npz")) and time.monotonic() < deadline:
            time.sleep(0.01)
        while not failed and time.monotonic() < deadline:
            failed.extend(mines_recover_stale(now=timezone.now() + timedelta(hours=1), stale_after=STALE))
            time.sleep(0.005)

    thread = threading.Thread(target=watchdog)
    thread.start()
    try:
        result = mine_attempt(mine_id=mine.pk)
    finally:
        thread.join()

    assert [lost.mine_id for lost in failed] == [mine.pk]
    assert result == {"mine": mine.pk, "skipped": "mine is no longer running"}
    mine.refresh_from_db()
    assert mine.status == JobStatus.FAILED and mine.error.startswith(MINE_LOST)  # the watchdog's
    assert mine.episodes_total == 8
    mined = len(list(episodes.glob("*.npz")))
    assert 1 <= mined < 8 and not list(episodes.glob("*.playing"))  # stopped early, nothing half-played
    assert not (Path(mine.out_dir) / "summary.json").exists()  # nothing that looks complete
