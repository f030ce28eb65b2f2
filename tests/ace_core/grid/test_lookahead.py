import numpy as np
import pytest

from ace_core.grid.action_space import build_action_space
from ace_core.grid.candidates import greedy_candidates
from ace_core.grid.envs import make_env
from ace_core.grid.forecasts import (
    ForecastError,
    available_horizon,
    check_horizon,
    forecast_info,
    forecast_kind,
    make_env_with_forecasts,
)
from ace_core.grid.lookahead import ForecastSeries, look_ahead
from ace_core.grid.simulate import simulate_many
from ace_core.grid.solved import SolvedGrid


@pytest.fixture(scope="module")
def realistic():
    """rte_case14_realistic (doing nothing fails early) with one hour of perfect forecasts."""
    env = make_env_with_forecasts("rte_case14_realistic", "perfect", 12)
    yield env
    env.close()


def _chained_simulate(obs, action, noop, horizon):
    """grid2op itself: obs.simulate(action), then sim_obs.simulate(noop) on the next forecasts;
    the max rho trajectory, the game over step and the lines overloaded on the way (in order)."""
    trajectory, overloaded = [], {}
    sim_obs, _, done, _ = obs.simulate(action)
    while not done:
        trajectory.append(float(sim_obs.rho.max()))
        for line in np.flatnonzero(sim_obs.rho >= 1.0):
            overloaded.setdefault(int(line), None)
        if len(trajectory) == horizon:
            return trajectory, None, tuple(overloaded)
        sim_obs, _, done, _ = sim_obs.simulate(noop)
    return trajectory, len(trajectory) + 1, tuple(overloaded)


def test_look_ahead_equals_chained_grid2op_simulations(realistic):
    env = realistic
    space = build_action_space(env)
    noop = env.action_space({})
    obs = env.reset(seed=0, options={"time serie id": 0})
    env.fast_forward_chronics(770)  # doing nothing ends this day at step 798: overloads, protections
    obs = env.get_obs()
    compared = exact = fast = game_overs = 0
    for _ in range(4):
        info = forecast_info(env, obs)
        series = ForecastSeries(obs, 12)
        indices = [0, *greedy_candidates(obs, space, 8)]
        actions = [space.to_grid2op(i, env.action_space) for i in indices]
        grids = {}

        def keep(i, simulated, backend, grids=grids):
            if not (simulated.done or simulated.info.get("exception")):
                grids[i] = SolvedGrid.of(backend)

        outcomes = simulate_many(obs, actions, after_each=keep)
        for i, action in enumerate(actions):
            got = look_ahead(obs, action, series, info, grids.get(i))
            expected, game_over, overloaded = _chained_simulate(obs, action, noop, 12)
            assert got.game_over_step == game_over and got.overloaded_lines == overloaded
            np.testing.assert_allclose(got.max_rho, expected, atol=1e-5)
            compared += 1
            exact += got.exact
            fast += not got.exact
            game_overs += game_over is not None
        # move on with the candidate that keeps max rho lowest (the expert's move)
        scores = [np.inf if o.done else o.rho.max() for o in outcomes]
        obs, _, done, _ = env.step(actions[int(np.argmin(scores))])
        for _ in range(4):
            if not done:
                obs, _, done, _ = env.step(noop)
        if done:
            break
    assert compared >= 18 and exact > 0 and fast > 0 and game_overs > 0


def test_forecast_kinds_are_named_for_what_they_are():
    sandbox = make_env("l2rpn_case14_sandbox")
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    assert forecast_kind(sandbox) == "dataset" and available_horizon(obs) == 1
    persistence = make_env_with_forecasts("l2rpn_case14_sandbox", "persistence", 3)
    obs = persistence.reset(seed=0, options={"time serie id": 0})
    info = forecast_info(persistence, obs)
    assert info.kind == "persistence" and info.horizon == 3
    assert "not a forecast" in info.to_json()["description"]
    # persistence repeats the current injections: the console must not call it a forecast
    _, third = obs._forecasted_inj[3]
    np.testing.assert_allclose(third["injection"]["load_p"], obs.load_p, rtol=1e-6)


@pytest.mark.parametrize("horizon", [0, -3, 13])
def test_a_horizon_outside_the_forecasts_is_a_clear_error(horizon):
    with pytest.raises(ForecastError, match="horizon"):
        check_horizon(horizon, 12)
    assert check_horizon(12, 12) == 12


def test_unknown_forecast_kind_is_a_clear_error():
    with pytest.raises(ForecastError, match="accepted: perfect, noisy, persistence"):
        make_env_with_forecasts("l2rpn_case14_sandbox", "crystal-ball", 12)


def test_forecast_envs_keep_the_datasets_maintenance():
    from grid2op.Chronics.handlers import CSVMaintenanceHandler, JSONMaintenanceHandler

    from ace_core.grid.forecasts import _chronic_files, _maintenance_handler

    def handler(name: str):
        return _maintenance_handler(_chronic_files(name))

    assert isinstance(handler("l2rpn_wcci_2020"), JSONMaintenanceHandler)
    assert isinstance(handler("l2rpn_neurips_2020_track1"), CSVMaintenanceHandler)
    assert handler("l2rpn_case14_sandbox") is None


def test_a_grid_without_voltage_chronics_forecasts_with_its_own_set_points():
    """l2rpn_idf_2023's chronics have no prod_v: its generators keep the grid's set-points, and a
    perfect forecast three steps ahead is the state grid2op reaches."""
    env = make_env_with_forecasts("l2rpn_idf_2023", "perfect", 3)
    obs = env.reset(seed=0, options={"time serie id": 0})
    forecast, *_ = obs.simulate(env.action_space(), time_step=3)
    start_v = obs.gen_v.copy()
    for _ in range(3):
        obs, *_ = env.step(env.action_space())
    np.testing.assert_allclose(forecast.rho, obs.rho, atol=1e-4)
    np.testing.assert_allclose(obs.gen_v, start_v, rtol=1e-3)  # nothing drives the set-points
