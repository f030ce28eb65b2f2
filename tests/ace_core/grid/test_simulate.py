import numpy as np
import pytest

from ace_core.grid.envs import make_env
from ace_core.grid.simulate import simulate_many, simulate_rho


def test_fast_simulation_matches_grid2op(sandbox, sandbox_space, fresh_obs):
    obs = fresh_obs
    for _ in range(5):
        obs, *_ = sandbox.step(sandbox.action_space({}))
    for index in range(0, sandbox_space.n, 7):
        action = sandbox_space.to_grid2op(index, sandbox.action_space)
        expected_obs, expected_reward, expected_done, _ = obs.simulate(action)
        fast = simulate_rho(obs, action)
        assert fast.done == expected_done
        assert fast.reward == expected_reward
        if not expected_done:
            np.testing.assert_allclose(fast.rho, expected_obs.rho)


@pytest.fixture(scope="module")
def stressed():
    """The 14-bus grid with its limits at 75 %: overloads, protections counting, cooldowns."""
    env = make_env("l2rpn_case14_sandbox")
    parameters = env.parameters
    parameters.NB_TIMESTEP_COOLDOWN_SUB = 3
    env.change_parameters(parameters)
    env.change_forecast_parameters(parameters)
    env.reset()
    env.set_thermal_limit(env.get_thermal_limit() * 0.75)
    yield env
    env.close()


def _same_outcome(expected, got) -> None:
    expected_obs, expected_reward, expected_done, expected_info = expected
    assert got.done == expected_done
    assert got.info.get("is_illegal", False) == expected_info.get("is_illegal", False)
    assert got.reward == pytest.approx(expected_reward, abs=1e-9)
    if not expected_done:
        np.testing.assert_allclose(got.rho, expected_obs.rho, atol=1e-7)
        np.testing.assert_array_equal(got.info["disc_lines"], expected_info["disc_lines"])


def test_candidates_match_grid2op_one_by_one(stressed, sandbox_space):
    env, space = stressed, sandbox_space
    env.set_id(0)
    env.seed(0)
    obs = env.reset()
    actions = [space.to_grid2op(i, env.action_space) for i in range(space.n)]
    fast_paths = full_paths = illegal = cascades = 0
    for _ in range(3):
        got = simulate_many(obs, actions)
        for action, outcome in zip(actions, got):
            _same_outcome(obs.simulate(action), outcome)
        fast = sum(bool(o.info.get("fast")) for o in got)
        cascades += sum(bool(o.info.get("fast")) and (o.info["disc_lines"] >= 0).any() for o in got)
        fast_paths += fast
        full_paths += len(got) - fast
        illegal += sum(bool(o.info.get("is_illegal")) for o in got)
        # play the best topology: its substation is in cooldown for the next comparison
        scores = [o.rho.max() if not o.done and not o.info.get("is_illegal") else np.inf for o in got]
        best = space.first_topology + int(np.argmin(scores[space.first_topology :]))
        obs, _, done, _ = env.step(actions[best])
        assert not done
    assert fast_paths > 0 and full_paths > 0 and illegal > 0 and cascades > 0


def test_candidates_fall_back_when_doing_nothing_trips_a_line(stressed, sandbox_space):
    env, space = stressed, sandbox_space
    env.set_id(0)
    env.seed(0)
    obs = env.reset()
    limits = env.get_thermal_limit()
    hot = int(np.argmax(obs.rho))
    tight = limits.copy()
    tight[hot] = limits[hot] * obs.rho[hot] / 1.3  # overloaded, under the hard threshold
    env.set_thermal_limit(tight)
    allowed = env.parameters.NB_TIMESTEP_OVERFLOW_ALLOWED
    try:
        while obs.timestep_overflow[hot] < allowed:
            obs, _, done, _ = env.step(env.action_space({}))
            assert not done and obs.rho[hot] > 1.0
        # the next step trips the line under any action that leaves it overloaded
        first = space.first_topology
        actions = [space.to_grid2op(i, env.action_space) for i in range(first, first + 8)]
        got = simulate_many(obs, actions)
        assert not any(o.info.get("fast") for o in got)
        for action, outcome in zip(actions, got):
            _same_outcome(obs.simulate(action), outcome)
    finally:
        env.reset()
        env.set_thermal_limit(limits)
