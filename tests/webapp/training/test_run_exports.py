"""A run's metrics and episodes as CSV (what its charts draw), behind the run page's permission,
with the keys asked for checked; and the run page's chart controls and CSV links."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from ace_core.events import EpisodeEvent, MetricsEvent
from tests.webapp.conftest import client_for
from webapp.training.services.events import episode_record, metrics_record

pytestmark = pytest.mark.django_db


def _rows(response) -> list[list[str]]:
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


@pytest.fixture
def reported(make_run):
    run = make_run(label="exported")
    metrics_record(
        run_id=run.pk, event=MetricsEvent(step=50, values={"losses/qf1_loss": 2.5, "charts/SPS": 40.0})
    )
    metrics_record(run_id=run.pk, event=MetricsEvent(step=100, values={"charts/SPS": 42.0}))
    metrics_record(run_id=run.pk, event=MetricsEvent(step=150, values={"losses/qf1_loss": 1.5}))
    for index, step in enumerate((60, 140)):
        event = EpisodeEvent(
            step=step, index=index, scenario="0@0", steps_survived=72, max_steps=288, reward=3.0
        )
        episode_record(run_id=run.pk, event=event)
    return run


def test_the_metrics_asked_for_one_row_per_report_that_has_them(engineer, reported):
    url = reverse("training:run_metrics_csv", args=[reported.pk])
    response = client_for(engineer).get(url, {"keys": "losses/qf1_loss"})
    assert response.status_code == 200
    assert f'filename="run-{reported.pk}-metrics.csv"' in response["Content-Disposition"]
    rows = _rows(response)
    assert rows[0] == ["step", "time_utc", "losses/qf1_loss"]
    assert [(row[0], row[2]) for row in rows[1:]] == [("50", "2.5"), ("150", "1.5")]
    assert rows[1][1].startswith("20") and "T" in rows[1][1]  # ISO time of the report
    # several keys (comma-separated or repeated); a report lacking one leaves its cell empty
    rows = _rows(client_for(engineer).get(url, {"keys": ["charts/SPS", "losses/qf1_loss"]}))
    assert [row[:1] + row[2:] for row in rows] == [
        ["step", "charts/SPS", "losses/qf1_loss"],
        ["50", "40.0", "2.5"],
        ["100", "42.0", ""],
        ["150", "", "1.5"],
    ]
    # no keys: every metric of the run
    assert _rows(client_for(engineer).get(url))[0] == ["step", "time_utc", "charts/SPS", "losses/qf1_loss"]


def test_an_unknown_key_is_refused_naming_the_keys_accepted(engineer, reported):
    url = reverse("training:run_metrics_csv", args=[reported.pk])
    response = client_for(engineer).get(url, {"keys": "losses/qf1_loss,charts/nope"})
    assert response.status_code == 400
    assert response.content.decode().startswith(
        f"run {reported.pk} has no metric charts/nope; accepted: charts/SPS, losses/qf1_loss"
    )


def test_the_episodes_as_the_reward_and_survival_charts_show_them(engineer, reported):
    response = client_for(engineer).get(reverse("training:run_episodes_csv", args=[reported.pk]))
    assert _rows(response) == [
        ["step", "index", "scenario", "steps_survived", "max_steps", "survival", "reward"],
        ["60", "0", "0@0", "72", "288", "0.25", "3.0"],
        ["140", "1", "0@0", "72", "288", "0.25", "3.0"],
    ]


def test_csv_has_the_run_pages_permission(role_users, reported):
    for name in ("run_metrics_csv", "run_episodes_csv"):
        url = reverse(f"training:{name}", args=[reported.pk])
        for role in ("operator", "reviewer", "none"):
            assert client_for(role_users[role]).get(url).status_code == 403, (name, role)
        assert client_for(None).get(url).status_code == 302
        assert client_for(role_users["engineer"]).get(url).status_code == 200
    assert (
        client_for(role_users["engineer"]).get(reverse("training:run_metrics_csv", args=[999999])).status_code
        == 404
    )


def test_the_run_page_has_the_chart_controls_and_the_csv_links(engineer, reported):
    html = client_for(engineer).get(reverse("training:run_detail", args=[reported.pk])).content.decode()
    assert '<input type="range" id="chart-smoothing" min="0" max="0.99" step="0.01" value="0"' in html
    assert 'id="chart-log"' in html
    for axis in ("step", "decisions", "time"):
        assert f'<option value="{axis}">' in html
    metrics_csv = reverse("training:run_metrics_csv", args=[reported.pk])
    assert f'href="{metrics_csv}" id="csv-metrics"' in html
    assert f'data-metrics-csv="{metrics_csv}"' in html
    assert f'href="{reverse("training:run_episodes_csv", args=[reported.pk])}" id="csv-episodes"' in html
