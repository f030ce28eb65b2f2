"""Background tasks on the ``training`` queue, run by ``manage.py db_worker --queue-name training``.

``train_run`` runs one attempt of a run: it claims the run, starts the heartbeat, and calls the
trainer (``settings.GRIDACE_TRAINER``, normally :func:`ace_core.train.train`) with the web event
sink. ``evaluate_run`` evaluates a finished run's checkpoint against the baselines.
"""

from __future__ import annotations

import logging
import signal
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string
from django_tasks import TaskContext, task

from ace_core.config import TrainConfig
from webapp.live.broadcast import BackgroundPublisher
from webapp.training.models import Evaluation
from webapp.training.services.evaluations import evaluation_fail, evaluation_finish, evaluation_start
from webapp.training.services.worker import run_fail, run_finish, run_release, run_start
from webapp.training.worker.heartbeat import Heartbeat
from webapp.training.worker.sink import WebEventSink

logger = logging.getLogger(__name__)

CHECKPOINT_FILE = "checkpoint.pt"
"""the file the trainer keeps in the run's folder (``ace_core.checkpoint.CHECKPOINT_NAME``)"""


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


@contextmanager
def _stop_on_shutdown_signal(flag: threading.Event) -> Iterator[None]:
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


@task(queue_name="training", takes_context=True)
def train_run(context: TaskContext, run_id: int, attempt: int) -> dict[str, Any]:
    worker_ids = context.task_result.worker_ids
    token = uuid.uuid4().hex
    run = run_start(
        run_id=run_id, attempt=attempt, worker_token=token, worker_id=worker_ids[-1] if worker_ids else ""
    )
    if run is None:
        return {"run": run_id, "attempt": attempt, "skipped": "run is no longer queued for this attempt"}
    heartbeat = Heartbeat(
        run_id=run_id, worker_token=token, interval=settings.GRIDACE_HEARTBEAT_SECONDS
    ).start()
    publisher = BackgroundPublisher.shared()
    sink = WebEventSink(run_id=run_id, heartbeat=heartbeat, publisher=publisher)
    try:
        trainer = import_string(settings.GRIDACE_TRAINER)
        config = TrainConfig.from_dict(run.config)
        out_dir = Path(run.out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        # A checkpoint written just before a crash may not have reached the database: the file,
        # when present, is the latest state either way.
        resume = run.resume or (out_dir / CHECKPOINT_FILE).is_file()
        with _stop_on_shutdown_signal(heartbeat.shutdown_requested):
            trainer(config, sink, out_dir, resume=resume)
    except BaseException as error:
        heartbeat.stop()
        publisher.flush()
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            # Forced stop of the worker: the run is not at fault; another worker picks it up.
            run_release(run_id=run_id, worker_token=token)
        else:
            run_fail(run_id=run_id, worker_token=token, error=_error_text(error))
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


def agent_spec_for(evaluation: Evaluation) -> str:
    """How :func:`ace_core.agents.load_agent` names the run's policy: ``sac:<checkpoint file>``."""
    return f"sac:{evaluation.checkpoint.path}"


@task(queue_name="training")
def evaluate_run(evaluation_id: int) -> dict[str, Any]:
    evaluation = evaluation_start(evaluation_id=evaluation_id)
    if evaluation is None:
        return {"evaluation": evaluation_id, "skipped": "evaluation is no longer queued"}
    run = evaluation.run
    out_root = Path(run.out_dir) / "evaluations" / str(evaluation.pk)
    agents = {"ace": agent_spec_for(evaluation), **{name: name for name in settings.GRIDACE_BASELINES}}
    try:
        evaluate = import_string(settings.GRIDACE_EVALUATOR)
        results = {}
        for name, spec in agents.items():
            results[name] = evaluate(run.env, spec, evaluation.split, evaluation.nb_episode, out_root / name)
    except BaseException as error:
        evaluation_fail(evaluation_id=evaluation_id, error=_error_text(error))
        raise
    evaluation_finish(evaluation_id=evaluation_id, results=results)
    return {"evaluation": evaluation_id, "agents": list(results)}
