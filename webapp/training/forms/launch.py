"""The launch form: one field per :class:`ace_core.config.TrainConfig` field
(:mod:`~webapp.training.forms.launch_fields`), started from a named recipe, and its errors from
:meth:`TrainConfig.validate` put on the field they name; and the recipes the page offers, with
every setting each fills, for the page's script."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from ace_core.config import TrainConfig, config_fields
from ace_core.errors import ConfigError
from ace_core.training.recipes import RECIPES, recipe_get
from webapp.training.forms.launch_fields import FORM_GROUPS, MAIN_GROUPS, config_form_fields
from webapp.training.forms.server_paths import clean_paths
from webapp.training.selectors.runs import env_names
from webapp.training.services.runs import LABEL_MAX_LENGTH, missing_server


def config_field_for_message(message: str, names: list[str]) -> str | None:
    """The config field a ConfigError message is about (messages start with the field's name)."""
    match = re.match(r"(?:unknown\s+)?([a-z_]+)", message)
    if match and match.group(1) in names:
        return match.group(1)
    return None


def clean_config(form: forms.BaseForm, cleaned: dict[str, Any]) -> dict[str, Any]:
    """Put the validated TrainConfig in ``cleaned["config"]``, or its error on the field it names."""
    names = [field.name for field in config_fields()]
    clean_paths(form, cleaned)
    if any(name in form.errors for name in names):
        return cleaned  # type errors first; TrainConfig is checked once they are fixed
    values = {name: cleaned[name] for name in names if name in cleaned}
    try:
        config = TrainConfig.from_dict(values).validate()
    except ConfigError as error:
        form.add_error(config_field_for_message(str(error), names), str(error))
        return cleaned
    missing = missing_server(config)
    if missing:
        form.add_error("llm", missing)
    else:
        cleaned["config"] = config
    return cleaned


CUSTOM_RECIPE = ""
CUSTOM_DESCRIPTION = "no recipe: the trainer's default settings, to set one by one under Advanced"


def offered_recipes() -> list[str]:
    """The recipes whose grid is available here, in the order of :data:`ace_core.training.recipes.RECIPES`."""
    available = set(env_names())
    return [name for name, recipe in RECIPES.items() if recipe.envs[0] in available]


def recipe_field() -> forms.ChoiceField:
    names = offered_recipes()
    choices = [(CUSTOM_RECIPE, "custom")] + [(name, f"{name} ({RECIPES[name].envs[0]})") for name in names]
    accepted = ", ".join(names)
    return forms.ChoiceField(
        choices=choices,
        required=False,
        help_text="named settings measured on a grid; choosing one fills every setting under Advanced",
        error_messages={
            "invalid_choice": f"unknown recipe %(value)s; accepted: {accepted} (or empty: custom)"
        },
    )


def recipe_presets() -> dict[str, dict[str, Any]]:
    """Per recipe offered (and custom): its description and every setting it fills, for the page's
    script (``json_script``) and for the list of recipes shown without it."""
    presets = {
        CUSTOM_RECIPE: {"description": CUSTOM_DESCRIPTION, "values": TrainConfig().to_dict(), "sets": {}}
    }
    for name in offered_recipes():
        recipe = RECIPES[name]
        presets[name] = {
            "description": recipe.description,
            "envs": list(recipe.envs),
            "values": recipe.values(),
            "sets": {"env": recipe.envs[0], **recipe.settings},
        }
    return presets


class TrainConfigForm(forms.Form):
    """Every TrainConfig field. ``cleaned_data["config"]`` is the validated TrainConfig.

    ``recipe`` (unbound forms only) starts every field from that recipe's settings; the posted
    settings are what a run gets (the page's script fills them when a recipe is chosen), and the
    posted recipe name is only checked and shown again.
    """

    label = forms.CharField(
        required=False, max_length=LABEL_MAX_LENGTH, help_text="a short name for this run (optional)"
    )

    def __init__(self, *args: Any, recipe: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields.update(config_form_fields())
        self.fields["recipe"] = recipe_field()
        self.config_names = [field.name for field in config_fields()]
        if recipe is not None and not self.is_bound:
            values = recipe_get(recipe).values() if recipe != CUSTOM_RECIPE else {}
            self.initial.update({**values, "recipe": recipe})

    def main_fields(self) -> list[forms.BoundField]:
        """The settings shown beside the recipe (:data:`MAIN_GROUPS`), in TrainConfig's order."""
        main = {name for title in MAIN_GROUPS for name in FORM_GROUPS[title]}
        return [self[name] for name in self.config_names if name in main]

    def advanced_groups(self) -> list[tuple[str, list[forms.BoundField]]]:
        """(title, fields) of each group under Advanced, in page order (:data:`FORM_GROUPS`)."""
        return [
            (title, [self[name] for name in names])
            for title, names in FORM_GROUPS.items()
            if title not in MAIN_GROUPS
        ]

    def clean(self) -> dict[str, Any]:
        return clean_config(self, super().clean())
