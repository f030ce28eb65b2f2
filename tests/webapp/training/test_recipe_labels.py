"""A run started from a recipe and then edited is labelled with the recipe and the settings
changed (runs list, run page, comparison page), not "custom"; the launch records the recipe."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse

from ace_core.errors import ConfigError
from ace_core.training.recipes import RECIPES
from tests.webapp.conftest import client_for
from webapp.audit.models import AuditEntry
from webapp.audit.summaries import ConfigDiff, entry_view
from webapp.training.models import TrainingRun
from webapp.training.selectors.run_labels import run_recipe_label
from webapp.training.services.runs import run_launch

pytestmark = pytest.mark.django_db


def _launch(engineer, recipe: str, record: bool = True, **changes) -> TrainingRun:
    config = RECIPES[recipe].config(seed=3, **changes)
    return run_launch(config=config, launched_by=engineer, recipe=recipe if record else "")


def _text(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", html))


def test_the_label_names_the_recipe_and_the_settings_changed(engineer, make_run):
    edited = _launch(engineer, "sac-14bus", steps=700, gamma=0.9)
    label = run_recipe_label(edited)
    assert label.text.startswith("sac-14bus, edited: ")
    assert set(label.text.removeprefix("sac-14bus, edited: ").split(", ")) == {"gamma", "steps"}
    assert {name for name, _, _ in label.changes} == {"gamma", "steps"}
    assert "gamma: 0.99 → 0.9" in label.details
    assert run_recipe_label(_launch(engineer, "sac-14bus")).text == "sac-14bus"  # the seed is not a change
    # without a recorded recipe: the recipe the config equals, else custom
    assert run_recipe_label(_launch(engineer, "sac-14bus", record=False)).text == "sac-14bus"
    assert run_recipe_label(_launch(engineer, "sac-14bus", record=False, steps=700)).text == "custom"
    assert run_recipe_label(make_run()).text == "custom"


def test_more_than_three_changes_are_counted(engineer):
    run = _launch(engineer, "sac-14bus", steps=700, gamma=0.9, tau=0.01, batch_size=32, q_lr=1e-4)
    assert run_recipe_label(run).text.endswith(" and 2 more")


def test_the_launch_form_records_the_recipe_it_started_from(engineer):
    values = {
        **RECIPES["sac-14bus"].config(seed=5, steps=900).to_dict(),
        "recipe": "sac-14bus",
        "label": "edited",
    }
    form = {name: value for name, value in values.items() if value is not None and value is not False}
    response = client_for(engineer).post(reverse("training:run_launch"), form)
    assert response.status_code == 302, response.content.decode()[-2000:]
    run = TrainingRun.objects.get(label="edited")
    assert run.from_recipe == "sac-14bus"
    assert run_recipe_label(run).text == "sac-14bus, edited: steps"
    # the audit page shows the config against that recipe
    entry = AuditEntry.objects.filter(action="run.launch", target_id=str(run.pk)).get()
    assert entry_view(entry).config == ConfigDiff("sac-14bus", False, [("steps", "30000", "900")])


def test_an_unknown_recipe_is_refused_at_launch(engineer):
    with pytest.raises(ConfigError, match="unknown recipe 'fast'; accepted: "):
        run_launch(config=RECIPES["sac-14bus"].config(), launched_by=engineer, recipe="fast")


def test_the_pages_show_the_recipe_and_the_changes(engineer, make_run):
    edited = _launch(engineer, "sac-14bus", steps=700)
    custom = make_run()
    client = client_for(engineer)
    listing = client.get(reverse("training:run_list")).content.decode()
    cell = re.search(rf'<tr id="run-{edited.pk}">.*?<td class="recipe"([^>]*)>(.*?)</td>', listing, re.S)
    assert _text(cell.group(2)).strip() == "sac-14bus, edited: steps"
    assert "steps: " in cell.group(1) and "→ 700" in unescape(cell.group(1))
    custom_cell = re.search(rf'<tr id="run-{custom.pk}">.*?<td class="recipe"[^>]*>(.*?)</td>', listing, re.S)
    assert _text(custom_cell.group(1)).strip() == "custom"
    page = client.get(reverse("training:run_detail", args=[edited.pk])).content.decode()
    assert _text(re.search(r'<span id="run-recipe"[^>]*>(.*?)</span>', page, re.S).group(1)) == (
        "recipe sac-14bus, edited: steps"
    )
    compare = client.get(reverse("training:run_compare"), {"run": [edited.pk, custom.pk]}).content.decode()
    assert "sac-14bus, edited: steps" in _text(compare)
