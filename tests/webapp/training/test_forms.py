"""The forms' fields come from the dataclasses that declare the settings: their groups from the
titles of TrainConfig's sections, the mine form's fields from MineSpec."""

import dataclasses

from ace_core.config import PretrainConfig, config_fields
from ace_core.config.checks import class_field_docs
from ace_core.config.sections import GROUPS
from ace_core.imitation.mining import MineSpec
from webapp.training.forms.launch import TrainConfigForm
from webapp.training.forms.launch_fields import FORM_GROUPS, MAIN_GROUPS
from webapp.training.forms.mines import MineForm


def test_the_launch_form_groups_each_setting_under_its_sections_title():
    by_name = {f.name: f.group for f in config_fields()}
    assert list(FORM_GROUPS) == [title for title in GROUPS if title in FORM_GROUPS]
    assert sorted(sum(FORM_GROUPS.values(), ())) == sorted(by_name)  # every setting once
    assert all(by_name[name] == title for title, names in FORM_GROUPS.items() for name in names)
    assert set(FORM_GROUPS["Imitation start"]) == {n for n in by_name if n.startswith("pretrain_")}
    assert FORM_GROUPS["Validation"] == (
        "validate_every",
        "validation_seeds",
        "validation_demand_scale",
        "validation_opponent",
        "validation_attack_seeds",
        "validation_uneven",
        "validation_uneven_seeds",
        "validation_decides",
        "validation_floor",
        "validation_keep",
    )
    form = TrainConfigForm()
    assert [title for title, _ in form.advanced_groups()] == [t for t in FORM_GROUPS if t not in MAIN_GROUPS]


def test_the_mine_form_offers_minespecs_settings_with_their_docstrings():
    form = MineForm()
    docs = class_field_docs(MineSpec)
    offered = [f.name for f in dataclasses.fields(MineSpec) if f.name not in ("split", "player")]
    assert list(form.fields) == offered
    assert all(form.fields[name].help_text == docs[name] for name in offered)
    defaults = {f.name: f.default for f in dataclasses.fields(MineSpec)}
    assert form.fields["expert"].initial == defaults["expert"] == "greedy"
    assert form.fields["episode_length"].initial == defaults["episode_length"]
    assert form.fields["opponent"].initial == "env" and form.fields["demand_scale"].initial == 1.0
    # the mine a run's pretrain_mine=auto makes, so that such runs reuse it
    assert form.fields["seeds"].initial == PretrainConfig().seeds == 2
    assert not form.fields["episodes"].required and form.fields["seeds"].required


def test_settings_left_out_of_the_mine_form_get_minespecs_defaults():
    env = MineForm().fields["env"].choices[0][0]
    form = MineForm({"env": env, "expert": "greedy", "seeds": "1", "episode_length": "8"})
    assert form.is_valid(), form.errors
    assert form.cleaned_data == {
        "env": env,
        "expert": "greedy",
        "episodes": None,
        "seeds": 1,
        "episode_length": 8,
        "opponent": "env",
        "demand_scale": 1.0,
    }
