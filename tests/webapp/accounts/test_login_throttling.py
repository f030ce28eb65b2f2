"""Login throttling: failures count per (username, address) pair. After ``AXES_FAILURE_LIMIT``
failures of one username from one address, that pair's log-ins are refused (even with the right
password) with a clear message, for a cool-off that grows with further failures; an attacker's
failures from other addresses do not lock the user out of theirs. Attempts are listed in the
admin, and ``manage.py axes_reset_username`` still unlocks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from tests.webapp.conftest import PASSWORD
from webapp.accounts.lockouts import cool_off_for

pytestmark = pytest.mark.django_db
LOGIN = reverse("accounts:login")


def _login(username: str, password: str, address: str = "10.0.0.1"):
    return Client(REMOTE_ADDR=address).post(LOGIN, {"username": username, "password": password})


def _signed_in(response) -> bool:
    return response.status_code == 302 and response["Location"] == reverse("accounts:home")


def test_failures_from_other_addresses_do_not_lock_the_user_out_of_a_clean_one(operator, settings):
    assert settings.AXES_FAILURE_LIMIT == 5
    for attempt in range(5):  # an attacker, from five addresses
        response = _login(operator.username, "wrong", address=f"10.0.1.{attempt}")
        assert response.status_code == 200 and "did not match" in response.content.decode()
    assert _signed_in(_login(operator.username, PASSWORD, address="10.0.2.1"))
    # the attacker's own addresses are not locked either: each failed once
    assert _signed_in(_login(operator.username, PASSWORD, address="10.0.1.0"))


def test_a_username_is_locked_at_one_address_after_the_failure_limit(operator, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _login(operator.username, "wrong", address="10.0.3.1")
    locked = _login(operator.username, "wrong", address="10.0.3.1")
    assert locked.status_code == 429
    page = locked.content.decode()
    assert "Too many failed log-ins (5)" in page and "locked for 15 minutes" in page
    # the right password does not get in from there while locked; from elsewhere it does
    assert _login(operator.username, PASSWORD, address="10.0.3.1").status_code == 429
    assert _signed_in(_login(operator.username, PASSWORD, address="10.0.3.2"))

    call_command("axes_reset_username", operator.username)
    assert _signed_in(_login(operator.username, PASSWORD, address="10.0.3.1"))


def test_failures_for_other_usernames_do_not_lock_an_address(engineer, settings):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        _login(f"guess{attempt}", "wrong", address="10.0.4.1")
    assert _signed_in(_login(engineer.username, PASSWORD, address="10.0.4.1"))


def test_the_cool_off_grows_with_failures_while_locked(operator, settings):
    limit = settings.AXES_FAILURE_LIMIT
    assert [cool_off_for(n) for n in (1, limit, 2 * limit - 1, 2 * limit, 3 * limit)] == [
        timedelta(minutes=15),
        timedelta(minutes=15),
        timedelta(minutes=15),
        timedelta(minutes=30),
        timedelta(minutes=60),
    ]
    assert cool_off_for(1000 * limit) == timedelta(hours=24)  # GRIDACE_LOGIN_LOCKOUT_MAX_HOURS
    for _ in range(2 * limit - 1):
        _login(operator.username, "wrong", address="10.0.5.1")
    page = _login(operator.username, "wrong", address="10.0.5.1")
    assert page.status_code == 429 and "locked for 30 minutes" in page.content.decode()
    attempt = AccessAttempt.objects.get(username=operator.username, ip_address="10.0.5.1")
    assert attempt.failures_since_start == 2 * limit
    assert attempt.expiration.expires_at - attempt.attempt_time == timedelta(minutes=30)


def test_a_good_log_in_forgets_the_pairs_failures(operator, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _login(operator.username, "wrong", address="10.0.6.1")
    assert _signed_in(_login(operator.username, PASSWORD, address="10.0.6.1"))
    assert _login(operator.username, "wrong", address="10.0.6.1").status_code == 200  # not locked


def test_failed_attempts_are_listed_in_the_admin(operator):
    for _ in range(2):
        _login(operator.username, "wrong", address="10.0.7.1")
    attempt = AccessAttempt.objects.get(username=operator.username)
    assert attempt.failures_since_start == 2 and attempt.ip_address == "10.0.7.1"
    admin = get_user_model().objects.create_superuser("root", password=PASSWORD)
    client = Client()
    client.force_login(admin)
    listing = client.get(reverse("admin:axes_accessattempt_changelist"))
    assert listing.status_code == 200 and operator.username in listing.content.decode()


def test_an_overlong_username_is_refused_before_authentication():
    # found by fuzzing: a 5,000-character name reached the throttling's 255-character records (500)
    response = _login("x" * 5000, "wrong")
    assert response.status_code == 200
    assert "at most 150 characters" in " ".join(response.context["form"].errors["username"])
    assert not AccessAttempt.objects.exists()
