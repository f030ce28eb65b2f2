"""An agent's play of a finished session's day, as the ``play_session_day`` task runs it inside
``db_worker``: the job is claimed, stamped by a heartbeat thread while grid2op's Runner plays
(:func:`webapp.operations.services.session_episodes.day_play_write`), then ended. A worker that
dies leaves the job running without heartbeat: ``manage.py watchdog`` fails it with the reason
(:func:`~webapp.operations.services.session_episodes.day_plays_recover_silent`), as does asking for
the play again, which then queues a new one
(:func:`~webapp.operations.services.session_episodes.day_play_request`)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.conf import settings

from webapp.jobs.services import job_fail, job_finish, job_start
from webapp.operations.models import DayPlay
from webapp.operations.services.session_episodes import day_play_write
from webapp.training.worker.heartbeat import Heartbeat

logger = logging.getLogger(__name__)


def play_attempt(*, play_id: int, worker_id: str = "") -> dict[str, Any]:
    """Run a queued play to its end; returns the task's result."""
    token = uuid.uuid4().hex
    row = job_start(model=DayPlay, job_id=play_id, worker_token=token, worker_id=worker_id)
    if row is None:
        return {"play": play_id, "skipped": "play is no longer queued"}
    heartbeat = Heartbeat(
        model=DayPlay, job_id=play_id, worker_token=token, interval=settings.GRIDACE_HEARTBEAT_SECONDS
    ).start()
    try:
        folder = day_play_write(day_play=row)
    except BaseException as error:
        heartbeat.stop()
        job_fail(model=DayPlay, job_id=play_id, worker_token=token, error=f"{type(error).__name__}: {error}")
        raise
    heartbeat.stop()
    if job_finish(model=DayPlay, job_id=play_id, worker_token=token) is None:
        logger.warning("play %s finished after it was failed; its episode is kept", play_id)
        return {"play": play_id, "skipped": "play is no longer running"}
    return {"play": play_id, "session": row.session_id, "episode": folder.name}
