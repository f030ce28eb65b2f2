import shutil
from pathlib import Path

import numpy as np
import pytest
from grid2op.Runner import Runner

from ace_core.grid.chronic_seeds import SeededMultifolder, chronic_seed
from ace_core.grid.envs import bundled_env_dir, make_env

DAY = 288
WCCI = "l2rpn_wcci_2020"  # the bundled copy: one 10-day April chronic with a maintenance model


def outages_of_day(env, seed: int, chronic: int, day: int) -> list[int]:
    """The lines a reset with ``seed`` plans out on ``day`` of ``chronic``."""
    options = {"time serie id": chronic, "max step": DAY} | ({"init ts": day * DAY} if day else {})
    env.reset(seed=seed, options=options)
    maintenance = env.chronics_handler.real_data.data.maintenance
    if maintenance is None:  # chronics without a maintenance model or file
        return []
    return np.flatnonzero(maintenance[day * DAY : (day + 1) * DAY].any(axis=0)).tolist()


def test_chronic_seed_depends_on_the_seed_and_the_chronic_name_only():
    assert chronic_seed(3, "/a/chronics/Scenario_april_000") == chronic_seed(3, "/b/Scenario_april_000")
    assert chronic_seed(3, "x/Scenario_april_000") != chronic_seed(4, "x/Scenario_april_000")
    assert chronic_seed(3, "x/Scenario_april_000") != chronic_seed(3, "x/Scenario_april_001")


def test_the_cache_and_the_runner_plan_the_same_outages_for_a_day_and_seed():
    cached = make_env(WCCI)
    plain = make_env(WCCI, cache_chronics=False)
    assert Runner(**plain.get_params_for_runner()).gridStateclass is SeededMultifolder

    draws = {seed: outages_of_day(cached, seed, 0, day=2) for seed in range(8)}

    assert draws == {seed: outages_of_day(plain, seed, 0, day=2) for seed in range(8)}
    assert any(draws.values()), "no seed planned an outage: the comparison would be empty"
    assert len({tuple(lines) for lines in draws.values()}) > 1, "the seed changed nothing"


def test_a_chronic_plans_the_same_outages_whatever_else_is_cached(tmp_path, monkeypatch):
    folder = tmp_path / WCCI
    shutil.copytree(bundled_env_dir(WCCI), folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("GRIDACE_DATA_DIR", str(tmp_path))
    alone = make_env(WCCI)
    draws_alone = [outages_of_day(alone, seed, 0, day) for seed in range(4) for day in range(3)]
    chronics = folder / "chronics"
    original = next(chronics.iterdir())
    for copy in ("A_first_in_the_cache", "Z_last_in_the_cache"):  # sorted before and after it
        shutil.copytree(original, chronics / copy)

    among_others = make_env(WCCI)
    index = [Path(path).name for path in among_others.chronics_handler.real_data.subpaths]

    assert index.index(original.name) == 1
    assert draws_alone == [
        outages_of_day(among_others, seed, 1, day) for seed in range(4) for day in range(3)
    ]
    assert any(draws_alone)


@pytest.mark.parametrize("cache_chronics", [True, False])
def test_envs_without_a_maintenance_model_plan_no_outage(cache_chronics):
    env = make_env("rte_case14_realistic", cache_chronics=cache_chronics)
    assert outages_of_day(env, 5, 0, day=0) == []
