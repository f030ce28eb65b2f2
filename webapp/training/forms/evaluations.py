"""The run page's Evaluate form: which days (validation or test) and how many held-out episodes
each agent plays."""

from __future__ import annotations

from django import forms

from webapp.training.services.evaluations import MAX_EPISODES, SPLITS
from webapp.validation import AsciiIntegerField


class EvaluationForm(forms.Form):
    split = forms.ChoiceField(
        choices=[(split, split) for split in SPLITS],
        initial="validation",
        help_text="validation to choose between runs (the runs list shows the best); test for the final figure",
    )
    nb_episode = AsciiIntegerField(
        label="episodes",
        min_value=1,
        max_value=MAX_EPISODES,
        initial=5,
        help_text="held-out episodes per agent",
    )
