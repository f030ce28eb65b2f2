"""An engineer launches a tiny run from the page and watches its chart grow live; deploys a run's
policy through the guard (refused without an evaluation, allowed with an audited override) and
rolls back."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from pathlib import Path

from tests.browser.conftest import browser, in_thread, log_in
from tests.webapp.conftest import tiny_config
from webapp.accounts.services import role_groups_sync, user_create_with_role
from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.training.models import Checkpoint, MetricPoint, TrainingRun
from webapp.training.selectors.deployments import deployment_current
from webapp.training.services.deployment import run_deploy
from webapp.training.services.runs import run_finish, run_launch, run_start

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
        page.wait_for_selector("#checkpoint-card #deploy")  # the page reloads with the final actions
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


def _succeeded_run(engineer, label: str) -> TrainingRun:
    """A run recorded as a worker records it: launched, started, its checkpoint (an untrained
    policy of the sandbox grid) written, succeeded."""
    from ace_core.live import untrained_policy

    run = run_launch(config=tiny_config(), launched_by=engineer, label=label)
    run_start(run_id=run.pk, attempt=1, worker_token="worker")
    policy = untrained_policy(run.env, Path(run.out_dir) / "checkpoint.pt", hidden=32)
    Checkpoint.objects.create(run=run, step=run.total_steps, path=str(policy))
    return run_finish(run_id=run.pk, worker_token="worker")


def test_deploy_is_refused_without_an_evaluation_and_allowed_with_an_audited_override(
    process_env, server, artifacts, tmp_path, settings
):
    """The deploy button opens a confirmation that shows what the guard found; without a finished
    test evaluation the deploy is refused, naming it, and nothing is deployed; with an override
    and a written reason it goes through, audited; the runs list marks the deployed run and rolls
    back to the deployment before in one click."""
    settings.GRIDACE_RUNS_DIR = Path(process_env["GRIDACE_RUNS_DIR"])  # where the server looks too
    role_groups_sync()
    engineer = user_create_with_role(username="eng", password=PASSWORD, role="engineer")
    earlier = _succeeded_run(engineer, "earlier policy")
    run_deploy(run=earlier, user=engineer, override_reason="the policy the operators use today")
    run = _succeeded_run(engineer, "candidate")
    reason = "drill tonight: the operators rehearse with the candidate policy"

    with browser(tmp_path) as page:
        log_in(page, server, "eng", PASSWORD)
        page.goto(f"{server}/runs/{run.pk}/")
        page.click("#deploy")
        page.wait_for_selector("#deploy-guard")
        refusal = page.text_content("#guard-refusal")
        assert f"run {run.pk} has no finished evaluation on test days" in refusal
        page.screenshot(path=artifacts / "01-deploy-confirmation.png", full_page=True)

        page.click("#deploy-confirm")  # no override: refused, naming what is missing
        error = page.text_content("#deploy-error")
        assert f"deploy refused: run {run.pk} has no finished evaluation on test days" in error
        assert "or an override with a written reason" in error
        page.screenshot(path=artifacts / "02-deploy-refused.png", full_page=True)
        assert in_thread(lambda: deployment_current().checkpoint.run_id) == earlier.pk

        page.fill("#id_override_reason", reason)
        page.click("#deploy-confirm")
        page.wait_for_url(f"{server}/runs/{run.pk}/")
        assert reason in page.text_content("#deployed")
        page.screenshot(path=artifacts / "03-deployed-with-override.png", full_page=True)

        page.goto(f"{server}/runs/")
        assert page.locator(f"#run-{run.pk}-deployed").count() == 1
        assert page.locator(f"#run-{earlier.pk}-deployed").count() == 0
        page.screenshot(path=artifacts / "04-runs-list-deployed.png", full_page=True)
        page.click("#rollback")
        page.wait_for_selector(f"#run-{earlier.pk}-deployed")
        page.screenshot(path=artifacts / "05-rolled-back.png", full_page=True)

    def audit() -> tuple[dict, list[str], int]:
        deploy = AuditEntry.objects.filter(action="checkpoint.deploy").order_by("-id").first()
        actions = list(AuditEntry.objects.order_by("id").values_list("action", flat=True))
        return deploy.after, actions, deployment_current().checkpoint.run_id

    after, actions, deployed = in_thread(audit)
    assert after["override_reason"] == reason and after["guard"]["passed"] is False
    assert actions.count("checkpoint.deploy") == 2 and actions[-1] == "deployment.rollback"
    assert deployed == earlier.pk
