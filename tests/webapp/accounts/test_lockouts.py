"""The administrators' lockouts page: it lists the (username, address) pairs locked now and lifts
one with a CSRF-protected POST, which the audit log records."""

from __future__ import annotations

import html

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.urls import reverse

from tests.webapp.conftest import PASSWORD, client_for
from webapp.audit.models import AuditEntry
from webapp.audit.selectors import audit_chain_check

pytestmark = pytest.mark.django_db
LOGIN = reverse("accounts:login")
LOCKOUTS = reverse("accounts:lockout_list")


def _lock(username: str, address: str, failures: int) -> None:
    for _ in range(failures):
        Client(REMOTE_ADDR=address).post(LOGIN, {"username": username, "password": "wrong"})


def test_the_page_lists_lockouts_in_force_only(make_user, operator, settings):
    admin = make_user("admin")
    _lock(operator.username, "10.1.0.1", settings.AXES_FAILURE_LIMIT)
    _lock(operator.username, "10.1.0.2", settings.AXES_FAILURE_LIMIT - 1)  # not locked yet
    page = client_for(admin).get(LOCKOUTS)
    assert page.status_code == 200
    text = page.content.decode()
    assert "10.1.0.1" in text and "10.1.0.2" not in text
    assert [
        (lockout.username, lockout.address, lockout.failures) for lockout in page.context["lockouts"]
    ] == [(operator.username, "10.1.0.1", settings.AXES_FAILURE_LIMIT)]


def test_unlocking_is_audited_and_lets_the_user_in_again(make_user, operator, settings):
    admin = make_user("admin")
    _lock(operator.username, "10.1.1.1", settings.AXES_FAILURE_LIMIT)
    user_client = Client(REMOTE_ADDR="10.1.1.1")
    assert user_client.post(LOGIN, {"username": operator.username, "password": PASSWORD}).status_code == 429

    (lockout,) = client_for(admin).get(LOCKOUTS).context["lockouts"]
    response = client_for(admin).post(
        reverse("accounts:lockout_lift", args=[lockout.attempt_id]), follow=True
    )
    assert response.status_code == 200 and response.context["lockouts"] == []
    assert f"log-ins of {operator.username!r} from 10.1.1.1 unlocked" in html.unescape(
        response.content.decode()
    )

    entry = AuditEntry.objects.get(action="login.unlock")
    assert entry.actor == admin and entry.target_type == "axes.accessattempt"
    # the log-in tried while locked counts too (whatever the password)
    assert entry.before == {"username": operator.username, "address": "10.1.1.1", "failures": 6}
    assert entry.target_repr == f"log-ins of {operator.username!r} from 10.1.1.1"
    assert audit_chain_check().intact
    assert not AccessAttempt.objects.filter(ip_address="10.1.1.1").exists()
    login = user_client.post(LOGIN, {"username": operator.username, "password": PASSWORD})
    assert login.status_code == 302

    # a second unlock of the same pair says it is gone (the list showed it before)
    again = client_for(admin).post(reverse("accounts:lockout_lift", args=[lockout.attempt_id]), follow=True)
    assert "it was lifted or it expired" in again.content.decode()
    assert AuditEntry.objects.filter(action="login.unlock").count() == 1


def test_unlocking_needs_the_csrf_token(make_user, operator, settings):
    admin = make_user("admin")
    _lock(operator.username, "10.1.2.1", settings.AXES_FAILURE_LIMIT)
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin)
    (lockout,) = client.get(LOCKOUTS).context["lockouts"]
    assert client.post(reverse("accounts:lockout_lift", args=[lockout.attempt_id])).status_code == 403
    assert AccessAttempt.objects.filter(ip_address="10.1.2.1").exists()
    assert not AuditEntry.objects.filter(action="login.unlock").exists()


def test_only_administrators_see_the_page_in_the_navigation(make_user, engineer):
    admin = make_user("admin")
    assert 'href="/lockouts/"' in client_for(admin).get(reverse("accounts:home")).content.decode()
    assert 'href="/lockouts/"' not in client_for(engineer).get(reverse("accounts:home")).content.decode()
    assert client_for(engineer).get(LOCKOUTS).status_code == 403
