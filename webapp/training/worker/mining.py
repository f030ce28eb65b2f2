"""A mine of expert decisions, as the ``mine_run`` task runs it inside ``db_worker``.

:func:`ace_core.imitation.mining.mine` with Ray started on this machine and one Ray worker (a web-started
mine shares the worker's machine with training runs). It resumes a mine that stopped: episodes
already on disk are not played again. A heartbeat thread stamps the row while it mines, so that
the watchdog fails the mine if this worker dies (:func:`~webapp.training.services.recovery.mines_recover_stale`).
A worker that comes back from a freeze to find its mine failed stops at its next episode and
leaves the row (and any mine started again since) as it is.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings

from webapp.jobs.services import job_fail, job_finish, job_start
from webapp.training.models import Mine
from webapp.training.services.mines import mine_spec, mine_total
from webapp.training.worker.attempt import error_text
from webapp.training.worker.heartbeat import Heartbeat

logger = logging.getLogger(__name__)

RAY_WORKERS = 1
"""Ray actors of a mine played by a web worker"""


class MineLost(Exception):
    """The mine this worker plays is no longer running: the watchdog failed it."""


def episodes_to_play(spec: Any) -> int:
    """(scenario, seed) episodes the mine plays: what its progress counts up to."""
    from ace_core.grid.envs import make_env
    from ace_core.grid.scenarios import scenarios

    env = make_env(spec.env, cache_chronics=False)
    try:
        return len(scenarios(env, spec.split, spec.episode_length)[: spec.episodes]) * spec.seeds
    finally:
        env.close()


def mine_attempt(*, mine_id: int, worker_id: str = "") -> dict[str, Any]:
    """Run a queued mine to its end; returns the task's result."""
    from ace_core.imitation.mining import mine
    from ace_core.workers import Workers

    token = uuid.uuid4().hex
    row = job_start(model=Mine, job_id=mine_id, worker_token=token, worker_id=worker_id)
    if row is None:
        return {"mine": mine_id, "skipped": "mine is no longer queued"}
    spec = mine_spec(row)
    heartbeat = Heartbeat(
        model=Mine, job_id=mine_id, worker_token=token, interval=settings.GRIDACE_HEARTBEAT_SECONDS
    ).start()
    try:
        mine_total(mine_id=mine_id, episodes_total=episodes_to_play(spec))

        def log(text: str) -> None:
            if heartbeat.ownership_lost.is_set():
                raise MineLost(f"mine {mine_id} is no longer running; this worker stops")
            logger.info("mine %s: %s", mine_id, text)

        summary = mine(spec, Path(row.out_dir), workers=Workers(RAY_WORKERS), log=log)
    except MineLost as lost:
        heartbeat.stop()
        logger.warning("%s", lost)
        return {"mine": mine_id, "skipped": "mine is no longer running"}
    except BaseException as error:
        heartbeat.stop()
        job_fail(model=Mine, job_id=mine_id, worker_token=token, error=error_text(error))
        raise
    heartbeat.stop()
    if job_finish(model=Mine, job_id=mine_id, worker_token=token) is None:
        logger.warning("mine %s finished after it was failed; its row is left as it is", mine_id)
        return {"mine": mine_id, "skipped": "mine is no longer running"}
    return {"mine": mine_id, "episodes": summary["episodes"], "decisions": summary["decisions"]}
