"""The mine form: a mine of expert decisions on the train days, a field per setting of
:class:`~ace_core.imitation.mining.MineSpec` the web app offers, with the bounds it accepts; its
defaults make the mine a run's ``pretrain_mine=auto`` would make, so such runs reuse it."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from django import forms

from ace_core.config import PretrainConfig
from ace_core.config.checks import class_field_docs
from ace_core.errors import ConfigError
from ace_core.grid.demand import DEMAND_SCALE_RANGE
from ace_core.grid.opponents import OPPONENTS
from webapp.training.forms.launch_fields import env_field
from webapp.training.forms.server_paths import confined_expert
from webapp.training.services.mines import MAX_EPISODE_LENGTH, MAX_SEEDS, check_expert
from webapp.validation import AsciiFloatField, AsciiIntegerField, InputError

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
