import numpy as np

from ace_core.grid.simulate import simulate_rho


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
