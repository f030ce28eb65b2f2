"""A Prometheus collector that reads the database at scrape time (see :mod:`.selectors`)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric

from webapp.monitoring import selectors


class DatabaseCollector:
    """Training runs, task queues, worker heartbeats, live sessions and recommendation latency."""

    def collect(self) -> Iterator[Metric]:
        runs = GaugeMetricFamily("gridace_training_runs", "Training runs by status", labels=["status"])
        for status, n in selectors.training_runs_by_status().items():
            runs.add_metric([status], n)
        yield runs

        depth = GaugeMetricFamily(
            "gridace_task_queue_depth", "Tasks waiting in each django-tasks-db queue", labels=["queue"]
        )
        running = GaugeMetricFamily(
            "gridace_tasks_running", "Tasks a worker is running, by queue", labels=["queue"]
        )
        for queue, counts in sorted(selectors.queue_depth().items()):
            depth.add_metric([queue], counts["ready"])
            running.add_metric([queue], counts["running"])
        yield depth
        yield running

        heartbeats = GaugeMetricFamily(
            "gridace_worker_heartbeat_age_seconds",
            "Seconds since the worker owning a running training run, mine or live session last checked in",
            labels=["kind", "id"],
        )
        for kind, pk, age in selectors.heartbeat_ages():
            heartbeats.add_metric([kind, str(pk)], float("nan") if age is None else age)
        yield heartbeats

        sessions = GaugeMetricFamily("gridace_live_sessions", "Live sessions by status", labels=["status"])
        for status, n in selectors.live_sessions_by_status().items():
            sessions.add_metric([status], n)
        yield sessions

        lag = GaugeMetricFamily(
            "gridace_live_session_step_lag_seconds",
            "How late a running session's next grid step is against its pace (0: on time)",
            labels=["session"],
        )
        for pk, seconds in selectors.session_step_lag():
            lag.add_metric([str(pk)], seconds)
        yield lag

        buckets, count, sum_ms = selectors.recommendation_latency()
        histogram = HistogramMetricFamily(
            "gridace_recommendation_duration_seconds",
            "Recommendation pipeline per grid step (policy top-k and simulation), every recorded step",
        )
        histogram.add_metric(
            [],
            buckets=[(str(ms / 1000), n) for ms, n in buckets] + [("+Inf", count)],
            sum_value=sum_ms / 1000,
        )
        yield histogram
