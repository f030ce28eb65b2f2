"""Personal API tokens: stored hashed, shown once, revoked and expired tokens refused with the
reason, every malformed header refused, creation and revocation audited, the admin's way too."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.webapp.api.conftest import ApiClient, assert_error_shape
from tests.webapp.conftest import client_for
from webapp.api.models import ApiToken
from webapp.api.services import MAX_ACTIVE_TOKENS, token_create
from webapp.api.views import NEW_TOKEN_COOKIE
from webapp.audit.models import AuditEntry

pytestmark = pytest.mark.django_db


def test_a_token_is_stored_as_its_hash_and_shown_once_on_the_page(operator):
    page = client_for(operator)
    created = page.post(reverse("api:token_list"), {"name": "EMS bridge", "expires_in_days": "30"})
    assert created.status_code == 302 and created["Location"] == reverse("api:token_list")  # PRG
    response = page.get(reverse("api:token_list"))
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    raw = response.context["created"]["secret"]
    assert raw.startswith("gat_") and raw in response.content.decode()

    token = ApiToken.objects.get(user=operator)
    assert token.digest == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in {token.prefix, token.digest, token.name} and raw.split("_")[1] == token.prefix
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)
    # never again: the list shows the prefix only
    listing = page.get(reverse("api:token_list")).content.decode()
    assert token.prefix in listing and raw not in listing
    me = ApiClient(raw).get("/me").json()
    assert (me["username"], me["roles"], me["token"]) == (operator.username, ["operator"], token.prefix)
    expires = datetime.fromisoformat(me["token_expires_at"].replace("Z", "+00:00"))
    assert abs(expires - token.expires_at) < timedelta(milliseconds=1)
    entry = AuditEntry.objects.get(action="api.token.create")
    assert entry.actor == operator and entry.after["prefix"] == token.prefix and raw not in str(entry.after)


def test_reloading_the_page_after_creating_a_token_creates_no_second_token(operator, engineer):
    """Post/Redirect/Get: the page a browser reloads is the GET after the redirect; it shows the
    new secret once, and no more on a reload. The secret reaches only its owner."""
    page = client_for(operator)
    response = page.post(reverse("api:token_list"), {"name": "EMS bridge"}, follow=True)
    raw = response.context["created"]["secret"]
    assert response.redirect_chain == [(reverse("api:token_list"), 302)] and raw in response.content.decode()
    reloaded = page.get(reverse("api:token_list"))
    assert reloaded.context["created"] is None and raw not in reloaded.content.decode()
    assert ApiToken.objects.filter(user=operator).count() == 1
    assert AuditEntry.objects.filter(action="api.token.create").count() == 1

    # the cookie that carried the secret, replayed by another user, shows nothing
    other = client_for(engineer)
    page = client_for(operator)
    created = page.post(reverse("api:token_list"), {"name": "second"})
    other.cookies[NEW_TOKEN_COOKIE] = created.cookies[NEW_TOKEN_COOKIE].value
    shown = other.get(reverse("api:token_list"))
    assert shown.context["created"] is None and 'id="new-token"' not in shown.content.decode()


def test_the_navigation_links_the_tokens_page_for_users_with_a_role(operator, make_user):
    link = reverse("api:token_list")
    assert f'href="{link}"' in client_for(operator).get(reverse("accounts:home")).content.decode()
    assert client_for(make_user(None)).get(link).status_code == 403


def test_a_revoked_token_is_refused_from_the_next_request(operator):
    token, raw = token_create(user=operator, name="bridge")
    api = ApiClient(raw)
    assert api.get("/me").status_code == 200
    response = client_for(operator).post(reverse("api:token_revoke", args=[token.pk]))
    assert response.status_code == 302
    body = assert_error_shape(api.get("/me"), 401)
    assert "revoked" in body["error"] and token.prefix in body["error"]
    assert AuditEntry.objects.filter(action="api.token.revoke", target_id=str(token.pk)).count() == 1
    # twice is refused, and nobody revokes another user's token
    client_for(operator).post(reverse("api:token_revoke", args=[token.pk]))
    assert AuditEntry.objects.filter(action="api.token.revoke").count() == 1


def test_nobody_revokes_another_users_token(operator, engineer):
    token, raw = token_create(user=operator, name="bridge")
    assert client_for(engineer).post(reverse("api:token_revoke", args=[token.pk])).status_code == 404
    assert ApiClient(raw).get("/me").status_code == 200


def test_an_expired_token_is_refused_with_its_expiry(operator):
    token, raw = token_create(user=operator, name="short", expires_at=timezone.now() + timedelta(days=1))
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    body = assert_error_shape(ApiClient(raw).get("/me"), 401)
    assert "expired" in body["error"]


def test_a_deactivated_users_token_is_refused(operator):
    _, raw = token_create(user=operator, name="bridge")
    operator.is_active = False
    operator.save()
    assert "deactivated" in assert_error_shape(ApiClient(raw).get("/me"), 401)["error"]


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (None, "no Authorization header"),
        ("Basic dXNlcjpwYXNz", "not a Bearer token"),
        ("Bearer ", "not a Bearer token"),
        ("Bearer not-a-token", "malformed token"),
        ("Bearer gat_0000000g_" + "a" * 43, "malformed token"),
        ("Bearer gat_00000000_" + "a" * 43, "unknown token"),
    ],
)
def test_missing_and_malformed_tokens_get_401_with_the_reason(header, reason):
    headers = {"Authorization": header} if header is not None else {}
    response = Client().get("/api/v1/me", headers=headers)
    body = assert_error_shape(response, 401)
    assert reason in body["error"] and response["WWW-Authenticate"].startswith("Bearer")


def test_a_right_prefix_with_a_wrong_secret_is_unknown(operator):
    token, raw = token_create(user=operator, name="bridge")
    forged = raw[:-1] + ("A" if raw[-1] != "A" else "B")
    assert "unknown token" in assert_error_shape(ApiClient(forged).get("/me"), 401)["error"]


def test_use_is_noted_and_bad_creations_are_refused(operator):
    token, raw = token_create(user=operator, name="bridge")
    assert token.last_used_at is None
    ApiClient(raw).get("/me")
    token.refresh_from_db()
    assert token.last_used_at is not None

    page = client_for(operator)
    assert page.post(reverse("api:token_list"), {"name": ""}).status_code == 400
    assert page.post(reverse("api:token_list"), {"name": "x", "expires_in_days": "0"}).status_code == 400
    for n in range(MAX_ACTIVE_TOKENS - 1):
        token_create(user=operator, name=f"t{n}")
    refused = page.post(reverse("api:token_list"), {"name": "one too many"})
    assert refused.status_code == 400 and "revoke one first" in refused.content.decode()


def test_the_admin_creates_a_token_and_shows_it_once(django_user_model, operator):
    admin_user = django_user_model.objects.create_superuser("root", "root@example.org", "pw-long-enough-1")
    client = client_for(admin_user)
    response = client.post(reverse("admin:api_apitoken_add"), {"user": operator.pk, "name": "from admin"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    raw = response.context["raw"]
    assert raw in response.content.decode()
    assert not any(raw in str(m) for m in response.context["messages"])
    assert ApiClient(raw).get("/me").json()["username"] == operator.username
    token = ApiToken.objects.get(user=operator)
    entry = AuditEntry.objects.get(action="api.token.create")
    assert entry.actor == admin_user and entry.target_id == str(token.pk)

    response = client.post(
        reverse("admin:api_apitoken_changelist"),
        {"action": "revoke", "_selected_action": [token.pk]},
        follow=True,
    )
    assert response.status_code == 200
    assert assert_error_shape(ApiClient(raw).get("/me"), 401)["error"].startswith(
        f"token {token.prefix} was revoked"
    )
