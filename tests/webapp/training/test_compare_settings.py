"""The comparison page's settings table: only the settings that differ between the compared runs,
one row per setting and one column per run, above the curves; one line when all are equal."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse

from tests.webapp.conftest import client_for
from webapp.training.selectors.compare import config_differences

pytestmark = pytest.mark.django_db


def _settings_table(html: str) -> list[list[str]]:
    table = re.search(r'<table[^>]*id="config-diff">(.*?)</table>', html, re.S).group(1)
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)
    return [
        [
            unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
        ]
        for row in rows
    ]


def test_only_the_settings_that_differ_are_listed_one_column_per_run(engineer, make_run):
    first = make_run(label="a", seed=1)
    second = make_run(label="b", seed=2, gamma=0.9)
    third = make_run(label="c", seed=3, llm="none")
    html = (
        client_for(engineer)
        .get(reverse("training:run_compare"), {"run": [first.pk, second.pk, third.pk]})
        .content.decode()
    )
    table = _settings_table(html)
    assert table[0] == ["Setting", f"#{first.pk} a", f"#{second.pk} b", f"#{third.pk} c"]
    rows = {row[0]: row[1:] for row in table[1:]}
    assert rows["seed"] == ["1", "2", "3"]
    assert rows["gamma"] == ["0.99", "0.9", "0.99"]
    assert rows["llm"] == ["random", "random", "none"]
    assert set(rows) == {"seed", "gamma", "llm"}  # every other setting is the same
    assert "3 settings differ; every other setting is the same in all 3 runs" in html
    # above the curves, and the evaluations still side by side below them
    assert (
        html.index('id="config-diff"')
        < html.index("Learning curves")
        < html.index("Evaluations side by side")
    )


def test_runs_with_the_same_settings_say_so_in_one_line(engineer, make_run):
    first, second = make_run(seed=4), make_run(seed=4)
    html = (
        client_for(engineer)
        .get(reverse("training:run_compare"), {"run": [first.pk, second.pk]})
        .content.decode()
    )
    assert 'id="config-diff"' not in html
    assert "All 2 runs have the same settings." in html


def test_one_run_has_nothing_to_compare_its_settings_with(engineer, make_run):
    html = (
        client_for(engineer).get(reverse("training:run_compare"), {"run": [make_run().pk]}).content.decode()
    )
    assert "One run: nothing to compare its settings with." in html


def test_a_setting_one_config_lacks_counts_as_a_difference(engineer, make_run):
    """A run older than a setting has no value for it: shown as "–", not hidden."""
    old, new = make_run(seed=1), make_run(seed=1)
    old.config.pop("gamma")
    old.save(update_fields=["config"])
    assert config_differences(runs=[old, new]) == [("gamma", ["–", "0.99"])]
