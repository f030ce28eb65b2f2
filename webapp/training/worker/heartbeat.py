"""The worker's heartbeat: a thread that stamps the job it runs (a run, a mine) every few seconds,
so that the watchdog tells a live worker from a dead one.

The stamp (:func:`webapp.jobs.services.job_heartbeat`) also carries the answers back: the loss of
the job (the watchdog failed it, or handed a run to a new attempt, while this worker was frozen)
and, for a run, a requested cancel. Each sets a flag the work reads between steps; so does the
worker's own shutdown (SIGTERM), flagged by the task.
"""

from __future__ import annotations

import logging
import threading

from django.db import close_old_connections, connection

from webapp.jobs.models import Job
from webapp.jobs.services import job_heartbeat

logger = logging.getLogger(__name__)


class Heartbeat:
    """A daemon thread that stamps the job every ``interval`` seconds until stopped; a failed
    stamp (a database hiccup) is logged and the next one retries."""

    def __init__(self, *, model: type[Job], job_id: int, worker_token: str, interval: float) -> None:
        self.model = model
        self.job_id = job_id
        self.worker_token = worker_token
        self.interval = interval
        self.ownership_lost = threading.Event()
        self.cancel_requested = threading.Event()
        self.shutdown_requested = threading.Event()
        self._stopped = threading.Event()
        name = f"heartbeat-{model.noun}-{job_id}"
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    @property
    def should_stop(self) -> bool:
        return any(
            flag.is_set() for flag in (self.cancel_requested, self.ownership_lost, self.shutdown_requested)
        )

    def beat(self) -> None:
        reply = job_heartbeat(model=self.model, job_id=self.job_id, worker_token=self.worker_token)
        if not reply.owned:
            self.ownership_lost.set()
        if reply.cancel_requested:
            self.cancel_requested.set()

    def start(self) -> Heartbeat:
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
                    logger.exception("heartbeat of %s %s failed", self.model.noun, self.job_id)
        finally:
            connection.close()
