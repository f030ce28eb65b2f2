"""Heavier days from the same chronics: loads, productions and their forecasts scaled together."""

import numpy as np
import pytest
from grid2op.Agent import DoNothingAgent
from grid2op.Runner import Runner

from ace_core.errors import ConfigError
from ace_core.grid.chronic_seeds import SeededMultifolder, SeededMultifolderWithCache
from ace_core.grid.demand import keep_within_pmax, scale_demand
from ace_core.grid.envs import make_env
from ace_core.grid.scenarios import reset_to, scenarios


def _first_train_day(env):
    return reset_to(env, scenarios(env, "train")[0], 0)


def test_a_demand_scale_multiplies_the_loads_the_productions_and_their_forecasts():
    plain = _first_train_day(make_env("rte_case14_realistic"))
    heavy_env = make_env("rte_case14_realistic", demand_scale=1.1)
    heavy = _first_train_day(heavy_env)
    np.testing.assert_allclose(heavy.load_p, 1.1 * plain.load_p, rtol=1e-5)
    np.testing.assert_allclose(heavy.load_q, 1.1 * plain.load_q, rtol=1e-5)
    # the generators (but the slack, which takes the losses) follow the loads
    assert np.sum(heavy.gen_p) == pytest.approx(1.1 * np.sum(plain.gen_p), rel=0.01)
    (prod_p, _, load_p, _), (plain_prod_p, _, plain_load_p, _) = (  # grid2op: productions first
        obs.get_forecasted_inj(1) for obs in (heavy, plain)
    )
    np.testing.assert_allclose(load_p, 1.1 * plain_load_p, rtol=1e-5)
    np.testing.assert_allclose(prod_p, 1.1 * plain_prod_p, rtol=1e-5)
    # heavier flows: the lines are more loaded, also after steps
    assert heavy.rho.max() > plain.rho.max()
    assert heavy_env.gridace_demand_scale == 1.1


@pytest.mark.parametrize(
    "value, message",
    [
        (1.5, "demand scale 1.5 is out of range; accepted: 0.8 to 1.3"),
        (0.0, "demand scale 0.0 is out of range; accepted: 0.8 to 1.3"),
        (float("nan"), "must be a number from 0.8 to 1.3"),
        ("heavy", "must be a number from 0.8 to 1.3"),
    ],
)
def test_a_demand_scale_out_of_range_is_refused_with_the_range(value, message):
    with pytest.raises(ConfigError, match=message):
        make_env("rte_case14_realistic", demand_scale=value)


def test_an_env_reading_from_disk_scales_each_chronic_it_reads():
    loads = {}
    for scale in (1.0, 1.1):
        env = make_env("rte_case14_realistic", cache_chronics=False, demand_scale=scale)
        env.set_id(0)
        loads[scale] = float(env.reset().load_p.sum())
    assert loads[1.1] == pytest.approx(1.1 * loads[1.0], rel=1e-4)
    with pytest.raises(ConfigError, match="needs the chronics cached in memory"):
        scale_demand(make_env("rte_case14_realistic", cache_chronics=False), 1.1)


def test_an_env_made_with_forecasts_scales_the_days_and_the_forecasts_it_reads():
    """The console's and the look-ahead's envs read their chronics through handlers: the scale
    reaches the values and the perfect forecasts read from them."""
    from ace_core.grid.forecasts import make_env_with_forecasts

    plain = make_env_with_forecasts("rte_case14_realistic", "perfect", 12)
    heavier = make_env_with_forecasts("rte_case14_realistic", "perfect", 12, demand_scale=1.1)
    for _ in range(2):  # and again after a reset reads the chronic anew
        before = plain.reset(seed=0, options={"time serie id": 1})
        after = heavier.reset(seed=0, options={"time serie id": 1})
        np.testing.assert_allclose(after.load_p, 1.1 * before.load_p, rtol=1e-5)
        np.testing.assert_allclose(
            after.gen_p.sum(), 1.1 * before.gen_p.sum(), rtol=2e-2
        )  # the slack evens out
        ahead = [obs._forecasted_inj[6][1]["injection"]["load_p"] for obs in (before, after)]
        np.testing.assert_allclose(ahead[1], 1.1 * ahead[0], rtol=1e-5)


def test_what_a_generator_cannot_make_is_made_by_the_redispatchable_ones_with_room():
    # three generators: one past its Pmax, a redispatchable one with 30 MW of room, a renewable
    prod_p = np.array([[120.0, 70.0, 20.0], [90.0, 70.0, 20.0]])
    keep_within_pmax(prod_p, ((100.0, 100.0, 50.0), (True, True, False)))
    np.testing.assert_allclose(prod_p, [[100.0, 90.0, 20.0], [90.0, 70.0, 20.0]])
    # more to make up than the room left: the rest is the slack's
    prod_p = np.array([[160.0, 70.0, 20.0]])
    keep_within_pmax(prod_p, ((100.0, 100.0, 50.0), (True, True, False)))
    np.testing.assert_allclose(prod_p, [[100.0, 100.0, 20.0]])


