"""An engineer launches a tiny run from the page and watches its chart grow live."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime

from tests.browser.conftest import browser, in_thread, log_in
from webapp.accounts.services import role_groups_sync, user_create_with_role
from webapp.jobs.models import JobStatus
from webapp.training.models import MetricPoint, TrainingRun

PASSWORD = "engineer-browser-pass-1"
TINY = {
    "env": "l2rpn_case14_sandbox",
    "steps": "300",
    "learning_starts": "32",
    "batch_size": "32",
    "log_every": "50",
    "checkpoint_every": "100",
}


def _chart_points(page) -> int:
    return int(page.get_attribute("#charts", "data-points") or 0)


def test_engineer_launches_a_tiny_run_and_sees_its_chart_grow(
    process_env, server, worker, artifacts, tmp_path
):
    role_groups_sync()
    user_create_with_role(username="eng", password=PASSWORD, role="engineer")

    with browser(tmp_path) as page:
        log_in(page, server, "eng", PASSWORD)
        page.screenshot(path=artifacts / "01-home.png", full_page=True)

        page.goto(f"{server}/runs/launch/")
        page.screenshot(path=artifacts / "02-launch-form.png", full_page=True)

        # No recipe (the trainer's defaults, no LLM), then the settings under Advanced.
        page.select_option("#id_recipe", "")
        page.click("#advanced > summary")
        # A bad value is refused on its field, with what is accepted.
        for name, value in {**TINY, "gamma": "1.5"}.items():
            page.fill(f"#id_{name}", value) if name != "env" else page.select_option("#id_env", value)
        page.click("#launch")
        error = page.text_content("#field-gamma .field-error")
        assert "gamma=1.5 is out of range; accepted: 0.0 to 1.0" in error
        page.screenshot(path=artifacts / "03-launch-refused.png", full_page=True)

        page.fill("#id_gamma", "0.99")
        page.fill("#id_label", "browser tiny run")
        page.click("#launch")
        page.wait_for_url(f"{server}/runs/*/")
        run_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
        page.wait_for_function("() => document.getElementById('live-state').textContent === 'live'")

        # First live point, without reloading the page.
        page.wait_for_function(
            "() => Number(document.getElementById('charts').dataset.points || 0) > 0", timeout=90_000
        )
        first_point_seen = time.time()
        first = _chart_points(page)
        page.screenshot(path=artifacts / "04-run-first-points.png", full_page=True)

        # More points without a reload, unless the run had already ended (a loaded machine can
        # finish the tiny run before the page's socket opens: all its points then come at once).
        page.wait_for_function(
            f"""() => Number(document.getElementById('charts').dataset.points || 0) > {first}
                || !document.getElementById('run-status').textContent.startsWith('running')""",
            timeout=90_000,
        )
        grew_live = _chart_points(page) > first
        ended = in_thread(lambda: TrainingRun.objects.get(pk=run_id).status) != JobStatus.RUNNING
        assert grew_live or ended
        page.wait_for_function(
            "() => document.getElementById('run-status').textContent.startsWith('succeeded')", timeout=180_000
        )
        page.wait_for_selector("#checkpoint-card form #deploy")  # the page reloads with the final actions
        page.wait_for_function("() => Number(document.getElementById('charts').dataset.points || 0) > 0")
        assert page.locator("#chart-speed .main-svg").count() > 0  # plotly drew the charts
        assert "300" in page.text_content("#run-progress")
        assert page.locator("#cancel").count() == 0
        page.screenshot(path=artifacts / "05-run-succeeded.png", full_page=True)

        page.goto(f"{server}/runs/")
        assert "browser tiny run" in page.text_content("#runs")
        page.screenshot(path=artifacts / "06-run-list.png", full_page=True)

    run = in_thread(lambda: TrainingRun.objects.get(pk=run_id))
    first_row = in_thread(lambda: MetricPoint.objects.filter(run_id=run_id).order_by("id").first())
    assert run.status == JobStatus.SUCCEEDED
    latency = first_point_seen - datetime.timestamp(run.started_at)
    figures = {
        "first_chart_point_seconds_after_worker_started_run": round(latency, 2),
        "of_which_trainer_until_first_metrics_row": round(
            (first_row.created_at - run.started_at).total_seconds(), 2
        ),
        "chart_grew_live": grew_live,
        "trainer": "ace_core",
        "load_average_1min": os.getloadavg()[0],
    }
    (artifacts / "figures.json").write_text(json.dumps(figures, indent=2))
    # A figure to report, not a timed assertion (it depends on the machine's load).
    print(f"\nfirst chart point shown {latency:.1f} s after the worker started the run: {figures}")
