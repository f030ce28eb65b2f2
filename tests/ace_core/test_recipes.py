"""Named recipes: valid settings for the grids they name, honest descriptions, and the CLI's
``train --recipe`` (explicit flags win, an unknown name is refused with the accepted ones)."""

from __future__ import annotations

import dataclasses

import pytest

from ace_core.checkpoint import CHECKPOINT_NAME, load_checkpoint
from ace_core.config import TrainConfig
from ace_core.errors import ConfigError
from ace_core.grid.envs import available_env_names
from ace_core.imitation.pretrain import ImitationStart
from ace_core.training.best_choice import BestChoice
from ace_core.training.recipes import DEFAULT_RECIPE, RECIPES, quickest_recipe, recipe_get, recipe_matching
from tests.ace_core.test_cli import run_cli

# The measured best settings with the offline model (docs/ace.md), flag by flag.
BEST_OFFLINE = {
    "llm": "local",
    "actor_selection": "random",
    "imitation": 1.0,
    "finetune_every": 50,
    "critic": False,
    "actor_every": 500,
    "llm_budget": 300,
    "steps": 30_000,
}


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_every_recipe_is_a_valid_config_for_each_grid_it_names(name):
    recipe = RECIPES[name]
    assert recipe.envs and set(recipe.envs) <= set(available_env_names())
    for env in recipe.envs:
        assert recipe.config(env=env).validate().env == env
    assert "env" not in recipe.settings and set(recipe.settings) <= set(TrainConfig().to_dict())
    # a description states figures with their source, or says it was not measured
    assert "docs/" in recipe.description or "Not yet measured" in recipe.description


def test_the_offline_ace_recipe_is_the_measured_best_with_the_offline_model():
    config = recipe_get("ace-14bus-offline").config()
    assert {name: config.get(name) for name in BEST_OFFLINE} == BEST_OFFLINE
    assert config.env == "rte_case14_realistic" and "0.870" in RECIPES["ace-14bus-offline"].description


def test_the_default_recipe_is_the_quickest_measured_one_of_the_default_grid():
    """The launch page's start: a result in about a minute, not the 18-minute LLM run."""
    measured = [r for r in RECIPES.values() if r.minutes is not None and "rte_case14_realistic" in r.envs]
    assert DEFAULT_RECIPE == min(measured, key=lambda r: r.minutes).name == "random-refine-14bus"
    assert quickest_recipe("l2rpn_wcci_2020") is None  # nothing measured there yet


def test_recipes_cannot_be_changed_in_place():
    with pytest.raises(TypeError):
        RECIPES["sac-14bus"] = RECIPES["sac-36bus"]  # type: ignore[index]
    with pytest.raises(TypeError):
        RECIPES["sac-14bus"].settings["steps"] = 5  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        RECIPES["sac-14bus"].name = "other"  # type: ignore[misc]


def test_an_unknown_recipe_is_refused_with_the_accepted_names():
    with pytest.raises(ConfigError, match=r"unknown recipe 'best'; accepted: ace-14bus-offline, .*sac-14bus"):
        recipe_get("best")


def test_a_run_config_is_recognised_as_its_recipe_whatever_the_seed():
    assert recipe_matching(recipe_get("sac-14bus").config(seed=7).to_dict()) == "sac-14bus"
    assert recipe_matching(recipe_get("sac-36bus").config(env="l2rpn_wcci_2020").to_dict()) == "sac-36bus"
    assert recipe_matching(recipe_get("sac-14bus").config(gamma=0.9).to_dict()) is None
    assert recipe_matching(TrainConfig().to_dict()) is None
    # a run made before a setting existed is still its recipe's (the setting has its default)
    before = recipe_get("imitation-sac-14bus-3day").config(seed=1).to_dict()
    del before["pretrain_attacks"]
    assert recipe_matching(before) == "imitation-sac-14bus-3day"


