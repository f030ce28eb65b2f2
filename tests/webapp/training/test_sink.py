"""The web event sink as the trainer sees it: approvals, stop requests, worker shutdown."""

from __future__ import annotations

import math
import os
import signal
import threading

import pytest

from ace_core.events import MetricsEvent
from tests.webapp.training.test_tasks import work_off_queue
from webapp.jobs.models import JobStatus
from webapp.live.broadcast import BackgroundPublisher
from webapp.review.services import refinement_decide
from webapp.training.models import MetricPoint, TrainingRun
from webapp.training.services.runs import run_cancel, run_start
from webapp.training.worker.heartbeat import Heartbeat
from webapp.training.worker.sink import WebEventSink


def _sink(run: TrainingRun, token: str = "t") -> WebEventSink:
    heartbeat = Heartbeat(model=TrainingRun, job_id=run.pk, worker_token=token, interval=60)
    return WebEventSink(run_id=run.pk, heartbeat=heartbeat, publisher=BackgroundPublisher.shared())


@pytest.mark.django_db
def test_is_approved_follows_the_reviewers_decision(make_run, make_refinement, reviewer):
    run = make_run(require_approval=True)
    sink = _sink(run)
    refinement = make_refinement(run)
    assert sink.is_approved(refinement.refinement_id) is None
    refinement_decide(refinement=refinement, run=run, reviewer=reviewer, decision="approve")
    assert sink.is_approved(refinement.refinement_id) is True
    rejected = make_refinement(run, step=100)
    refinement_decide(refinement=rejected, run=run, reviewer=reviewer, decision="reject")
    assert sink.is_approved(rejected.refinement_id) is False


@pytest.mark.django_db
def test_metrics_without_a_finite_value_are_stored_as_null(make_run):
    # a diverged loss is NaN; JSON (and Postgres jsonb) has no NaN
    run = make_run()
    _sink(run).emit(MetricsEvent(step=50, values={"losses/qf1_loss": math.nan, "charts/SPS": 900.0}))
    point = MetricPoint.objects.get(run=run)
    assert point.values == {"losses/qf1_loss": None, "charts/SPS": 900.0}
    assert TrainingRun.objects.get(pk=run.pk).progress_step == 50


@pytest.mark.django_db
def test_should_stop_on_cancel_and_on_lost_ownership(make_run, engineer):
    run = make_run()
    run_start(run_id=run.pk, attempt=1, worker_token="t")
    sink = _sink(run)
    sink.heartbeat.beat()
    assert not sink.should_stop()
    run_cancel(run=run, user=engineer)
    sink.heartbeat.beat()
    assert sink.should_stop()

    other = make_run()
    run_start(run_id=other.pk, attempt=1, worker_token="t")
    zombie = _sink(other, token="an-older-attempt")
    zombie.heartbeat.beat()
    assert zombie.should_stop()


@pytest.mark.django_db(transaction=True)
def test_sigterm_to_the_worker_checkpoints_and_queues_the_run_again(make_run):
    run = make_run()
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def terminate_once_running() -> None:
        for _ in range(500):
            current = TrainingRun.objects.get(pk=run.pk)
            if current.status == JobStatus.RUNNING and current.progress_step >= 50:
                os.kill(os.getpid(), signal.SIGTERM)
                return
            threading.Event().wait(0.01)

    killer = threading.Thread(target=terminate_once_running)
    killer.start()
    try:
        work_off_queue()  # db_worker finishes the task at hand, then exits on SIGTERM
    finally:
        killer.join()
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    run.refresh_from_db()
    assert (run.status, run.attempt, run.resume) == (JobStatus.QUEUED, 2, True)
    assert 50 <= run.checkpoints.order_by("-id").first().step < 300
    assert "worker shut down" in run.error
