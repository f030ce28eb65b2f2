"""The launch form: one field per :class:`ace_core.config.TrainConfig` field, help text from the
field's docstring, errors from :meth:`TrainConfig.validate` put on the field they name."""

from __future__ import annotations

import functools
import re
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
    TrainConfig,
    config_fields,
)
from ace_core.errors import ConfigError
from ace_core.grid.demand import DEMAND_SCALE_RANGE
from ace_core.grid.opponents import OPPONENTS
from ace_core.recipes import RECIPES, recipe_get
from webapp.training.selectors import COMPARE_MAX_RUNS, MineInfo, env_names, mine_by_path, mine_list
from webapp.training.services.evaluations import MAX_EPISODES, SPLITS
from webapp.training.services.mines import EXPERT_SYNTAX, MAX_EPISODE_LENGTH, MAX_SEEDS, check_expert
from webapp.training.services.runs import LABEL_MAX_LENGTH
from webapp.validation import (
    DB_INT_MAX,
    AsciiFloatField,
    AsciiIntegerField,
    InputError,
    confined_file,
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
LLM_SECTION = "LLM co-evolution (ACE)"
MAIN_SECTION = "Imitation start, budget and validation"
"""shown beside the recipe, outside Advanced: what one changes from run to run"""
# Shown as sections on the page, in this order; fields not listed fall into "Training".
SECTIONS = {
    MAIN_SECTION: (
        "pretrain_mine",
        "pretrain_expert",
        "pretrain_seeds",
        "pretrain_demand_scales",
        "pretrain_epochs",
        "decisions",
        "validate_every",
        "validation_seeds",
        "validation_demand_scale",
    ),
    "Environment": ("env", "steps", "seed", "rho_threshold", "episode_length", "opponent"),
    LLM_SECTION: (
        "llm",
        "llm_model",
        "actor",
        "critic",
        "r_bar",
        "shaping_k",
        "beta",
        "imitation",
        "actor_every",
        "critic_every",
        "finetune_every",
        "trajectory_selection",
        "llm_budget",
        "require_approval",
        "actor_batch",
        "actor_selection",
        "actor_candidates",
        "actor_rounds",
        "actor_answer",
        "critic_threshold",
        "critic_format",
        "critic_key_steps",
        "priority_temperature",
        "priority_max",
        "finetune_max_steps",
        "llm_timeout",
    ),
}
LLM_PREFIXES = ("llm_", "actor_", "critic_", "finetune_", "priority_", "shaping_")
"""settings of the ACE loop added to TrainConfig later land in the LLM section by their name"""


def section_of(name: str) -> str:
    """The section a TrainConfig field is shown in."""
    for title, names in SECTIONS.items():
        if name in names:
            return title
    return LLM_SECTION if name.startswith(LLM_PREFIXES) else "Training"


def _config_field(field: ConfigField, default: Any, help_text: str) -> forms.Field:
    label = field.name.replace("_", " ")
    options: dict[str, Any] = {"label": label, "help_text": help_text, "initial": default}
    if field.name == "env":
        names = env_names()
        invalid = f"unknown env %(value)s; available here: {', '.join(names)}"
        return forms.ChoiceField(
            choices=[(name, name) for name in names], error_messages={"invalid_choice": invalid}, **options
        )
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
    from ace_core.expert import parse_expert_spec

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
        cleaned["config"] = TrainConfig.from_dict(values).validate()
    except ConfigError as error:
        form.add_error(config_field_for_message(str(error), names), str(error))
    return cleaned


CUSTOM_RECIPE = ""
CUSTOM_DESCRIPTION = "no recipe: the trainer's default settings, to set one by one under Advanced"


def offered_recipes() -> list[str]:
    """The recipes whose grid is available here, in the order of :data:`ace_core.recipes.RECIPES`."""
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
        """The settings shown beside the recipe (:data:`MAIN_SECTION`), in TrainConfig's order."""
        return [self[name] for name in self.config_names if section_of(name) == MAIN_SECTION]

    def sections(self) -> list[tuple[str, list[forms.BoundField]]]:
        """(title, fields) of Advanced in page order: Environment, Training, then the LLM
        co-evolution loop; fields keep TrainConfig's order inside each section."""
        titles = ["Environment", "Training", LLM_SECTION]
        grouped: dict[str, list[forms.BoundField]] = {title: [] for title in titles}
        for name in self.config_names:
            if section_of(name) != MAIN_SECTION:
                grouped[section_of(name)].append(self[name])
        return list(grouped.items())

    def clean(self) -> dict[str, Any]:
        return clean_config(self, super().clean())


class MineForm(forms.Form):
    """A mine of the train days (:mod:`ace_core.mining`); the defaults make the mine that a run's
    ``pretrain_mine=auto`` would make, so such runs reuse it."""

    env = forms.ChoiceField(help_text="the grid whose train days the expert plays")
    expert = forms.CharField(
        max_length=500,
        initial="greedy",
        help_text=f"accepted: {EXPERT_SYNTAX} (keys: budget, lines, threshold, safe, actions, learned)",
    )
    seeds = AsciiIntegerField(
        min_value=1, max_value=MAX_SEEDS, initial=2, help_text="grid seeds each train day is played with"
    )
    episodes = AsciiIntegerField(
        min_value=1, max_value=10_000, required=False, help_text="the first N train days (empty: all of them)"
    )
    episode_length = AsciiIntegerField(
        label="episode length",
        min_value=2,
        max_value=MAX_EPISODE_LENGTH,
        initial=288,
        help_text="steps per day",
    )
    opponent = forms.ChoiceField(
        label="line attacks",
        choices=[(name, name) for name in OPPONENTS],
        initial="env",
        required=False,
        help_text="env: the grid's own opponent; none; random-line: grid2op's RandomLineOpponent (14- and 36-bus grids)",
    )
    demand_scale = AsciiFloatField(
        label="demand scale",
        min_value=DEMAND_SCALE_RANGE[0],
        max_value=DEMAND_SCALE_RANGE[1],
        required=False,
        initial=1.0,
        help_text="every load and production of the mined days times this (1.05: heavier days, "
        "more decisions that matter); empty or 1: the days as they are",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = env_names()
        self.fields["env"].choices = [(name, name) for name in names]
        self.fields["env"].error_messages["invalid_choice"] = (
            f"unknown env %(value)s; available here: {', '.join(names)}"
        )

    def clean_opponent(self) -> str:
        return self.cleaned_data["opponent"] or "env"  # left out: the grid as it is

    def clean_demand_scale(self) -> float:
        value = self.cleaned_data["demand_scale"]
        return 1.0 if value is None else value  # left out: the days as they are

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
    comment = forms.CharField(required=False, max_length=500, widget=forms.TextInput)


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
