"""The worker's heartbeat: a thread that stamps the run (or the mine) every few seconds while it
works, so that the watchdog tells a live worker from a dead one.

A run's heartbeat also carries the answers back: a requested cancel, or the loss of ownership
(stale-run recovery handed the run to a new attempt), both make the sink ask the trainer to stop;
so does the worker's own shutdown (SIGTERM), flagged by the task. A mine's stamps it and flags a
mine that is no longer running (failed by the watchdog while its worker was frozen).
"""

from __future__ import annotations

import logging
import threading

from django.db import close_old_connections, connection

from webapp.training.services.mines import mine_heartbeat
from webapp.training.services.worker import run_heartbeat

logger = logging.getLogger(__name__)


class Beat:
    """A daemon thread that calls :meth:`beat` every ``interval`` seconds until stopped; a failed
    beat (a database hiccup) is logged and the next one retries."""

    def __init__(self, *, name: str, interval: float) -> None:
        self.name = name
        self.interval = interval
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"heartbeat-{name}", daemon=True)

    def beat(self) -> None:
        raise NotImplementedError

    def start(self) -> Beat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=self.interval + 10)

    def _loop(self) -> None:
        try:
            while not self._stopped.wait(self.interval):
                try:
                    close_old_connections()
                    self.beat()
                except Exception:  # a database hiccup must not kill the work; the next beat retries
                    logger.exception("heartbeat of %s failed", self.name)
        finally:
            connection.close()


class Heartbeat(Beat):
    """A training run's heartbeat, which also sees a cancel or the loss of the run."""

    def __init__(self, *, run_id: int, worker_token: str, interval: float) -> None:
        super().__init__(name=f"run-{run_id}", interval=interval)
        self.run_id = run_id
        self.worker_token = worker_token
        self.cancel_requested = threading.Event()
        self.ownership_lost = threading.Event()
        self.shutdown_requested = threading.Event()

    @property
    def should_stop(self) -> bool:
        return any(
            flag.is_set() for flag in (self.cancel_requested, self.ownership_lost, self.shutdown_requested)
        )

    def beat(self) -> None:
        reply = run_heartbeat(run_id=self.run_id, worker_token=self.worker_token)
        if not reply.owned:
            self.ownership_lost.set()
        if reply.cancel_requested:
            self.cancel_requested.set()


class MineHeartbeat(Beat):
    """A mine's heartbeat, stamped while :func:`ace_core.mining.mine` waits on its Ray workers."""

    def __init__(self, *, mine_id: int, interval: float) -> None:
        super().__init__(name=f"mine-{mine_id}", interval=interval)
        self.mine_id = mine_id
        self.lost = threading.Event()

    def beat(self) -> None:
        if not mine_heartbeat(mine_id=self.mine_id):
            self.lost.set()
