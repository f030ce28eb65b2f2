"""One attempt of a training run, as the ``train_run`` task runs it inside ``db_worker``.

It claims the run, starts the heartbeat, calls the trainer (``settings.GRIDACE_TRAINER``, normally
:func:`ace_core.training.run`) with the web event sink, and records how the attempt ended:
finished, failed, or handed back to the queue when the worker itself is stopping or the database
went away under it (a restart, a dropped connection: not the run's fault).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.utils.module_loading import import_string

from ace_core.config import TrainConfig
from webapp.live.broadcast import BackgroundPublisher
from webapp.training.models import TrainingRun
from webapp.training.services.runs import run_fail, run_finish, run_release, run_start
from webapp.training.worker.heartbeat import Heartbeat
from webapp.training.worker.sink import WebEventSink

logger = logging.getLogger(__name__)

DATABASE_AWAY = (OperationalError, InterfaceError)
"""what a restarted database or a dropped connection raises"""


def error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


@contextmanager
def stop_on_shutdown_signal(flag: threading.Event) -> Iterator[None]:
    """While training, SIGTERM/SIGINT also ask the trainer to checkpoint and stop, so a worker
    being stopped (``docker compose stop``, scaling down) hands its run to another worker
    instead of holding it until killed. db_worker's own handler still runs after ours."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def handler(signum: int, frame: Any) -> None:
        flag.set()
        chained = previous.get(signum)
        if callable(chained):
            chained(signum, frame)

    for sig in previous:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, chained in previous.items():
            signal.signal(sig, chained)


def train_attempt(*, run_id: int, attempt: int, worker_id: str) -> dict[str, Any]:
    """Run attempt ``attempt`` of run ``run_id`` to its end; returns the task's result."""
    token = uuid.uuid4().hex
    run = run_start(run_id=run_id, attempt=attempt, worker_token=token, worker_id=worker_id)
    if run is None:
        return {"run": run_id, "attempt": attempt, "skipped": "run is no longer queued for this attempt"}
    heartbeat = Heartbeat(
        model=TrainingRun, job_id=run_id, worker_token=token, interval=settings.GRIDACE_HEARTBEAT_SECONDS
    ).start()
    publisher = BackgroundPublisher.shared()
    sink = WebEventSink(run_id=run_id, heartbeat=heartbeat, publisher=publisher)
    try:
        _train(run, sink, heartbeat)
    except BaseException as error:
        heartbeat.stop()
        publisher.flush()
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            # Forced stop of the worker: the run is not at fault; another worker picks it up.
            run_release(run_id=run_id, worker_token=token)
        elif isinstance(error, DATABASE_AWAY):
            _release_when_database_back(run_id=run_id, worker_token=token, error=error)
        else:
            run_fail(run_id=run_id, worker_token=token, error=error_text(error))
            logger.exception("run %s attempt %s failed", run_id, attempt)
        raise
    heartbeat.stop()
    publisher.flush()
    if heartbeat.shutdown_requested.is_set():
        finished = run_release(run_id=run_id, worker_token=token)
    else:
        finished = run_finish(run_id=run_id, worker_token=token)
    status = finished.status if finished else "lost ownership"
    return {"run": run_id, "attempt": attempt, "status": status}


def _release_when_database_back(*, run_id: int, worker_token: str, error: BaseException) -> None:
    """Queue the run again (it continues from its last checkpoint) once the database answers:
    failing it would end it for good. A database still away after half the stale delay raises,
    and the watchdog resumes the silent run later."""
    reason = (
        f"the worker lost the database ({error_text(error)[:300]}); "
        "queued again to continue from its last checkpoint"
    )
    deadline = time.monotonic() + settings.GRIDACE_STALE_AFTER_SECONDS / 2
    while True:
        with suppress(DatabaseError):
            connection.close()  # the broken one: the next query connects again
        try:
            released = run_release(run_id=run_id, worker_token=worker_token, reason=reason)
        except DATABASE_AWAY:
            if time.monotonic() >= deadline:
                raise
            time.sleep(1.0)
            continue
        if released is not None:  # None: the watchdog took the silent run meanwhile
            logger.warning("run %s: %s", run_id, reason)
        return


def _train(run: TrainingRun, sink: WebEventSink, heartbeat: Heartbeat) -> None:
    # imports torch: only in the worker, never in the web process that enqueues the task
    from ace_core.checkpoint import CHECKPOINT_NAME

    trainer = import_string(settings.GRIDACE_TRAINER)
    config = TrainConfig.from_dict(run.config)
    out_dir = Path(run.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # A checkpoint written just before a crash may not have reached the database: the file,
    # when present, is the latest state either way.
    resume = run.resume or (out_dir / CHECKPOINT_NAME).is_file()
    with stop_on_shutdown_signal(heartbeat.shutdown_requested):
        trainer(config, out_dir, sink, resume=resume)