@pytest.mark.parametrize("cache_chronics", [True, False])
def test_heavier_days_keep_every_generator_within_its_pmax(cache_chronics):
    """``gen_32_19`` makes 399 of its 400 MW on the bundled day: x1.15 must not ask it for 459 MW,
    which grid2op cannot redispatch around. Either reader (the cache, or the disk as the Runner's
    env reads it)."""
    env = make_env("l2rpn_wcci_2020", cache_chronics=cache_chronics, demand_scale=1.15)
    if not cache_chronics:  # the env grid2op's Runner builds from this one's parameters
        env = Runner(**env.get_params_for_runner(), agentClass=DoNothingAgent).init_env()
    obs = reset_to(env, scenarios(env, "test")[0], 0)
    data = env.chronics_handler.real_data.data
    prod_p = data.prod_p if getattr(data, "prod_p", None) is not None else data.gen_p_handler.array
    assert (prod_p <= env.gen_pmax + 1e-4).all()
    slack = env.slack_weight > 0 if hasattr(env, "slack_weight") else np.zeros(env.n_gen, bool)
    assert (obs.gen_p[~slack] <= env.gen_pmax[~slack] + 1e-3).all()
    if cache_chronics:  # a redispatch within the ramps can be simulated on such a day
        fast = np.argsort(-np.where(env.gen_redispatchable, env.gen_max_ramp_up, 0))[:2]
        amount = 0.5 * float(min(env.gen_max_ramp_up[fast].min(), env.gen_max_ramp_down[fast].min()))
        action = env.action_space({"redispatch": [(int(fast[0]), -amount), (int(fast[1]), amount)]})
        _, _, done, info = obs.simulate(action)
        assert not done and not info["exception"]


def _day_under(seed: int, *, spread: float, runner: bool = False):
    """The first validation day at x1.1 under grid seed ``seed``: as ``evaluate`` reads it, or as
    the env grid2op's Runner builds from its parameters reads it."""
    env = make_env("rte_case14_realistic", cache_chronics=False, demand_scale=1.1, demand_spread=spread)
    if runner:
        env = Runner(**env.get_params_for_runner(), agentClass=DoNothingAgent).init_env()
    return reset_to(env, scenarios(env, "validation")[0], seed)


def test_a_demand_spread_draws_each_loads_share_from_the_grid_seed_and_keeps_every_steps_total():
    heavier = _day_under(0, spread=0.0)
    seed_0, seed_1 = _day_under(0, spread=0.05), _day_under(1, spread=0.05)
    assert not np.allclose(seed_0.load_p, seed_1.load_p)  # another seed, another day
    assert not np.allclose(seed_0.load_p, heavier.load_p)
    np.testing.assert_array_equal(_day_under(0, spread=0.05, runner=True).load_p, seed_0.load_p)
    for uneven in (seed_0, seed_1):
        assert uneven.load_p.sum() == pytest.approx(heavier.load_p.sum(), rel=1e-5)
        np.testing.assert_allclose(uneven.load_q / uneven.load_p, heavier.load_q / heavier.load_p, rtol=1e-4)
        np.testing.assert_allclose(uneven.gen_p[:-1], heavier.gen_p[:-1], rtol=1e-4)  # the slack evens out
        forecast, heavier_forecast = uneven.get_forecasted_inj(1)[2], heavier.get_forecasted_inj(1)[2]
        assert forecast.sum() == pytest.approx(heavier_forecast.sum(), rel=1e-5)
        assert not np.allclose(forecast, heavier_forecast)
    # far apart loads stay about the spread from the day's own shares
    ratios = np.log(seed_1.load_p / heavier.load_p)
    assert 0.01 < ratios.std() < 0.15


@pytest.mark.parametrize(
    "value, message",
    [
        (0.5, "demand spread 0.5 is out of range; accepted: 0.0 to 0.3"),
        (-0.05, "demand spread -0.05 is out of range; accepted: 0.0 to 0.3"),
        (float("inf"), "must be a number from 0.0 to 0.3"),
    ],
)
def test_a_demand_spread_out_of_range_is_refused_with_the_range(value, message):
    with pytest.raises(ConfigError, match=message):
        make_env("rte_case14_realistic", cache_chronics=False, demand_spread=value)


def test_a_demand_spread_reads_the_chronics_at_each_reset_and_refuses_the_cache():
    assert type(make_env("rte_case14_realistic").chronics_handler.real_data) is SeededMultifolderWithCache
    spread = make_env("rte_case14_realistic", demand_spread=0.05)
    assert type(spread.chronics_handler.real_data) is SeededMultifolder
    with pytest.raises(ConfigError, match="not with cache_chronics=True"):
        make_env("rte_case14_realistic", demand_spread=0.05, cache_chronics=True)
