"""The reviewer's decision form and the queue's filter form."""

from __future__ import annotations

from django import forms

from webapp.review.models import COMMENT_MAX_LENGTH
from webapp.review.selectors import SIMULATION_FILTERS, STATUS_FILTERS
from webapp.review.services import DECISIONS
from webapp.validation import AsciiIntegerField


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(
        choices=[(name, name) for name in DECISIONS],
        error_messages={
            "invalid_choice": f"%(value)s is not a decision; choose one of: {', '.join(DECISIONS)}"
        },
    )
    comment = forms.CharField(
        required=False,
        max_length=COMMENT_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 3, "maxlength": COMMENT_MAX_LENGTH}),
        help_text=f"why (optional, up to {COMMENT_MAX_LENGTH} characters); kept in the audit log",
    )


class QueueFilterForm(forms.Form):
    status = forms.ChoiceField(
        choices=[(name, name) for name in STATUS_FILTERS], required=False, initial="pending"
    )
    run = AsciiIntegerField(required=False, min_value=1, label="run id")
    simulation = forms.ChoiceField(
        choices=[
            ("any", "any"),
            ("accepted", "better than RL in simulation"),
            ("not_accepted", "not better than RL"),
        ],
        required=False,
        initial="any",
        label="LLM against RL",
    )

    def filters(self) -> dict:
        """Filters for the queue selector; invalid or missing values fall back to the defaults."""
        data = self.cleaned_data if self.is_valid() else {}
        simulation = data.get("simulation") or "any"
        return {
            "status": data.get("status") or "pending",
            "run_id": data.get("run"),
            "simulation": simulation if simulation in SIMULATION_FILTERS else "any",
        }
