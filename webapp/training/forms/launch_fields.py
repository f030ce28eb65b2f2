"""The launch form's settings: a form field per :class:`ace_core.config.TrainConfig` field (a choice
where TrainConfig accepts a few values, the envs available here, the finished mines for the
imitation start, numbers with the range TrainConfig accepts), help text from the field's
docstring, and the groups the page shows them in (the titles of TrainConfig's sections)."""

from __future__ import annotations

import functools
from typing import Any

from django import forms

from ace_core.config import (
    ACTOR_ANSWERS,
    ACTOR_SELECTIONS,
    CRITIC_FORMATS,
    HEADS,
    LLM_BACKENDS,
    TRAJECTORY_SELECTIONS,
    ConfigField,
    PretrainConfig,
    TrainConfig,
    ValidationConfig,
    config_fields,
)
from ace_core.config.sections import BUDGET, GROUPS
from ace_core.errors import ConfigError
from ace_core.grid.opponents import OPPONENTS
from webapp.training.selectors.mines import MineInfo, mine_list
from webapp.training.selectors.runs import env_names
from webapp.validation import DB_INT_MAX, AsciiFloatField, AsciiIntegerField

CHOICES: dict[str, tuple[str, ...]] = {
    "head": HEADS,
    "llm": LLM_BACKENDS,
    "trajectory_selection": TRAJECTORY_SELECTIONS,
    "critic_format": CRITIC_FORMATS,
    "actor_answer": ACTOR_ANSWERS,
    "actor_selection": ACTOR_SELECTIONS,
    "opponent": OPPONENTS,
}
MAIN_GROUPS = (PretrainConfig.title, BUDGET, ValidationConfig.title)
"""the groups shown beside the recipe, outside Advanced: what one changes from run to run"""


def form_groups() -> dict[str, tuple[str, ...]]:
    """Group title -> the names of its settings (:attr:`ConfigField.group`, the title of their
    TrainConfig section unless their field names another): groups in page order
    (:data:`ace_core.config.sections.GROUPS`), settings in TrainConfig's order."""
    fields = config_fields()
    groups = {title: tuple(f.name for f in fields if f.group == title) for title in GROUPS}
    return {title: names for title, names in groups.items() if names}


FORM_GROUPS = form_groups()
"""the launch form's groups: :data:`MAIN_GROUPS` beside the recipe, the others under Advanced"""


def _config_field(field: ConfigField, default: Any, help_text: str) -> forms.Field:
    label = field.name.replace("_", " ")
    options: dict[str, Any] = {"label": label, "help_text": help_text, "initial": default}
    if field.name == "env":
        return env_field(options)
    if field.name == "pretrain_mine":
        return pretrain_mine_field(options)
    if field.name in CHOICES:
        accepted = ", ".join(CHOICES[field.name])
        return forms.ChoiceField(
            choices=[(value, value) for value in CHOICES[field.name]],
            error_messages={"invalid_choice": f"%(value)s is not accepted; choose one of: {accepted}"},
            **options,
        )
    if isinstance(default, bool):
        return forms.BooleanField(required=False, **options)
    if isinstance(default, int):
        accepted = accepted_range(field.name, default)
        return AsciiIntegerField(min_value=-DB_INT_MAX, accepted=accepted, **options)
    if isinstance(default, float):
        return AsciiFloatField(accepted=accepted_range(field.name, default), **options)
    return forms.CharField(required=False, max_length=500, **options)


def env_field(options: dict[str, Any]) -> forms.ChoiceField:
    """A choice of the envs available here; any other is refused with their list."""
    names = env_names()
    invalid = f"unknown env %(value)s; available here: {', '.join(names)}"
    return forms.ChoiceField(
        choices=[(name, name) for name in names], error_messages={"invalid_choice": invalid}, **options
    )


@functools.cache
def accepted_range(name: str, default: int | float) -> str:
    """The range TrainConfig.validate accepts for a number field, read from its refusal of an
    extreme value, so that a form error says it before TrainConfig is reached."""
    for extreme in (-(10**15), 10**15):
        try:
            TrainConfig(**{name: type(default)(extreme)}).validate()
        except ConfigError as error:
            if str(error).startswith(f"{name}=") and "accepted: " in str(error):
                return str(error).split("accepted: ", 1)[1]
    return "a whole number" if isinstance(default, int) else "a number"


def config_form_fields() -> dict[str, forms.Field]:
    """A form field per TrainConfig field, in the dataclass's order."""
    return {field.name: _config_field(field, field.default, field.doc) for field in config_fields()}


NO_IMITATION = ""
AUTO_MINE = "auto"


def mine_label(info: MineInfo) -> str:
    return (
        f"{info.name}: {info.expert}, {info.seeds} seed(s), {info.episodes} episodes, "
        f"{info.distinct_topologies} topologies"
    )


def pretrain_mine_field(options: dict[str, Any]) -> forms.ChoiceField:
    """No imitation start, auto, or one of the finished mines (grouped by env; the page's script
    offers only the chosen env's). Its values are the mines' directories: nothing else is accepted."""
    choices: list[tuple[str, Any]] = [
        (NO_IMITATION, "no imitation start"),
        (AUTO_MINE, "auto (mine the train days first)"),
    ]
    by_env: dict[str, list[tuple[str, str]]] = {}
    for info in mine_list():
        by_env.setdefault(info.env, []).append((info.path, mine_label(info)))
    choices += list(by_env.items())
    refusal = "not a finished mine listed here; accepted: no imitation start, auto, or a finished mine of the chosen env (see the mines page)"
    return forms.ChoiceField(
        choices=choices, required=False, error_messages={"invalid_choice": refusal}, **options
    )
