"""The form engineers start a live session with (ASCII digits, bounded before the database)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms

from webapp.operations.services import K_RANGE, SPEED_RANGE
from webapp.validation import AsciiFloatField, AsciiIntegerField


class SessionForkForm(forms.Form):
    """A new session from a recorded step of another (:func:`webapp.operations.services.session_fork`)."""

    step = AsciiIntegerField(help_text="a recorded step of the session")
    label = forms.CharField(max_length=100, required=False)


class SessionStartForm(forms.Form):
    """``days``: the days the deployed policy's env offers (:func:`webapp.operations.selectors.session_days`),
    listed by date, season and difficulty instead of an index to type; the session service still
    refuses a day that does not exist."""

    label = forms.CharField(max_length=100, required=False)
    scenario_index = AsciiIntegerField(
        initial=0, label="day", help_text="which episode of the env's chronics"
    )
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
    start_step = AsciiIntegerField(
        initial=0,
        required=False,
        label="start at step",
        help_text="steps into the day where the session opens (5 min each; 0: its first step), to replay an incident",
    )
    max_steps = AsciiIntegerField(initial=0, help_text="0: the whole scenario")

    def clean_start_step(self) -> int:
        return self.cleaned_data.get("start_step") or 0  # left empty: the day's first step

    def __init__(self, *args: Any, days: Sequence[Any] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if days:
            field = self.fields["scenario_index"]
            field.widget = forms.Select(choices=[(day.index, day.words) for day in days])
            field.help_text = "date · season · doing nothing's survival on that day (its difficulty) · split"
