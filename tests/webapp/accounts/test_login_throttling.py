"""Login throttling: after ``AXES_FAILURE_LIMIT`` failed log-ins for one username, or from one
address, log-ins are refused (even with the right password) with a clear message on the login
page; the attempts are listed in the admin, and ``manage.py axes_reset_username`` unlocks."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from tests.webapp.conftest import PASSWORD

pytestmark = pytest.mark.django_db
LOGIN = reverse("accounts:login")


def _login(username: str, password: str, address: str = "10.0.0.1"):
    return Client(REMOTE_ADDR=address).post(LOGIN, {"username": username, "password": password})


def _signed_in(response) -> bool:
    return response.status_code == 302 and response["Location"] == reverse("accounts:home")


def test_a_username_is_locked_after_the_failure_limit_even_from_other_addresses(operator, settings):
    limit = settings.AXES_FAILURE_LIMIT
    assert limit == 5
    for attempt in range(limit - 1):
        response = _login(operator.username, "wrong", address=f"10.0.1.{attempt}")
        assert response.status_code == 200 and "did not match" in response.content.decode()
    locked = _login(operator.username, "wrong", address="10.0.1.99")
    assert locked.status_code == 429
    page = locked.content.decode()
    assert "Too many failed log-ins (5)" in page and "locked for 15 minutes" in page
    # the right password does not get in while locked, from any address
    assert _login(operator.username, PASSWORD, address="10.0.2.1").status_code == 429

    call_command("axes_reset_username", operator.username)
    assert _signed_in(_login(operator.username, PASSWORD, address="10.0.2.1"))


def test_an_address_is_locked_after_the_failure_limit_across_usernames(operator, engineer, settings):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        _login(f"guess{attempt}", "wrong", address="10.0.3.1")
    assert _login(engineer.username, PASSWORD, address="10.0.3.1").status_code == 429
    # another address is not affected, and neither is the user
    assert _signed_in(_login(engineer.username, PASSWORD, address="10.0.3.2"))
    call_command("axes_reset_ip", "10.0.3.1")
    assert _signed_in(_login(operator.username, PASSWORD, address="10.0.3.1"))


def test_failed_attempts_are_listed_in_the_admin(operator):
    for _ in range(2):
        _login(operator.username, "wrong", address="10.0.4.1")
    attempt = AccessAttempt.objects.get(username=operator.username)
    assert attempt.failures_since_start == 2 and attempt.ip_address == "10.0.4.1"
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
