"""The audit page in words: one summary line per entry, details collapsed, a config as its
difference from the recipe it came from (:mod:`webapp.audit.summaries`)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from ace_core.config import TrainConfig
from ace_core.training.recipes import DEFAULT_RECIPE, recipe_get
from tests.webapp.conftest import client_for
from webapp.audit.models import AuditEntry
from webapp.audit.services import audit_record
from webapp.audit.summaries import config_diff, entry_view, value_text
from webapp.review.services import refinement_decide
from webapp.training.services.runs import run_launch

pytestmark = pytest.mark.django_db


def test_a_launch_from_a_recipe_lists_only_the_settings_it_changed(engineer):
    recipe = recipe_get(DEFAULT_RECIPE)
    steps = recipe.settings["steps"] // 2
    run = run_launch(config=recipe.config(steps=steps, seed=7), launched_by=engineer)
    entry = AuditEntry.objects.get(action="run.launch", target_id=str(run.pk))
    view = entry_view(entry)
    # the seed is every run's own, so only the step count differs from the recipe
    assert view.config.base == DEFAULT_RECIPE and view.config.rows == [
        ("steps", str(recipe.settings["steps"]), str(steps))
    ]
    assert view.summary == (
        f"{engineer.username} · run.launch · {run} · recipe {DEFAULT_RECIPE} with 1 changed setting: steps"
    )
    # the config is not repeated among the entry's values, nor the empty label
    assert view.rows == []


def test_a_config_with_no_recipe_of_its_grid_is_told_against_the_defaults():
    defaults = TrainConfig().to_dict()
    config = {**defaults, "env": "l2rpn_case14_sandbox", "steps": defaults["steps"] + 1, "llm": "random"}
    diff = config_diff(config)
    assert diff.base == "defaults" and not diff.exact
    changed = {name for name in ("env", "steps", "llm") if config[name] != defaults[name]}
    assert {name for name, _, _ in diff.rows} == changed and "steps" in changed


def test_values_are_words_never_python_reprs():
    assert value_text({"a": 1}) == '{"a": 1}'
    assert value_text(["line 1-4", "line 3-4"]) == "line 1-4, line 3-4"
    assert value_text(None) == "–" and value_text(True) == "yes" and value_text(0.25) == "0.25"


def test_the_page_has_one_summary_line_per_entry_and_details_collapsed(
    reviewer, engineer, make_run, make_refinement
):
    run = make_run()
    refinement = make_refinement(run)
    refinement_decide(refinement=refinement, run=run, reviewer=reviewer, decision="reject", comment="unsafe")
    audit_record(
        actor=engineer,
        action="checkpoint.deploy",
        target=run,
        before={"deployed_checkpoint": None},
        after={"deployed_checkpoint": 3, "guard": {"survival": 0.8, "do_nothing": 0.7}},
    )
    html = client_for(reviewer).get(reverse("audit:entry_list")).content.decode()
    assert html.count('<details class="audit-entry"') == AuditEntry.objects.count() == 3
    assert "<details open" not in html  # collapsed until asked
    summaries = re.findall(r'<span class="audit-summary">(.*?)</span>', html, re.S)
    assert summaries == [
        f"{engineer.username} · checkpoint.deploy · {escape(str(run))} · deployed_checkpoint – → 3",
        f"{reviewer.username} · refinement.reject · {escape(str(refinement))} · status pending → rejected"
        " · “unsafe”",
        f"{engineer.username} · run.launch · {escape(str(run))} · {escape(config_diff(run.config).words)}",
    ]
    # the details: nested values by dotted name, the config as a short diff, no Python dict
    assert "<td>guard.survival</td>" in html and "<caption>Config: " in html
    assert "{&#x27;" not in html and "&#x27;: " not in html
