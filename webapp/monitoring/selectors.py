"""What the database says about the service, read at scrape time (one query per figure).

These figures are written by whichever process or machine does the work (web server, training
workers, live-feed workers), so they are read here rather than counted in one process's memory.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Max, Q, Sum
from django.utils import timezone
from django_tasks.base import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from webapp.jobs.models import JobStatus
from webapp.operations.models import LIVE_STATUSES, LiveSession, SessionStatus, SessionStep
from webapp.training.models import Mine, TrainingRun

RECOMMEND_BUCKETS_MS = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000)


def training_runs_by_status() -> dict[str, int]:
    """Every status, zero included (a series that disappears looks like a scrape failure)."""
    counts = dict(TrainingRun.objects.values_list("status").annotate(n=Count("id")).order_by())
    return {status: counts.get(status, 0) for status in JobStatus.values}


def queue_depth() -> dict[str, dict[str, int]]:
    """``{queue: {"ready": n, "running": n}}`` from django-tasks-db's table."""
    rows = (
        DBTaskResult.objects.filter(status__in=[TaskResultStatus.READY, TaskResultStatus.RUNNING])
        .values_list("queue_name", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    depth: dict[str, dict[str, int]] = {}
    for queue, status, n in rows:
        depth.setdefault(queue, {"ready": 0, "running": 0})["ready" if status == "READY" else "running"] = n
    return depth


def heartbeat_ages(now: datetime | None = None) -> list[tuple[str, int, float | None]]:
    """(kind, id, seconds since the worker's last heartbeat; None before the first) for each
    running training run, running mine and live session a worker owns."""
    now = now or timezone.now()
    runs = TrainingRun.objects.filter(status=JobStatus.RUNNING).values_list("id", "heartbeat_at")
    sessions = LiveSession.objects.filter(status=SessionStatus.RUNNING).values_list("id", "heartbeat_at")
    mines = Mine.objects.filter(status=JobStatus.RUNNING).values_list("id", "heartbeat_at")

    def age(stamp: datetime | None) -> float | None:
        return None if stamp is None else max((now - stamp).total_seconds(), 0.0)

    return (
        [("training_run", pk, age(stamp)) for pk, stamp in runs]
        + [("live_session", pk, age(stamp)) for pk, stamp in sessions]
        + [("mine", pk, age(stamp)) for pk, stamp in mines]
    )


def live_sessions_by_status() -> dict[str, int]:
    counts = dict(
        LiveSession.objects.filter(status__in=LIVE_STATUSES)
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {status: counts.get(status, 0) for status in LIVE_STATUSES}


def session_step_lag(now: datetime | None = None) -> list[tuple[int, float]]:
    """(session, seconds its next step is late) for each running session: time since its last
    recorded step (or its start) beyond its pace ``speed_seconds``; 0 when on time."""
    now = now or timezone.now()
    rows = (
        LiveSession.objects.filter(status=SessionStatus.RUNNING)
        .annotate(last_step_at=Max("steps__stepped_at"))
        .values_list("id", "speed_seconds", "last_step_at", "created_at")
    )
    return [
        (pk, max((now - (last or created)).total_seconds() - speed, 0.0)) for pk, speed, last, created in rows
    ]


def recommendation_latency() -> tuple[list[tuple[float, int]], int, float]:
    """The recommendation pipeline's latency over every recorded step, as a cumulative histogram:
    ([(upper bound in ms, steps at or under it)], steps, sum of ms)."""
    timed = SessionStep.objects.filter(recommend_ms__isnull=False)
    aggregates = timed.aggregate(
        total=Count("id"),
        sum_ms=Sum("recommend_ms"),
        **{f"le_{b}": Count("id", filter=Q(recommend_ms__lte=b)) for b in RECOMMEND_BUCKETS_MS},
    )
    buckets = [(float(b), aggregates[f"le_{b}"]) for b in RECOMMEND_BUCKETS_MS]
    return buckets, aggregates["total"], float(aggregates["sum_ms"] or 0.0)
