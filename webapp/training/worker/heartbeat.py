"""The worker's heartbeat: a thread that stamps the run every few seconds while it trains.

It also carries the answers back: a requested cancel, or the loss of ownership (stale-run
recovery handed the run to a new attempt), both make the sink ask the trainer to stop; so does
the worker's own shutdown (SIGTERM), flagged by the task.
"""

from __future__ import annotations

import logging
import threading

from django.db import close_old_connections, connection

from webapp.training.services.worker import run_heartbeat

logger = logging.getLogger(__name__)


class Heartbeat:
    def __init__(self, *, run_id: int, worker_token: str, interval: float) -> None:
        self.run_id = run_id
        self.worker_token = worker_token
        self.interval = interval
        self.cancel_requested = threading.Event()
        self.ownership_lost = threading.Event()
        self.shutdown_requested = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"heartbeat-run-{run_id}", daemon=True)

    @property
    def should_stop(self) -> bool:
        return any(
            flag.is_set() for flag in (self.cancel_requested, self.ownership_lost, self.shutdown_requested)
        )

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=self.interval + 10)

    def beat(self) -> None:
        reply = run_heartbeat(run_id=self.run_id, worker_token=self.worker_token)
        if not reply.owned:
            self.ownership_lost.set()
        if reply.cancel_requested:
            self.cancel_requested.set()

    def _loop(self) -> None:
        try:
            while not self._stopped.wait(self.interval):
                try:
                    close_old_connections()
                    self.beat()
                except Exception:  # a database hiccup must not kill the run; the next beat retries
                    logger.exception("heartbeat of run %s failed", self.run_id)
        finally:
            connection.close()
