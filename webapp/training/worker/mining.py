"""A mine of expert decisions, as the ``mine_run`` task runs it inside ``db_worker``.

:func:`ace_core.mining.mine` with Ray started on this machine and one Ray worker (a web-started
mine shares the worker's machine with training runs). It resumes a mine that stopped: episodes
already on disk are not played again. A heartbeat thread stamps the row while it mines, so that
the watchdog fails the mine if this worker dies (:func:`~webapp.training.services.recovery.mines_recover_stale`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.conf import settings

from webapp.training.services.mines import mine_fail, mine_finish, mine_spec, mine_start, mine_total
from webapp.training.worker.attempt import error_text
from webapp.training.worker.heartbeat import MineHeartbeat

logger = logging.getLogger(__name__)

RAY_WORKERS = 1


def episodes_to_play(spec: Any) -> int:
    """(scenario, seed) episodes the mine plays: what its progress counts up to."""
    from ace_core.grid.envs import make_env
    from ace_core.grid.scenarios import scenarios

    env = make_env(spec.env, cache_chronics=False)
    try:
        return len(scenarios(env, spec.split, spec.episode_length)[: spec.episodes]) * spec.seeds
    finally:
        env.close()


def mine_attempt(*, mine_id: int) -> dict[str, Any]:
    """Run a queued mine to its end; returns the task's result."""
    from ace_core.mining import mine

    row = mine_start(mine_id=mine_id)
    if row is None:
        return {"mine": mine_id, "skipped": "mine is no longer queued"}
    spec = mine_spec(row)
    heartbeat = MineHeartbeat(mine_id=mine_id, interval=settings.GRIDACE_HEARTBEAT_SECONDS).start()
    try:
        mine_total(mine_id=mine_id, episodes_total=episodes_to_play(spec))
        summary = mine(
            spec,
            Path(row.out_dir),
            workers=RAY_WORKERS,
            log=lambda text: logger.info("mine %s: %s", mine_id, text),
        )
    except BaseException as error:
        heartbeat.stop()
        mine_fail(mine_id=mine_id, error=error_text(error))
        raise
    heartbeat.stop()
    mine_finish(mine_id=mine_id)
    return {"mine": mine_id, "episodes": summary["episodes"], "decisions": summary["decisions"]}
