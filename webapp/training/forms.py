"""The launch form: one field per :class:`ace_core.config.TrainConfig` field, help text from the
field's docstring, grouped by the titles of TrainConfig's sections, errors from
:meth:`TrainConfig.validate` put on the field they name."""

from __future__ import annotations

import dataclasses
import functools
import re
import typing
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
from ace_core.config.checks import class_field_docs
from ace_core.config.sections import BUDGET, GROUPS
from ace_core.errors import ConfigError
from ace_core.grid.demand import DEMAND_SCALE_RANGE
from ace_core.grid.opponents import OPPONENTS
from ace_core.training.recipes import RECIPES, recipe_get
from webapp.training.selectors import COMPARE_MAX_RUNS, env_names
from webapp.training.selectors.mines import MineInfo, mine_by_path, mine_list
from webapp.training.services.deployment import (
    COMMENT_MAX_LENGTH,
    OVERRIDE_MAX_LENGTH,
    OVERRIDE_MIN_LENGTH,
)
from webapp.training.services.evaluations import MAX_EPISODES, SPLITS
from webapp.training.services.mines import MAX_EPISODE_LENGTH, MAX_SEEDS, check_expert
from webapp.training.services.runs import LABEL_MAX_LENGTH, missing_server
from webapp.validation import (
    DB_INT_MAX,
    AsciiFloatField,
    AsciiIntegerField,
    InputError,
    confined_file,
    expert_spec,
    model_reference,
)

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


def config_field_for_message(message: str, names: list[str]) -> str | None:
    """The config field a ConfigError message is about (messages start with the field's name)."""
    match = re.match(r"(?:unknown\s+)?([a-z_]+)", message)
    if match and match.group(1) in names:
        return match.group(1)
    return None


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


def finished_mine(value: str, name: str) -> str:
    """``auto``, or the directory of a mine the mines page lists (never any other path)."""
    if value == AUTO_MINE or mine_by_path(path=value) is not None:
        return value
    raise InputError(
        f"{name}: not a finished mine listed here; accepted: no imitation start, auto, or a listed mine"
    )


def finished_mines(value: str, name: str) -> str:
    """Comma-separated directories of mines the mines page lists (never any other path)."""
    pieces = [piece.strip() for piece in value.split(",") if piece.strip()]
    for piece in pieces:
        if mine_by_path(path=piece) is None:
            raise InputError(
                f"{name}: {piece[:80]!r} is not a finished mine listed here; accepted: finished mines' "
                "directories (see the mines page), comma-separated, or empty for the pretrain mine"
            )
    return ",".join(pieces)


def confined_expert(value: str, name: str) -> str:
    """An expert spec whose mined action set (``actions=FILE``), if any, lies in the runs or data
    folder, named by its resolved path. Other mistakes are left to the spec's own check, which
    gives the accepted syntax."""
    from ace_core.config.expert import parse_expert_spec

    value = expert_spec(value, name)  # numbers as every number is read, the budget bounded
    kind, _, argument = value.strip().partition(":")
    try:
        actions = parse_expert_spec(argument).actions if kind == "greedy" else ""
    except ConfigError:
        return value
    if not actions:
        return value
    resolved = confined_file(actions, f"{name} actions")
    items = [
        f"actions={resolved}" if item.strip().startswith("actions=") else item for item in argument.split(",")
    ]
    return f"{kind}:{','.join(items)}"


PATH_FIELDS = {
    "action_subset": confined_file,
    "init_from": confined_file,
    "llm_model": model_reference,
    "pretrain_mine": finished_mine,
    "anchor_mine": finished_mines,
    "pretrain_expert": confined_expert,
}
"""fields that name a file or folder on the server: confined to the runs and data folders, or to
the finished mines listed on the mines page"""


