"""The form engineers start a live session with (ASCII digits, bounded before the database)."""

from __future__ import annotations

from django import forms

from webapp.operations.services import K_RANGE, SPEED_RANGE
from webapp.validation import AsciiFloatField, AsciiIntegerField


class SessionStartForm(forms.Form):
    label = forms.CharField(max_length=100, required=False)
    scenario_index = AsciiIntegerField(initial=0, help_text="which episode of the env's chronics")
    seed = AsciiIntegerField(initial=0)
    k = AsciiIntegerField(
        min_value=K_RANGE[0],
        max_value=K_RANGE[1],
        initial=3,
        label="recommendations per step",
        help_text="cards shown: the safest, with the policy's own proposal when it is safe",
    )
    speed_seconds = AsciiFloatField(
        min_value=SPEED_RANGE[0], max_value=SPEED_RANGE[1], initial=2.0, label="seconds per step"
    )
    max_steps = AsciiIntegerField(initial=0, help_text="0: the whole scenario")
