"""An engineer launches a run from a recipe, and compares evaluated runs: curves overlaid,
evaluations side by side. Real Chromium against a real daphne server."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from ace_core.training.recipes import DEFAULT_RECIPE, RECIPES
from tests.browser.conftest import browser, in_thread, log_in
from tests.webapp.training.test_compare import BASELINES, evaluation_end, report
from webapp.accounts.services import role_groups_sync, user_create_with_role
from webapp.training.models import Checkpoint, EpisodeRecord, Evaluation, MetricPoint, TrainingRun
from webapp.training.services.runs import run_launch

PASSWORD = "engineer-browser-pass-2"


def _console_errors(page) -> list[str]:
    """Script errors and failed loads of the pages (the browser's own favicon request aside)."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "response",
        lambda response: (
            errors.append(f"{response.status} {response.url}")
            if response.status >= 400 and not response.url.endswith("/favicon.ico")
            else None
        ),
    )
    return errors


def test_engineer_launches_a_run_from_a_recipe(process_env, server, artifacts, tmp_path):
    role_groups_sync()
    user_create_with_role(username="eng", password=PASSWORD, role="engineer")

    with browser(tmp_path) as page:
        errors = _console_errors(page)
        log_in(page, server, "eng", PASSWORD)
        page.goto(f"{server}/runs/launch/")
        # the page starts from the quickest measured recipe, its settings folded under Advanced
        assert page.input_value("#id_recipe") == DEFAULT_RECIPE == "random-refine-14bus"
        assert page.text_content("#recipe-description") == RECIPES[DEFAULT_RECIPE].description
        assert not page.is_visible("#id_gamma")
        page.screenshot(path=artifacts / "01-launch-default-recipe.png", full_page=True)

        page.select_option("#id_recipe", "sac-14bus")
        assert page.text_content("#recipe-description") == RECIPES["sac-14bus"].description
        page.click("#advanced > summary")
        assert (page.input_value("#id_llm"), page.input_value("#id_steps")) == ("none", "30000")
        assert page.is_hidden("#recipe-changes")

        # a setting changed after choosing: the page says which
        page.fill("#id_gamma", "0.95")
        page.wait_for_selector("#recipe-changes", state="visible")
        assert "1 setting(s) differ from sac-14bus: gamma" in page.text_content("#recipe-changes")
        page.screenshot(path=artifacts / "02-launch-changed-setting.png", full_page=True)

        # a recipe picked from the list of all recipes fills every setting again
        page.click("#recipe-list > summary")
        page.click("a[data-recipe=random-refine-14bus]")
        assert page.input_value("#id_recipe") == "random-refine-14bus"
        assert (page.input_value("#id_gamma"), page.input_value("#id_llm")) == ("0.99", "random")
        assert not page.is_checked("#id_critic") and page.input_value("#id_actor_selection") == "random"
        page.fill("#id_label", "from the random-refine recipe")
        page.click("#launch")
        page.wait_for_url(f"{server}/runs/*/")
        page.screenshot(path=artifacts / "03-run-queued.png", full_page=True)
        assert errors == []

    run = in_thread(lambda: TrainingRun.objects.get(label="from the random-refine recipe"))
    assert run.config == RECIPES["random-refine-14bus"].config().to_dict()  # exactly the recipe


def _evaluated_runs(user) -> list[TrainingRun]:
    """Two runs with their curves and a validation evaluation each (rows: the pages are under test)."""
    runs = []
    for seed, (survived, reward) in enumerate([(200, 40.0), (120, 25.0)]):
        run = run_launch(
            config=RECIPES["sac-14bus"].config(seed=seed), launched_by=user, label=f"seed {seed}"
        )
        for step in (500, 1000, 1500):
            EpisodeRecord.objects.create(
                run=run,
                step=step,
                index=step,
                scenario="s",
                steps_survived=step // (10 + 5 * seed),
                max_steps=288,
                reward=reward * step / 1500,
            )
            MetricPoint.objects.create(
                run=run, step=step, values={"losses/qf1_loss": 1.0 / step, "charts/SPS": 90.0 - 20 * seed}
            )
        checkpoint = Checkpoint.objects.create(run=run, step=30_000, path="/x.pt")
        evaluation = Evaluation.objects.create(
            run=run, checkpoint=checkpoint, split="validation", nb_episode=2, requested_by=user
        )
        own = report("sac", [(survived, 200, reward), (survived, 200, reward)])
        evaluation_end(evaluation, {"ace": own, **BASELINES})
        runs.append(run)
    return runs


def test_engineer_compares_two_evaluated_runs(process_env, server, artifacts, tmp_path):
    role_groups_sync()
    user = user_create_with_role(username="eng", password=PASSWORD, role="engineer")
    first, second = _evaluated_runs(get_user_model().objects.get(pk=user.pk))

    with browser(tmp_path) as page:
        errors = _console_errors(page)
        log_in(page, server, "eng", PASSWORD)
        page.goto(f"{server}/runs/")
        assert page.text_content(f"#run-{first.pk} td.outcome").strip() == "1.000"
        assert page.text_content(f"#run-{second.pk} td.outcome").strip() == "0.600"
        page.check(f"#select-run-{first.pk}")
        page.check(f"#select-run-{second.pk}")
        page.screenshot(path=artifacts / "01-runs-selected.png", full_page=True)
        page.click("#compare")
        page.wait_for_url(f"{server}/runs/compare/?run=*")

        # the settings that differ, above the curves: the two runs differ by their seed alone
        settings = page.locator("#config-diff tbody tr")
        assert settings.count() == 1
        runs = [text.strip() for text in page.locator("#config-diff thead th").all_text_contents()]
        cells = [text.strip() for text in settings.first.locator("th, td").all_text_contents()]
        assert dict(zip(runs, cells)) == {
            "Setting": "seed",
            f"#{first.pk} seed 0": "0",
            f"#{second.pk} seed 1": "1",
        }

        # one trace per run on each chart, drawn by plotly
        page.wait_for_selector("#compare-survival .main-svg")
        assert page.get_attribute("#compare-survival", "data-traces") == "2"
        assert page.input_value("#compare-metric") == "losses/qf1_loss"
        page.select_option("#compare-metric", "charts/SPS")
        page.wait_for_function(
            "document.querySelector('#compare-metric-chart .gtitle').textContent"
            " === 'Training speed (steps per second)'"
        )
        assert page.get_attribute("#compare-metric-chart", "data-traces") == "2"

        table = page.text_content("#evaluations-1")
        assert f"#{first.pk} seed 0" in table and f"#{second.pk} seed 1" in table
        assert "1.000 ± 0.000" in table and "0.600 ± 0.000" in table and "do-nothing" in table
        page.screenshot(path=artifacts / "02-compare.png", full_page=True)
        assert errors == []
