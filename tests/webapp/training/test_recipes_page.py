"""The launch page offers named recipes first and starts from the best measured one; every raw
setting stays under Advanced; what is posted is what the run gets."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from django.urls import reverse

from ace_core.training.recipes import DEFAULT_RECIPE, GRID_14_BUS, RECIPES, quickest_recipe
from tests.webapp.conftest import client_for
from webapp.training.models import TrainingRun

pytestmark = pytest.mark.django_db


def _launch_page(client, **query) -> tuple[int, str, object]:
    response = client.get(reverse("training:run_launch"), query)
    return response.status_code, response.content.decode(), response.context["form"]


def _no_inline_code(html: str) -> None:
    """Only scripts from files and JSON data blocks (the site is getting a Content-Security-Policy)."""
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert "src=" in tag or 'type="application/json"' in tag, tag
    assert not re.search(r"\son[a-z]+=", html.split("<main>")[1]), "inline event handler"
    assert " style=" not in html.split("<main>")[1]


def test_the_page_starts_from_the_quickest_measured_recipe_of_the_grid(engineer):
    """An engineer sees a result in minutes before choosing a longer recipe: the quickest measured
    one of the default grid, of ``?env=`` when given; a grid with no measured recipe starts from
    its own settings (custom), on that grid."""
    measured = {name: r.minutes for name, r in RECIPES.items() if r.minutes is not None}
    assert DEFAULT_RECIPE == quickest_recipe(GRID_14_BUS) == min(measured, key=measured.get)
    assert RECIPES[DEFAULT_RECIPE].minutes <= RECIPES["ace-14bus-offline"].minutes / 10
    client = client_for(engineer)
    assert _launch_page(client, env=GRID_14_BUS)[2]["recipe"].value() == DEFAULT_RECIPE
    _, _, form = _launch_page(client, env="l2rpn_wcci_2020")
    assert quickest_recipe("l2rpn_wcci_2020") is None
    assert (form["recipe"].value(), form["env"].value()) == ("", "l2rpn_wcci_2020")
    # an explicit choice wins, custom included
    assert _launch_page(client, recipe="sac-14bus", env=GRID_14_BUS)[2]["recipe"].value() == "sac-14bus"
    assert _launch_page(client, recipe="")[2]["recipe"].value() == ""


def test_the_starting_recipe_fills_the_settings_under_advanced(engineer):
    status, html, form = _launch_page(client_for(engineer))
    assert status == 200
    best = RECIPES[DEFAULT_RECIPE].values()
    assert form["recipe"].value() == DEFAULT_RECIPE
    for name in (
        "llm",
        "critic",
        "actor_selection",
        "imitation",
        "finetune_every",
        "actor_every",
        "llm_budget",
        "steps",
    ):
        assert form[name].value() == best[name], name
    # the recipe select comes first, each recipe's description is on the page, raw settings folded
    assert html.index('id="id_recipe"') < html.index('id="advanced"') < html.index('id="id_gamma"')
    assert re.search(r'<details id="advanced" class="advanced">', html)  # closed until asked for
    for name, recipe in RECIPES.items():
        assert f'<option value="{name}"' in html and recipe.description in unescape(html)
    presets = json.loads(html.split('id="recipe-presets" type="application/json">')[1].split("</script>")[0])
    assert presets["sac-14bus"]["values"]["steps"] == 30_000 and presets[""]["values"]["steps"] == 20_000
    assert "js/run_launch.js" in html
    _no_inline_code(html)


def test_a_recipe_named_in_the_address_fills_the_settings_without_script(engineer):
    status, _, form = _launch_page(client_for(engineer), recipe="sac-14bus")
    assert status == 200 and form["recipe"].value() == "sac-14bus"
    assert (form["llm"].value(), form["steps"].value(), form["env"].value()) == (
        "none",
        30_000,
        "rte_case14_realistic",
    )
    _, _, custom = _launch_page(client_for(engineer), recipe="")
    assert (custom["recipe"].value(), custom["steps"].value(), custom["llm"].value()) == ("", 20_000, "none")


def test_an_unknown_recipe_in_the_address_is_refused_with_the_accepted_names(engineer):
    status, html, form = _launch_page(client_for(engineer), recipe="fastest")
    assert status == 400
    assert "unknown recipe &#x27;fastest&#x27;; accepted: ace-14bus-offline, random-refine-14bus" in html
    assert form["recipe"].value() == DEFAULT_RECIPE  # the page is still usable


def _post_data(recipe: str, **overrides) -> dict:
    values = {**RECIPES[recipe].values(), **overrides} if recipe else overrides
    data = {key: value for key, value in values.items() if value is not False}  # unticked: absent
    return {**data, "recipe": recipe, "label": "from a recipe"}


def test_the_posted_settings_are_what_the_run_gets_and_the_list_names_its_recipe(engineer):
    client = client_for(engineer)
    response = client.post(reverse("training:run_launch"), _post_data("sac-14bus", seed=4))
    assert response.status_code == 302
    run = TrainingRun.objects.get()
    assert run.config == RECIPES["sac-14bus"].config(seed=4).to_dict()
    # changed under Advanced after choosing the recipe: the recipe, edited
    client.post(reverse("training:run_launch"), _post_data("sac-14bus", gamma=0.95))
    changed = TrainingRun.objects.exclude(pk=run.pk).get()
    assert changed.config["gamma"] == 0.95 and changed.config["steps"] == 30_000
    listing = client.get(reverse("training:run_list")).content.decode()
    rows = {
        pk: re.search(rf'<tr id="run-{pk}">(.*?)</tr>', listing, re.S).group(1) for pk in (run.pk, changed.pk)
    }
    assert '<td class="recipe">sac-14bus</td>' in rows[run.pk]
    assert (
        '<td class="recipe" title="changed from the recipe: gamma: 0.99 → 0.95">sac-14bus, edited: gamma</td>'
        in (rows[changed.pk])
    )


def test_an_unknown_posted_recipe_is_refused_on_its_field(engineer):
    response = client_for(engineer).post(
        reverse("training:run_launch"), _post_data("sac-14bus") | {"recipe": "x"}
    )
    assert response.status_code == 400
    assert "unknown recipe x; accepted: ace-14bus-offline" in " ".join(
        response.context["form"].errors["recipe"]
    )
    assert '<details id="advanced" class="advanced" open>' in response.content.decode()
    assert not TrainingRun.objects.exists()


def test_the_compare_page_has_no_inline_code(engineer, make_run):
    run = make_run()
    html = client_for(engineer).get(reverse("training:run_compare"), {"run": run.pk}).content.decode()
    _no_inline_code(html)


def test_launch_run_command_starts_from_a_recipe_and_refuses_unknown_ones(engineer):
    from django.core.management import CommandError, call_command

    call_command("launch_run", "--user", engineer.username, "--recipe", "sac-14bus", "--set", "seed=2")
    assert TrainingRun.objects.get().config == RECIPES["sac-14bus"].config(seed=2).to_dict()
    with pytest.raises(CommandError, match="unknown recipe 'fast'; accepted: ace-14bus-offline"):
        call_command("launch_run", "--user", engineer.username, "--recipe", "fast")
