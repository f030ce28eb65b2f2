"""The form engineers start a live session with."""

from __future__ import annotations

from django import forms

from webapp.operations.services import K_RANGE, SPEED_RANGE


class SessionStartForm(forms.Form):
    label = forms.CharField(max_length=100, required=False)
    scenario_index = forms.IntegerField(
        min_value=0, initial=0, help_text="which episode of the env's chronics"
    )
    seed = forms.IntegerField(min_value=0, initial=0)
    k = forms.IntegerField(
        min_value=K_RANGE[0], max_value=K_RANGE[1], initial=3, label="recommendations per step"
    )
    speed_seconds = forms.FloatField(
        min_value=SPEED_RANGE[0], max_value=SPEED_RANGE[1], initial=2.0, label="seconds per step"
    )
    max_steps = forms.IntegerField(min_value=0, initial=0, help_text="0: the whole scenario")
