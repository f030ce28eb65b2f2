"""``/metrics``: who may read it, and that each figure says what the database and the app did.

Process-local metrics (HTTP, websockets, LLM calls) live in the process-wide registry, so those
tests compare a scrape before and after the action. Database figures are read at scrape time and
compared with the rows the test made through the real services and feed worker.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from ace_core.llm.backend import LLMError
from ace_core.llm.openai_compat import OpenAICompatBackend
from tests.ace_core.conftest import ChatServer, _serve
from tests.webapp.conftest import client_for, communicator, socket_headers
from tests.webapp.operations.conftest import run_feed
from webapp.jobs.models import JobStatus
from webapp.operations.models import SessionStep
from webapp.training.models import TrainingRun

TOKEN = "a-scraper-token-of-some-length"


def scrape(client: Client | None = None, **headers: Any) -> dict[tuple[str, tuple], float]:
    response = (client or Client()).get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


# ----- access -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_default_lets_the_local_machine_scrape_and_nobody_else():
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 200
    refused = Client(REMOTE_ADDR="203.0.113.9").get("/metrics")
    assert refused.status_code == 403 and b"GRIDACE_METRICS_ALLOWED_IPS" in refused.content
    assert Client().post("/metrics").status_code == 405


@pytest.mark.django_db
def test_networks_in_the_allow_list_may_scrape(settings):
    settings.GRIDACE_METRICS_ALLOWED_IPS = ["10.0.0.0/8", "2001:db8::/32"]
    assert Client(REMOTE_ADDR="10.20.30.40").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="2001:db8::5").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 403
    assert Client(REMOTE_ADDR="11.0.0.1").get("/metrics").status_code == 403


@pytest.mark.django_db
def test_the_token_lets_any_address_scrape(settings):
    settings.GRIDACE_METRICS_ALLOWED_IPS = []
    settings.GRIDACE_METRICS_TOKEN = TOKEN
    client = Client(REMOTE_ADDR="203.0.113.9")
    assert client.get("/metrics").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


@pytest.mark.django_db
def test_without_allow_list_nor_token_the_endpoint_is_off(settings):
    settings.GRIDACE_METRICS_ALLOWED_IPS = []
    settings.GRIDACE_METRICS_TOKEN = ""
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 404


def test_a_malformed_allow_list_entry_fails_the_system_check(settings):
    from webapp.monitoring.checks import check_metrics_allowed_ips

    settings.GRIDACE_METRICS_ALLOWED_IPS = ["127.0.0.1", "localhost"]
    errors = check_metrics_allowed_ips(None)
    assert [e.id for e in errors] == ["monitoring.E001"] and "'localhost'" in errors[0].msg


# ----- values -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_http_latency_is_counted_per_view(engineer):
    before = scrape()
    client_for(None).get("/login/")
    client_for(engineer).get("/runs/")
    client_for(None).get("/no/such/page/")
    after = scrape()
    count = "gridace_http_request_duration_seconds_count"
    for view, status in (("accounts:login", "200"), ("training:run_list", "200"), ("<unresolved>", "404")):
        labels = {"view": view, "method": "GET", "status": status}
        assert value(after, count, **labels) - value(before, count, **labels) == 1, view


@pytest.mark.django_db
def test_training_runs_queues_and_heartbeats_come_from_the_database(make_run):
    queued, running, failed = make_run(), make_run(), make_run()
    TrainingRun.objects.filter(pk=running.pk).update(
        status=JobStatus.RUNNING, heartbeat_at=timezone.now() - timedelta(seconds=30)
    )
    TrainingRun.objects.filter(pk=failed.pk).update(status=JobStatus.FAILED)
    samples = scrape()
    runs = {s: value(samples, "gridace_training_runs", status=s) for s in JobStatus.values}
    assert runs == {"queued": 1, "running": 1, "succeeded": 0, "cancelled": 0, "failed": 1}
    assert value(samples, "gridace_task_queue_depth", queue="training") == 3  # one task per launch
    assert value(samples, "gridace_tasks_running", queue="training") == 0
    age = value(samples, "gridace_worker_heartbeat_age_seconds", kind="training_run", id=str(running.pk))
    assert 30 <= age < 90
    assert (
        "gridace_worker_heartbeat_age_seconds",
        (("id", str(queued.pk)), ("kind", "training_run")),
    ) not in samples


@pytest.mark.django_db
def test_live_sessions_step_lag_and_recommendation_latency(make_session):
    session = make_session(speed_seconds=2.0)
    run_feed(session, steps=4)
    late = make_session(speed_seconds=2.0)
    run_feed(late, steps=2, token="worker-b")
    # its worker stalled: the last step was 100 s ago, at a pace of one step per 2 s
    SessionStep.objects.filter(session=late).update(stepped_at=timezone.now() - timedelta(seconds=100))

    samples = scrape()
    assert value(samples, "gridace_live_sessions", status="running") == 2
    assert value(samples, "gridace_live_sessions", status="paused") == 0
    assert 97 <= value(samples, "gridace_live_session_step_lag_seconds", session=str(late.pk)) < 160
    assert value(samples, "gridace_live_session_step_lag_seconds", session=str(session.pk)) < 60

    timed = list(SessionStep.objects.exclude(recommend_ms=None).values_list("recommend_ms", flat=True))
    assert len(timed) >= 6
    name = "gridace_recommendation_duration_seconds"
    assert value(samples, f"{name}_count") == len(timed)
    assert value(samples, f"{name}_sum") == pytest.approx(sum(timed) / 1000)
    assert value(samples, f"{name}_bucket", le="0.1") == sum(ms <= 100 for ms in timed)
    assert value(samples, f"{name}_bucket", le="+Inf") == len(timed)


@pytest.mark.django_db
def test_llm_calls_and_their_errors_are_counted():
    server = ChatServer()
    serving = _serve(server)
    next(serving)
    try:
        backend = OpenAICompatBackend(base_url=server.url, model="tiny", max_retries=0)
        before = scrape()
        server.script = [("json", 200, ChatServer.reply("hello")), ("json", 400, {"error": "bad request"})]
        assert backend.chat([{"role": "user", "content": "hi"}], max_new_tokens=4) == "hello"
        with pytest.raises(LLMError):
            backend.chat([{"role": "user", "content": "hi"}], max_new_tokens=4)
        after = scrape()
    finally:
        next(serving, None)
    calls = "gridace_llm_call_duration_seconds_count"
    errors = "gridace_llm_call_errors_total"
    labels = {"backend": "openai", "call": "chat"}
    assert value(after, calls, **labels) - value(before, calls, **labels) == 2
    failed = {**labels, "error": "HTTPStatusError"}
    assert value(after, errors, **failed) - value(before, errors, **failed) == 1


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_open_websockets_are_counted_per_route(reviewer, engineer, make_run):
    run = await sync_to_async(make_run)()
    gauge = "gridace_websockets_connected"
    review, runs = {"route": "/ws/review/"}, {"route": "/ws/runs/<id>/"}
    before = await sync_to_async(scrape)()
    sockets = [
        communicator("/ws/review/", await sync_to_async(socket_headers)(reviewer)),
        communicator("/ws/review/", await sync_to_async(socket_headers)(reviewer)),
        communicator(f"/ws/runs/{run.pk}/", await sync_to_async(socket_headers)(engineer)),
    ]
    refused = communicator("/ws/review/", await sync_to_async(socket_headers)(engineer))
    for socket in sockets:
        assert (await socket.connect())[0]
    assert not (await refused.connect())[0]
    during = await sync_to_async(scrape)()
    assert value(during, gauge, **review) - value(before, gauge, **review) == 2
    assert value(during, gauge, **runs) - value(before, gauge, **runs) == 1
    for socket in sockets:
        await socket.disconnect()
    after = await sync_to_async(scrape)()
    assert value(after, gauge, **review) == value(before, gauge, **review)
    assert value(after, gauge, **runs) == value(before, gauge, **runs)


def test_a_worker_process_serves_its_own_metrics_when_a_port_is_set():
    import socket
    import urllib.request

    from webapp.monitoring.apps import start_worker_exporter

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert not start_worker_exporter(["manage.py", "runserver"], port, "127.0.0.1")
    assert not start_worker_exporter(["manage.py", "db_worker"], 0, "127.0.0.1")
    assert start_worker_exporter(["manage.py", "db_worker"], port, "127.0.0.1")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    assert "gridace_llm_call_duration_seconds" in text
    assert "gridace_training_runs" not in text  # the database's figures are the web server's
