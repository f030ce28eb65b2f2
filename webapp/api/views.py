"""The API tokens page: a user lists, creates and revokes their own tokens. A new token is shown
once, on the page that answers its creation, and never again."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views import View

from webapp.accounts.permissions import AnyRoleGate
from webapp.api import selectors, services
from webapp.api.errors import TokenError
from webapp.api.forms import TokenCreateForm


class TokenListView(AnyRoleGate, View):
    def get(self, request: HttpRequest) -> HttpResponse:
        return self._page(request, TokenCreateForm())

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
                # rendered, not redirected: the secret exists only in this one answer
                response = self._page(request, TokenCreateForm(), created=(token, raw))
                response["Cache-Control"] = "no-store"
                return response
        return self._page(request, form, status=400)

    @staticmethod
    def _page(request: HttpRequest, form: TokenCreateForm, status: int = 200, created=None) -> HttpResponse:
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
