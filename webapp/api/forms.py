"""The form a user creates an API token with."""

from __future__ import annotations

from django import forms

from webapp.api.services import MAX_LIFETIME_DAYS, NAME_MAX_LENGTH
from webapp.validation import AsciiIntegerField


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX_LENGTH, help_text="what the token is for, e.g. 'EMS bridge'")
    expires_in_days = AsciiIntegerField(
        required=False,
        min_value=1,
        max_value=MAX_LIFETIME_DAYS,
        label="expires in (days)",
        help_text=f"1 to {MAX_LIFETIME_DAYS}; empty: never expires",
    )