def clean_paths(form: forms.BaseForm, cleaned: dict[str, Any]) -> None:
    for name, check in PATH_FIELDS.items():
        if cleaned.get(name):
            try:
                cleaned[name] = check(cleaned[name], name)
            except InputError as error:
                form.add_error(name, str(error))
    mine = mine_by_path(path=cleaned.get("pretrain_mine") or "")
    env = cleaned.get("env")
    if mine is not None and env and mine.env != env and "pretrain_mine" not in form.errors:
        form.add_error(
            "pretrain_mine",
            f"mine {mine.name} was mined on {mine.env}, not {env}; choose a mine of {env}, auto, or no imitation start",
        )


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


MINE_OPTIONAL = ("episodes", "opponent", "demand_scale")
"""mine settings that may be left empty: MineSpec's default (every day, the env's own line attacks,
the days as they are)"""
MINE_LIMITS: dict[str, tuple[float, float]] = {
    "seeds": (1, MAX_SEEDS),
    "episodes": (1, 10_000),
    "episode_length": (2, MAX_EPISODE_LENGTH),
    "demand_scale": DEMAND_SCALE_RANGE,
}
"""what the mine form accepts of each number"""


def mine_form_fields() -> dict[str, forms.Field]:
    """A field per MineSpec setting the web app offers (not ``split`` nor ``player``: it mines the
    train days, played by the expert), in MineSpec's order, help text from the field's docstring.
    The initial values are MineSpec's defaults, except the seeds: a run's ``pretrain_mine=auto``
    mines with ``pretrain_seeds``, and the form's defaults make that mine, so such runs reuse it."""
    from ace_core.imitation.mining import MineSpec

    docs, hints = class_field_docs(MineSpec), typing.get_type_hints(MineSpec)
    initial = {"seeds": PretrainConfig().seeds}
    fields: dict[str, forms.Field] = {}
    for f in dataclasses.fields(MineSpec):
        if f.name in ("split", "player"):
            continue
        options = {
            "label": f.name.replace("_", " "),
            "help_text": docs.get(f.name, ""),
            "initial": initial.get(f.name, None if f.default is dataclasses.MISSING else f.default),
            "required": f.name not in MINE_OPTIONAL,
        }
        fields[f.name] = _mine_field(f.name, hints[f.name], options)
    return fields


def _mine_field(name: str, hint: Any, options: dict[str, Any]) -> forms.Field:
    if name == "env":
        return env_field(options)
    if name == "opponent":
        return forms.ChoiceField(choices=[(value, value) for value in OPPONENTS], **options)
    limits = (
        dict(zip(("min_value", "max_value"), MINE_LIMITS[name], strict=True)) if name in MINE_LIMITS else {}
    )
    if hint is float:
        return AsciiFloatField(**limits, **options)
    if hint in (int, int | None):
        return AsciiIntegerField(**limits, **options)
    return forms.CharField(max_length=500, **options)


class MineForm(forms.Form):
    """A mine of the train days (:mod:`ace_core.imitation.mining`): a field per setting of
    :class:`~ace_core.imitation.mining.MineSpec` it offers (:func:`mine_form_fields`); the defaults
    make the mine that a run's ``pretrain_mine=auto`` would make, so such runs reuse it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields.update(mine_form_fields())

    def clean(self) -> dict[str, Any]:
        from ace_core.imitation.mining import MineSpec

        cleaned = super().clean()
        defaults = {f.name: f.default for f in dataclasses.fields(MineSpec)}
        for name in MINE_OPTIONAL:
            if name in cleaned and cleaned[name] in (None, ""):
                cleaned[name] = defaults[name]  # left out: MineSpec's default
        return cleaned

    def clean_expert(self) -> str:
        value = self.cleaned_data["expert"]
        try:
            return check_expert(confined_expert(value, "expert"))
        except (ConfigError, InputError) as error:
            raise forms.ValidationError(str(error)) from None


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


class RunIdsField(forms.Field):
    """Run ids from a repeated query parameter (``?run=3&run=7``): whole numbers, 1 to
    :data:`~webapp.training.selectors.COMPARE_MAX_RUNS` of them, each kept once."""

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
