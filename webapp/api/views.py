"""The API tokens page: a user lists, creates and revokes their own tokens. A new token is shown
once, on the page the creation redirects to, and never again.

Creation follows Post/Redirect/Get: the POST creates the token and redirects, handing the secret
to the browser that asked for it in a short-lived signed cookie (the server keeps only the
token's hash, never the secret, not even in the session); the GET that follows shows it once, for
the user who owns the token, and deletes the cookie. Reloading that page creates nothing and
shows the secret no more.
"""

from __future__ import annotations

import hmac
import json
from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.core import signing
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views import View

from webapp.accounts.permissions import AnyRoleGate
from webapp.api import selectors, services
from webapp.api.errors import TokenError
from webapp.api.forms import TokenCreateForm
from webapp.api.tokens import token_digest

NEW_TOKEN_COOKIE = "gridace_new_token"
"""the cookie carrying a token just created from the POST to the page after the redirect"""
NEW_TOKEN_SALT = "webapp.api.views.new-token"
NEW_TOKEN_SECONDS = 120
"""how long the redirect may take before the secret is gone (the token stays; revoke it)"""


def _new_token_shown(request: HttpRequest) -> dict[str, str] | None:
    """The token just created, from its cookie, when it belongs to the signed-in user."""
    try:
        value = request.get_signed_cookie(NEW_TOKEN_COOKIE, salt=NEW_TOKEN_SALT, max_age=NEW_TOKEN_SECONDS)
        created = json.loads(value)
        token = selectors.token_of_user(user=request.user, pk=int(created["id"]))
    except (KeyError, ValueError, TypeError, signing.BadSignature):
        return None
    secret = str(created.get("secret", ""))
    if token is None or not hmac.compare_digest(token.digest, token_digest(secret)):
        return None
    return {"name": token.name, "prefix": token.prefix, "secret": secret}


class TokenListView(AnyRoleGate, View):
    def get(self, request: HttpRequest) -> HttpResponse:
        created = _new_token_shown(request) if NEW_TOKEN_COOKIE in request.COOKIES else None
        response = self._page(request, TokenCreateForm(), created=created)
        if NEW_TOKEN_COOKIE in request.COOKIES:
            response.delete_cookie(NEW_TOKEN_COOKIE, path=reverse("api:token_list"), samesite="Strict")
            response["Cache-Control"] = "no-store"
        return response

    def post(self, request: HttpRequest) -> HttpResponse:
        form = TokenCreateForm(request.POST)
        if form.is_valid():
            days = form.cleaned_data["expires_in_days"]
            try:
                token, raw = services.token_create(
                    user=request.user,
                    name=form.cleaned_data["name"],
                    expires_at=timezone.now() + timedelta(days=days) if days else None,
                )
            except TokenError as error:
                form.add_error(None, str(error))
            else:
                response = HttpResponseRedirect(reverse("api:token_list"))
                response.set_signed_cookie(
                    NEW_TOKEN_COOKIE,
                    json.dumps({"id": token.pk, "secret": raw}),
                    salt=NEW_TOKEN_SALT,
                    max_age=NEW_TOKEN_SECONDS,
                    path=reverse("api:token_list"),
                    secure=settings.SESSION_COOKIE_SECURE,
                    httponly=True,
                    samesite="Strict",
                )
                response["Cache-Control"] = "no-store"
                return response
        return self._page(request, form, status=400)

    @staticmethod
    def _page(
        request: HttpRequest,
        form: TokenCreateForm,
        status: int = 200,
        created: dict[str, str] | None = None,
    ) -> HttpResponse:
        context = {
            "form": form,
            "tokens": selectors.token_list(user=request.user),
            "created": created,
            "docs_url": reverse("api_v1:openapi-view"),
            "schema_url": reverse("api_v1:openapi-json"),
        }
        return render(request, "api/token_list.html", context, status=status)


class TokenRevokeView(AnyRoleGate, View):
    http_method_names = ["post"]

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        token = selectors.token_of_user(user=request.user, pk=pk)
        if token is None:
            raise Http404(f"you have no API token {pk}")
        try:
            services.token_revoke(token=token, user=request.user)
        except TokenError as error:
            messages.error(request, str(error))
        else:
            messages.success(request, f"token {token.prefix} ({token.name}) revoked")
        return HttpResponseRedirect(reverse("api:token_list"))
