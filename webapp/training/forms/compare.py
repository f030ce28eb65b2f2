"""The comparison page's query: the runs to compare, as a repeated ``run`` parameter, each a run
id, at most :data:`~webapp.training.selectors.compare.COMPARE_MAX_RUNS` of them."""

from __future__ import annotations

from typing import Any

from django import forms

from webapp.training.selectors.compare import COMPARE_MAX_RUNS


class RunIdsField(forms.Field):
    """Run ids from a repeated query parameter (``?run=3&run=7``): whole numbers, 1 to
    :data:`~webapp.training.selectors.compare.COMPARE_MAX_RUNS` of them, each kept once."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[int]:
        ids = []
        for item in value or []:
            text = str(item).strip()
            if not text.isdigit() or len(text) > 18:
                raise forms.ValidationError(
                    f"run id {text!r} is not a run number; give whole numbers, e.g. run=3"
                )
            ids.append(int(text))
        return list(dict.fromkeys(ids))

    def validate(self, value: list[int]) -> None:
        if not value:
            raise forms.ValidationError("choose at least one run to compare (run=ID, repeated for each run)")
        if len(value) > COMPARE_MAX_RUNS:
            raise forms.ValidationError(
                f"{len(value)} runs asked for; compare at most {COMPARE_MAX_RUNS} at a time"
            )


class RunCompareForm(forms.Form):
    run = RunIdsField()
