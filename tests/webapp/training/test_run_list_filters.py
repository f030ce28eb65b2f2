"""The runs list sorted and filtered by grid, recipe, status and tag on the server (query
parameters), a value it does not accept reported and left out (never an error page); and the tags
and note engineers put on a run, edited on its page and shown on the list."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from ace_core.training.recipes import RECIPES
from tests.webapp.conftest import client_for
from webapp.audit.models import AuditEntry
from webapp.jobs.models import JobStatus
from webapp.training.models import TrainingRun
from webapp.training.services.runs import run_launch

pytestmark = pytest.mark.django_db

OTHER_GRID = "l2rpn_wcci_2020"


def _listed(engineer, **query) -> list[int]:
    """The run ids the runs list shows, in its order."""
    html = client_for(engineer).get(reverse("training:run_list"), query).content.decode()
    return [int(pk) for pk in re.findall(r'<tr id="run-(\d+)">', html)]


def _notes(engineer, run: TrainingRun, tags: str, note: str = ""):
    return client_for(engineer).post(
        reverse("training:run_notes", args=[run.pk]), {"tags": tags, "note": note}
    )


@pytest.fixture
def runs(engineer, make_run) -> dict[str, TrainingRun]:
    """A custom run, one of recipe sac-14bus with its steps edited (the launch form records the
    recipe), one equal to random-refine-14bus without a recorded recipe, and a cancelled run on
    another grid; newest last."""
    custom = make_run(label="custom")
    edited = run_launch(
        config=RECIPES["sac-14bus"].config(seed=1, steps=700),
        launched_by=engineer,
        label="edited",
        recipe="sac-14bus",
    )
    exact = run_launch(
        config=RECIPES["random-refine-14bus"].config(seed=2), launched_by=engineer, label="exact"
    )
    other = make_run(label="other grid")
    TrainingRun.objects.filter(pk=other.pk).update(env=OTHER_GRID, status=JobStatus.CANCELLED)
    return {"custom": custom, "edited": edited, "exact": exact, "other": other}


def test_filters_by_grid_status_recipe_and_tag(engineer, runs):
    custom, edited, exact, other = runs.values()
    assert _listed(engineer) == [other.pk, exact.pk, edited.pk, custom.pk]
    assert _listed(engineer, grid=OTHER_GRID) == [other.pk]
    assert _listed(engineer, status="cancelled") == [other.pk]
    assert _listed(engineer, status="queued", grid=OTHER_GRID) == []
    # an edited recipe is still its recipe; a config equal to a recipe is that recipe
    assert _listed(engineer, recipe="sac-14bus") == [edited.pk]
    assert _listed(engineer, recipe="random-refine-14bus") == [exact.pk]
    assert _listed(engineer, recipe="custom") == [other.pk, custom.pk]
    _notes(engineer, edited, "baseline, long")
    _notes(engineer, custom, "baseline")
    assert _listed(engineer, tag="baseline") == [edited.pk, custom.pk]
    assert _listed(engineer, tag="long", recipe="sac-14bus") == [edited.pk]
    assert _listed(engineer, tag="unused") == []
    html = client_for(engineer).get(reverse("training:run_list"), {"tag": "unused"}).content.decode()
    assert "No run matches these filters." in html and 'id="clear-filters"' in html


def test_sorts_by_grid_recipe_status_tag_and_outcome(engineer, runs):
    custom, edited, exact, other = runs.values()
    _notes(engineer, exact, "zeta")
    _notes(engineer, custom, "alpha")
    assert _listed(engineer, sort="oldest") == [custom.pk, edited.pk, exact.pk, other.pk]
    # l2rpn_case14_sandbox < l2rpn_wcci_2020 < rte_case14_realistic
    assert _listed(engineer, sort="grid") == [custom.pk, other.pk, exact.pk, edited.pk]
    assert _listed(engineer, sort="status") == [
        other.pk,
        exact.pk,
        edited.pk,
        custom.pk,
    ]  # cancelled < queued
    assert _listed(engineer, sort="recipe") == [
        other.pk,
        custom.pk,
        exact.pk,
        edited.pk,
    ]  # custom, random…, sac…
    assert _listed(engineer, sort="tag") == [custom.pk, exact.pk, other.pk, edited.pk]  # untagged last
    assert _listed(engineer, sort="best") == [
        other.pk,
        exact.pk,
        edited.pk,
        custom.pk,
    ]  # none yet: newest first


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"status": "finished"}, "status &#x27;finished&#x27; is unknown here; accepted: queued, running"),
        (
            {"grid": "atlantis"},
            "grid &#x27;atlantis&#x27; is unknown here; accepted: l2rpn_case14_sandbox, l2rpn_wcci_2020, rte_case14_realistic",
        ),
        ({"recipe": "fast"}, "recipe &#x27;fast&#x27; is unknown here; accepted: ace-14bus-offline"),
        ({"tag": "Bad Tag!"}, "&#x27;Bad Tag!&#x27; is not a tag; accepted: lower-case letters"),
        (
            {"sort": "sideways"},
            "sort &#x27;sideways&#x27; is not an order; accepted: newest, oldest, grid, recipe",
        ),
    ],
)
def test_a_value_not_accepted_is_reported_and_ignored(engineer, runs, query, message):
    response = client_for(engineer).get(
        reverse("training:run_list"), {**query, "grid": query.get("grid", "")}
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert message in html and "; ignored" in html
    assert len(re.findall(r'<tr id="run-(\d+)">', html)) == 4  # the filter is left out: every run


def test_the_page_links_keep_the_filters(engineer, runs, settings, monkeypatch):
    monkeypatch.setattr("webapp.training.run_views.PAGE_SIZE", 1)
    html = (
        client_for(engineer)
        .get(reverse("training:run_list"), {"grid": "rte_case14_realistic"})
        .content.decode()
    )
    assert "grid=rte_case14_realistic&amp;page=2" in html


def test_engineer_sets_tags_and_a_note_shown_on_the_run_page_and_the_list(engineer, runs):
    run = runs["edited"]
    response = _notes(engineer, run, "Baseline, long  baseline", "  the 700-step check  ")
    assert response.status_code == 302 and response["Location"].endswith(f"/runs/{run.pk}/#notes")
    run.refresh_from_db()
    assert [tag.name for tag in run.tags.all()] == ["baseline", "long"]  # lower-cased, each once
    assert run.note == "the 700-step check"
    entry = AuditEntry.objects.filter(action="run.notes").get()
    assert entry.after == {"tags": ["baseline", "long"], "note": "the 700-step check"}
    page = client_for(engineer).get(reverse("training:run_detail", args=[run.pk])).content.decode()
    assert 'id="run-note">the 700-step check<' in page
    assert f'href="{reverse("training:run_list")}?tag=baseline"' in page and 'id="notes-form"' in page
    listing = client_for(engineer).get(reverse("training:run_list")).content.decode()
    row = re.search(rf'<tr id="run-{run.pk}">(.*?)</tr>', listing, re.S).group(1)
    assert ">baseline</a>" in row and ">long</a>" in row and 'title="the 700-step check"' in row
    # replacing them: a tag left out is removed
    _notes(engineer, run, "long")
    assert [tag.name for tag in run.tags.all()] == ["long"]


@pytest.mark.parametrize(
    ("tags", "note", "message"),
    [
        ("ok, no spaces!", "", "tags: &#x27;spaces!&#x27; is not a tag"),
        ("a b c d e f g h i", "", "tags: 9 tags given; accepted: at most 8"),
        ("x" * 33, "", "is not a tag; accepted: lower-case letters, digits"),
        ("fine", "n" * 2001, "note: Ensure this value has at most 2000 characters"),
    ],
)
def test_bad_tags_or_note_are_refused_and_nothing_is_saved(engineer, runs, tags, note, message):
    run = runs["custom"]
    _notes(engineer, run, "kept", "kept note")
    response = client_for(engineer).post(
        reverse("training:run_notes", args=[run.pk]), {"tags": tags, "note": note}, follow=True
    )
    assert message in response.content.decode() and "nothing was saved" in response.content.decode()
    run.refresh_from_db()
    assert [tag.name for tag in run.tags.all()] == ["kept"] and run.note == "kept note"


def test_only_engineers_edit_tags_and_notes(role_users, runs):
    run = runs["custom"]
    url = reverse("training:run_notes", args=[run.pk])
    for role in ("operator", "reviewer", "none"):
        assert client_for(role_users[role]).post(url, {"tags": "x"}).status_code == 403, role
    assert client_for(role_users["engineer"]).get(url).status_code == 405
    assert client_for(role_users["engineer"]).post(url, {"tags": "x"}).status_code == 302
    assert not TrainingRun.objects.filter(tags__name="x").exclude(pk=run.pk).exists()
