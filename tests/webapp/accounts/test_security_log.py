"""The security log of refused requests is bounded: repeats within a minute share a row (with a
count), and it keeps only the newest rows of the last days, pruned on write and by
``manage.py security_log_prune``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from webapp.accounts.models import SecurityEvent, SecurityEventKind
from webapp.accounts.selectors import security_event_count
from webapp.accounts.services import security_event_record

pytestmark = pytest.mark.django_db


def _refuse(path: str = "/api/v1/runs", address: str = "10.2.0.1", status: int = 403) -> SecurityEvent:
    return security_event_record(
        kind=SecurityEventKind.REFUSED, status=status, method="POST", path=path, address=address
    )


def test_repeats_share_a_row_with_a_count():
    for _ in range(4):
        _refuse()
    _refuse(address="10.2.0.2")
    _refuse(status=401)
    assert SecurityEvent.objects.count() == 3
    assert SecurityEvent.objects.get(address="10.2.0.1", status=403).count == 4
    assert security_event_count() == 6


def test_a_bad_address_is_kept_as_none():
    assert _refuse(address="not-an-ip").address is None


def test_the_log_keeps_the_newest_rows(settings):
    settings.GRIDACE_SECURITY_LOG_MAX_ROWS = 3
    for index in range(5):
        _refuse(path=f"/api/v1/runs/{index}")
    assert sorted(SecurityEvent.objects.values_list("path", flat=True)) == [
        "/api/v1/runs/2",
        "/api/v1/runs/3",
        "/api/v1/runs/4",
    ]


def test_the_command_drops_rows_older_than_the_retention(settings, capsys):
    settings.GRIDACE_SECURITY_LOG_DAYS = 2
    old, new = _refuse(path="/old"), _refuse(path="/new")
    SecurityEvent.objects.filter(pk=old.pk).update(last_at=timezone.now() - timedelta(days=3))
    call_command("security_log_prune")
    assert "1 rows removed, 1 kept" in capsys.readouterr().out
    assert list(SecurityEvent.objects.values_list("pk", flat=True)) == [new.pk]


def test_nul_characters_a_client_sent_are_stored_escaped():
    # found by fuzzing: GET /api/v1/sessions/%00/state was refused (422), and logging it failed
    # on Postgres, which refuses NUL in text (500)
    event = _refuse(path="/api/v1/sessions/\x00/state")
    event.refresh_from_db()
    assert event.path == "/api/v1/sessions/\\x00/state"
