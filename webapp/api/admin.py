"""API tokens in the admin: create one for a user (its secret is shown once, on the page that
answers the creation: not in a message, which would sit in a cookie or the session until shown),
revoke selected tokens. The digest is never shown and nothing is edited."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest
from django.shortcuts import render

from webapp.api.errors import TokenError
from webapp.api.models import ApiToken
from webapp.api.services import token_check, token_create, token_revoke


class TokenAddForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["user", "name", "expires_at"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("user") is not None and cleaned.get("name"):
            try:
                token_check(user=cleaned["user"], name=cleaned["name"], expires_at=cleaned.get("expires_at"))
            except TokenError as error:
                raise forms.ValidationError(str(error)) from None
        return cleaned


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "user", "created_at", "expires_at", "revoked_at", "last_used_at"]
    list_filter = ["revoked_at", "expires_at"]
    search_fields = ["prefix", "name", "user__username"]
    actions = ["revoke"]
    readonly_fields = ["user", "name", "prefix", "created_at", "expires_at", "revoked_at", "last_used_at"]

    def get_form(self, request: HttpRequest, obj: ApiToken | None = None, **kwargs: Any):
        if obj is None:
            kwargs["form"] = TokenAddForm
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None):
        return self.readonly_fields if obj is not None else []

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None):
        return TokenAddForm.Meta.fields if obj is None else self.readonly_fields

    def has_change_permission(self, request: HttpRequest, obj: ApiToken | None = None) -> bool:
        return False if obj is not None else super().has_change_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: ApiToken, form: forms.Form, change: bool) -> None:
        if change:
            return
        # checked by the form's clean(): nothing is left to refuse here
        token, raw = token_create(
            user=obj.user, name=obj.name, expires_at=obj.expires_at, created_by=request.user
        )
        obj.pk = token.pk
        obj.raw_token = raw  # for response_add only; never stored

    def response_add(self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None):
        context = {
            **self.admin_site.each_context(request),
            "title": "API token created",
            "token": obj,
            "raw": obj.raw_token,
            "opts": self.model._meta,
        }
        return render(request, "api/admin_token_created.html", context)  # admin pages are never cached

    @admin.action(description="Revoke the selected tokens", permissions=["delete"])
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        revoked = 0
        for token in queryset.filter(revoked_at__isnull=True):
            try:
                token_revoke(token=token, user=request.user)
                revoked += 1
            except TokenError as error:
                self.message_user(request, str(error), messages.ERROR)
        self.message_user(request, f"{revoked} token(s) revoked", messages.SUCCESS)
