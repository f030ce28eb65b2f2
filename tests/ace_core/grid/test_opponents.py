"""Line attacks: grid2op's RandomLineOpponent really disconnects the listed lines during an
evaluation, the env's own opponent can be removed, and a bad opponent name is a clear error."""

import re

import numpy as np
import pytest
from grid2op.Episode import EpisodeData
from grid2op.Opponent import BaseOpponent, RandomLineOpponent, WeightedRandomOpponent

from ace_core.errors import ConfigError
from ace_core.evaluation.runner import evaluate
from ace_core.grid.envs import make_env
from ace_core.grid.opponents import ATTACKED_LINES, PROFILES, check_opponent, opponent_kwargs


def test_random_line_attacks_disconnect_a_listed_line_during_an_evaluation(tmp_path):
    # the budget (0.5 a step, 1 a step of a 48-step attack) allows the first attack at step 96
    out = tmp_path / "eval"
    report = evaluate(
        "rte_case14_realistic",
        "do-nothing",
        "test",
        nb_episode=1,
        out_dir=out,
        opponent="random-line",
        episode_length=120,
    )
    assert report["opponent"] == "random-line" and report["attacks"] == report["episodes"][0]["attacks"] >= 1
    folder = next((out / "episodes" / "seed0").iterdir())
    data = EpisodeData.from_disk(str(folder), next(p.name for p in folder.iterdir() if p.is_dir()))
    attacks = np.nan_to_num(np.asarray(data.attacks.collection, dtype=float))
    attacked_steps = np.flatnonzero((attacks != 0).any(axis=1))
    first = int(attacked_steps[0])
    assert first >= 95
    (line,) = np.flatnonzero(attacks[first])
    assert str(data.observations[0].name_line[line]) in ATTACKED_LINES["rte_case14_realistic"]
    # the line is out of service in the observation after the attack, and stays out while it lasts
    assert data.observations[first].line_status[line]
    after = range(first + 1, min(first + PROFILES["random-line"].duration, len(data.observations)))
    assert not any(data.observations[t].line_status[line] for t in after)


def test_the_runner_inherits_the_opponent_and_none_removes_the_envs_own():
    params = make_env(
        "rte_case14_realistic", cache_chronics=False, opponent="random-line"
    ).get_params_for_runner()
    assert params["opponent_class"] is RandomLineOpponent
    assert params["opponent_kwargs"]["lines_attacked"][0] == "1_3_3"
    own = make_env("l2rpn_neurips_2020_track1", cache_chronics=False).get_params_for_runner()
    assert own["opponent_class"] is WeightedRandomOpponent
    none = make_env(
        "l2rpn_neurips_2020_track1", cache_chronics=False, opponent="none"
    ).get_params_for_runner()
    assert none["opponent_class"] is BaseOpponent and none["opponent_init_budget"] == 0.0


def test_unknown_opponents_and_envs_without_attacked_lines_are_clear_errors():
    with pytest.raises(
        ConfigError, match="unknown opponent 'bogus'; accepted: env, none, random-line, storm"
    ):
        make_env("rte_case14_realistic", opponent="bogus")
    with pytest.raises(ConfigError, match="no list of attacked lines for env 'rte_case5_example'"):
        opponent_kwargs("rte_case5_example", "random-line")
    assert opponent_kwargs("rte_case5_example", "env") == {}


@pytest.mark.parametrize("env_name", ["l2rpn_case14_sandbox", "rte_case14_test", "l2rpn_icaps_2021"])
def test_the_listed_lines_exist_in_each_naming_of_the_grids(env_name):
    names = set(map(str, make_env(env_name, cache_chronics=False).name_line))
    assert set(ATTACKED_LINES[env_name]) <= names


def test_a_storm_strikes_every_few_hours_and_its_settings_can_be_changed():
    report = evaluate(
        "l2rpn_case14_sandbox", "do-nothing", "test", nb_episode=1, opponent="storm", episode_length=120
    )
    # first attack once the budget holds a 24-step attack (step 12), then one every 48 steps
    assert report["attacks"] >= 2
    kwargs = opponent_kwargs("rte_case14_realistic", "storm:cooldown=36,duration=12")
    assert (kwargs["opponent_attack_cooldown"], kwargs["opponent_attack_duration"]) == (36, 12)
    assert kwargs["opponent_budget_per_ts"] == PROFILES["storm"].budget


@pytest.mark.parametrize(
    ("spec", "canonical"),
    [
        ("storm", "storm"),
        ("storm:", "storm"),
        ("storm:duration=12,cooldown=36", "storm:duration=12,cooldown=36"),
        ("storm:cooldown=48", "storm"),  # the default is dropped
        ("random-line:budget=1", "random-line:budget=1"),
        ("storm:budget=2", "storm"),
        ("none", "none"),
    ],
)
def test_an_opponent_spec_has_one_canonical_form(spec, canonical):
    assert check_opponent(spec) == canonical


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("storm:speed=3", "unknown setting 'speed'; accepted: duration, cooldown, budget, initial"),
        ("storm:cooldown=0", "cooldown='0' is refused; accepted: a whole number of steps from 1 to 2016"),
        ("storm:duration= 12", "duration=' 12' is refused"),
        ("storm:duration=1.5", "duration='1.5' is refused"),
        ("storm:budget=nan", "budget='nan' is refused; accepted: a number from 0.0 to 100.0"),
        ("none:cooldown=3", "opponent 'none' takes no settings"),
        ("hurricane", "unknown opponent 'hurricane'"),
    ],
)
def test_bad_opponent_settings_are_named_with_what_is_accepted(spec, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_opponent(spec)
