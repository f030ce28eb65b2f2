"""Two agents on one day in Chromium: the day-comparison page draws both diagrams at the same
step, one slider and one play button move them together, and no CSP violation is reported.

The episodes are real Runner output (doing nothing and the greedy expert, 30 steps of one test
day) written where the server finds evaluations. With ``GRIDACE_SCREENSHOTS=1`` the screenshot
also goes to ``docs/screenshots/day-compare.png``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ace_core.evaluation.runner import evaluate
from tests.browser.conftest import ROOT, browser, in_thread, log_in
from tests.browser.test_csp import VIOLATIONS
from webapp.accounts.services import role_groups_sync, user_create_with_role
from webapp.jobs.models import JobStatus
from webapp.training.models import Checkpoint, Evaluation, TrainingRun

PASSWORD = "compare-browser-pass-1"
ENV = "l2rpn_case14_sandbox"
LENGTH = 30
AGENTS = {"do-nothing": "do-nothing", "greedy": "greedy:budget=200,threshold=0.5"}
SCREENSHOTS = ROOT / "docs" / "screenshots"
STEPS = "() => ['a', 'b'].map(id => (document.getElementById('diagram-' + id) || {dataset: {}}).dataset.step)"


def _set_up(runs: Path) -> tuple[str, str]:
    role_groups_sync()
    engineer = user_create_with_role(username="eng", password=PASSWORD, role="engineer")
    run = TrainingRun.objects.create(
        config={"env": ENV},
        env=ENV,
        total_steps=1,
        status=JobStatus.SUCCEEDED,
        launched_by=engineer,
        out_dir=str(runs / "run-compare"),
    )
    checkpoint = Checkpoint.objects.create(run=run, step=1, path=str(runs / "none.pt"))
    evaluation = Evaluation.objects.create(
        run=run,
        checkpoint=checkpoint,
        split="test",
        nb_episode=1,
        requested_by=engineer,
        status=JobStatus.SUCCEEDED,
        results={name: {} for name in AGENTS},
    )
    keys = []
    for name, spec in AGENTS.items():
        out = runs / "run-compare" / "evaluations" / str(evaluation.pk) / name
        (episode,) = evaluate(ENV, spec, "test", nb_episode=1, out_dir=out, episode_length=LENGTH)["episodes"]
        keys.append(
            f"runs/run-compare/evaluations/{evaluation.pk}/{name}/episodes/seed0/{episode['scenario']}"
        )
    return keys[0], keys[1]


def test_two_agents_on_one_day_move_together(process_env, server, artifacts, tmp_path):
    a, b = in_thread(lambda: _set_up(Path(process_env["GRIDACE_RUNS_DIR"])))
    with browser(tmp_path) as page:
        page.add_init_script(VIOLATIONS)
        log_in(page, server, "eng", PASSWORD)
        page.goto(f"{server}/live/compare/")
        page.select_option("#compare-a", a)
        page.select_option("#compare-b", b)
        with page.expect_navigation():
            page.click("#compare-form button[type=submit]")
        page.wait_for_function(f"() => ({STEPS})().every(s => s === '0')", timeout=60_000)
        assert "Topology actions per substation" in page.text_content("#compare-kpis")
        # the slider moves both diagrams to the same step
        page.evaluate(
            "() => { const s = document.getElementById('compare-slider'); s.value = 12;"
            " s.dispatchEvent(new Event('input')); }"
        )
        page.wait_for_function(f"() => ({STEPS})().every(s => s === '12')")
        assert page.text_content("#compare-step") == "12"
        # play: both advance together, step by step, to the end of the day
        page.click("#compare-play")
        assert page.text_content("#compare-play") == "Pause"
        page.wait_for_function(f"() => ({STEPS})().every(s => s === '{LENGTH}')", timeout=60_000)
        assert page.text_content("#compare-play") == "Play"
        page.screenshot(path=artifacts / "day-compare.png", full_page=True)
        assert page.evaluate("() => window.__csp") == []
    if os.environ.get("GRIDACE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(artifacts / "day-compare.png", SCREENSHOTS / "day-compare.png")
