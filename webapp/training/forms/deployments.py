"""The deploy confirmation (a comment, and the override's reason when the deploy guard refuses) and
the rollback's comment."""

from __future__ import annotations

from django import forms

from webapp.training.services.deployment import COMMENT_MAX_LENGTH, OVERRIDE_MAX_LENGTH, OVERRIDE_MIN_LENGTH


class DeployForm(forms.Form):
    """The deploy confirmation: a comment, and the override's reason when the guard refuses."""

    comment = forms.CharField(required=False, max_length=COMMENT_MAX_LENGTH, widget=forms.TextInput)
    override_reason = forms.CharField(
        required=False,
        max_length=OVERRIDE_MAX_LENGTH,
        label="override reason",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="needed only when the guard refuses: why this policy should be deployed anyway "
        f"({OVERRIDE_MIN_LENGTH} to {OVERRIDE_MAX_LENGTH} characters; the audit keeps it)",
    )


class RollbackForm(forms.Form):
    comment = forms.CharField(required=False, max_length=COMMENT_MAX_LENGTH, widget=forms.TextInput)
