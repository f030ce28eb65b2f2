"""The runs list's filters (query parameters) and the tags and note engineers put on a run.

Filters are checked against what exists (the statuses, the grids runs were launched on, the
recipes); a value that is not accepted is reported and left out, never an error page."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from webapp.jobs.models import JobStatus
from webapp.training.selectors.run_filters import DEFAULT_SORT, SORTS

TAG_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,31}")
TAGS_MAX = 8
NOTE_MAX_LENGTH = 2000
TAG_RULE = (
    "lower-case letters, digits, '.', '_' or '-', starting with a letter or digit, at most 32 characters"
)


def tag_check(tag: str) -> str:
    """``tag`` if it is a tag; ValidationError saying what a tag is otherwise."""
    if not TAG_PATTERN.fullmatch(tag):
        raise forms.ValidationError(f"{tag!r} is not a tag; accepted: {TAG_RULE}")
    return tag


def _one_of(value: str, accepted: list[str], what: str) -> str:
    if value and value not in accepted:
        raise forms.ValidationError(
            f"{what} {value!r} is unknown here; accepted: {', '.join(accepted) or 'none yet'}"
        )
    return value


class RunListForm(forms.Form):
    """``?status=&grid=&recipe=&tag=&sort=``: each empty for any (sort: newest first)."""

    status = forms.CharField(required=False)
    grid = forms.CharField(required=False)
    recipe = forms.CharField(required=False)
    tag = forms.CharField(required=False)
    sort = forms.CharField(required=False)

    def __init__(self, *args: Any, envs: list[str], recipes: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.envs, self.recipes = envs, recipes

    def clean_status(self) -> str:
        return _one_of(self.cleaned_data["status"].strip(), list(JobStatus.values), "status")

    def clean_grid(self) -> str:
        return _one_of(self.cleaned_data["grid"].strip(), self.envs, "grid")

    def clean_recipe(self) -> str:
        return _one_of(self.cleaned_data["recipe"].strip(), self.recipes, "recipe")

    def clean_tag(self) -> str:
        tag = self.cleaned_data["tag"].strip()
        return tag_check(tag) if tag else ""

    def clean_sort(self) -> str:
        sort = self.cleaned_data["sort"].strip() or DEFAULT_SORT
        if sort not in SORTS:
            raise forms.ValidationError(f"sort {sort!r} is not an order; accepted: {', '.join(SORTS)}")
        return sort

    def filters(self) -> tuple[dict[str, str], list[str]]:
        """(the accepted filters, as ``runs_filtered``'s arguments; messages for the values left out)."""
        self.is_valid()
        data = self.cleaned_data
        filters = {
            "status": data.get("status", ""),
            "env": data.get("grid", ""),
            "recipe": data.get("recipe", ""),
            "tag": data.get("tag", ""),
            "sort": data.get("sort", DEFAULT_SORT),
        }
        errors = [f"{' '.join(messages)}; ignored" for messages in self.errors.values()]
        return filters, errors


class RunNotesForm(forms.Form):
    """A run's tags (separated by commas or spaces) and its note."""

    tags = forms.CharField(
        required=False,
        max_length=400,
        help_text=f"separated by commas or spaces, at most {TAGS_MAX}; {TAG_RULE}",
    )
    note = forms.CharField(
        required=False, max_length=NOTE_MAX_LENGTH, widget=forms.Textarea(attrs={"rows": 3})
    )

    def clean_tags(self) -> list[str]:
        tags = list(dict.fromkeys(t for t in re.split(r"[,\s]+", self.cleaned_data["tags"].lower()) if t))
        for tag in tags:
            tag_check(tag)
        if len(tags) > TAGS_MAX:
            raise forms.ValidationError(f"{len(tags)} tags given; accepted: at most {TAGS_MAX}")
        return tags

    def clean_note(self) -> str:
        return self.cleaned_data["note"].strip()
