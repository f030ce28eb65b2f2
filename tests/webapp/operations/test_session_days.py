"""Choosing a day: the session form lists the deployed env's days by date, season and difficulty
(doing nothing's survival, played once by ``manage.py day_difficulty`` and cached; never inside a
request), says which are not computed yet, and refuses a day that does not exist, changing
nothing."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from ace_core.live.days import DifficultyCache
from tests.webapp.conftest import client_for
from tests.webapp.operations.conftest import ENV
from webapp.audit.models import AuditEntry
from webapp.operations.models import LiveSession
from webapp.operations.selectors import session_days

pytestmark = pytest.mark.django_db


@pytest.fixture
def cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the test's own: no day played yet."""
    monkeypatch.setenv("GRIDACE_CACHE_DIR", str(tmp_path))
    return tmp_path / "days"


def _options(page: bytes) -> list[tuple[str, str]]:
    select = re.search(rb'<select name="scenario_index"[^>]*>(.*?)</select>', page, re.S)
    assert select, "the day is chosen from a list, not typed as an index"
    return [
        (value.decode(), text.decode().strip())
        for value, text in re.findall(rb'<option value="(\d+)"[^>]*>(.*?)</option>', select.group(1), re.S)
    ]


def test_the_form_lists_days_by_date_season_and_difficulty_once_computed(engineer, deployment, cache_folder):
    client = client_for(engineer)
    page = client.get(reverse("operations:session_start"))
    days = session_days(ENV)
    assert page.status_code == 200 and len(days) == 6
    assert _options(page.content) == [(str(d.index), d.words) for d in days]
    assert _options(page.content)[0][1] == (
        "Sun 6 Jan 2019 00:00 · winter · difficulty not computed yet · train day 0000@0+288"
    )
    assert b"Difficulty not computed yet for 6 of 6 days" in page.content
    assert not (cache_folder / f"{ENV}.json").exists()  # the page plays no day

    written = io.StringIO()
    call_command(
        "day_difficulty", "--quiet", stdout=written
    )  # the deployed policy's env, as the demo runs it
    assert written.getvalue() == ""
    computed = session_days(ENV)
    assert [d.survived for d in computed] == [d.scenario.length for d in computed]  # the sandbox is easy
    assert DifficultyCache(ENV).load() == {d.scenario.name: d.survived for d in computed}
    page = client.get(reverse("operations:session_start"))
    assert b"not computed yet" not in page.content
    options = _options(page.content)
    assert options[1][1] == (
        "Mon 7 Jan 2019 00:00 · winter · doing nothing survives the whole day (287 steps) · train day 0000@288+287"
    )
    assert "100% (288 of 288 steps)" in page.content.decode()

    made = client.post(
        reverse("operations:session_start"),
        {"scenario_index": options[4][0], "seed": 0, "k": 3, "speed_seconds": 1, "max_steps": 0},
    )
    session = LiveSession.objects.get()
    assert made.status_code == 302 and (session.scenario_index, session.scenario_name) == (
        4,
        computed[4].scenario.name,
    )


def test_a_day_that_does_not_exist_is_refused_and_changes_nothing(engineer, deployment, cache_folder):
    audited = AuditEntry.objects.count()
    client = client_for(engineer)
    refusals = {
        "6": "scenario 6 does not exist for l2rpn_case14_sandbox; accepted: 0 to 5",
        "4000000000": "accepted: 0 to 2147483647",
    }
    for index, reason in refusals.items():
        refused = client.post(
            reverse("operations:session_start"),
            {"scenario_index": index, "seed": 0, "k": 3, "speed_seconds": 1, "max_steps": 0},
        )
        form = refused.context["form"]
        errors = [*form.non_field_errors(), *form.errors.get("scenario_index", [])]
        assert refused.status_code == 400 and any(reason in error for error in errors), errors
        assert len(_options(refused.content)) == 6  # the list is offered again
    assert not LiveSession.objects.exists() and AuditEntry.objects.count() == audited
    assert not (cache_folder / f"{ENV}.json").exists()


def test_the_command_refuses_an_unknown_env_naming_those_accepted(db, cache_folder):
    with pytest.raises(CommandError, match=r"unknown env no_such_grid; accepted: .*l2rpn_case14_sandbox"):
        call_command("day_difficulty", "no_such_grid")
    with pytest.raises(CommandError, match="no policy is deployed: name the envs"):
        call_command("day_difficulty")
    assert not cache_folder.exists()