def test_train_from_a_recipe_with_explicit_flags_on_top(tmp_path):
    out = tmp_path / "run"
    # the recipe's LLM-loop settings stay; the grid and budget flags given here win
    run_cli(
        "train",
        "--recipe",
        "random-refine-14bus",
        "--env",
        "l2rpn_case14_sandbox",
        "--steps",
        "60",
        "--learning-starts",
        "32",
        "--batch-size",
        "32",
        "--hidden",
        "32",
        "--rho-threshold",
        "0.5",
        "--actor-every",
        "30",
        "--llm-budget",
        "8",
        "--out",
        str(out),
        check_rc=0,
    )
    config = TrainConfig.from_dict(load_checkpoint(out / CHECKPOINT_NAME)["config"]).to_dict()
    assert (config["env"], config["steps"], config["actor_every"], config["llm_budget"]) == (
        "l2rpn_case14_sandbox",
        60,
        30,
        8,
    )
    assert (config["llm"], config["critic"], config["actor_selection"], config["imitation"]) == (
        "random",
        False,
        "random",
        1.0,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--recipe", "best"], "unknown recipe 'best'; accepted: ace-14bus-offline, random-refine-14bus"),
        (["--recipe", "sac-14bus", "--resume"], "--recipe does not apply to --resume"),
    ],
)
def test_bad_recipe_use_exits_2_with_one_line_and_writes_nothing(tmp_path, args, message):
    out = tmp_path / "run"
    proc = run_cli("train", *args, "--out", str(out), check_rc=2)
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: ")
    assert not out.exists()


def test_recipes_are_listed_from_the_command_line():
    listing = run_cli("recipes", check_rc=0).stdout
    assert all(name in listing for name in RECIPES) and "Not yet measured" in listing


@pytest.mark.parametrize(
    ("name", "demand_scale", "opponent"),
    [("stress-sac-36bus", 1.1, "env"), ("storm-sac-36bus", 1.0, "storm")],
)
def test_the_36bus_stress_rl_recipes_start_from_the_stress_clones_mines(
    tmp_path, name, demand_scale, opponent
):
    """RL on heavier days or under the storm, acting as the plain policy is deployed: cloned and
    anchored on the mines stress-clone-36bus makes (the same cache entries, so one recipe reuses
    the other's; under the storm thanks to pretrain_opponent)."""
    clone, rl = recipe_get("stress-clone-36bus").config(seed=3), recipe_get(name).config(seed=3)
    mines = ImitationStart(clone, tmp_path / "clone").mine_dirs()
    assert ImitationStart(rl, tmp_path / "rl").mine_dirs() == mines and len(mines) == 3
    assert rl.validate().anchor_mines() == ["auto"] and rl.sac.anchor > 0
    assert (rl.rho_threshold, rl.demand_scale, rl.opponent) == (1.0, demand_scale, opponent)
    assert (rl.validation.demand_scale, rl.validation.opponent) == (1.1, "storm")


def test_the_heavy_14bus_recipe_shares_the_three_day_mines_and_chooses_on_uneven_days(tmp_path):
    """RL on heavier days from the three-day recipe's clone: the same three mines (cached once for
    both recipes), RL at x1.10, and best.pt chosen on the uneven copies of the validation days
    among the policies that hold the days as they are."""
    three_day = recipe_get("imitation-sac-14bus-3day").config(seed=3)
    heavy = recipe_get("imitation-sac-14bus-3day-heavy").config(seed=3).validate()
    mines = ImitationStart(three_day, tmp_path / "three-day").mine_dirs()
    assert ImitationStart(heavy, tmp_path / "heavy").mine_dirs() == mines and len(mines) == 3
    assert (heavy.demand_scale, three_day.demand_scale) == (1.1, 1.0)
    assert heavy.validation.uneven_scales() == (1.05, 1.1, 1.15)
    assert BestChoice.of_config(heavy.to_dict()) == BestChoice("uneven", 0.95)
    assert recipe_matching(heavy.to_dict()) == "imitation-sac-14bus-3day-heavy"
