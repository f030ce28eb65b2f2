import numpy as np

from ace_core.grid.envs import make_env
from ace_core.grid.simulate import simulate_rho
from ace_core.grid.snapshot import freeze_obs, thaw_obs


def test_a_thawed_observation_simulates_like_the_original(sandbox, sandbox_space):
    obs = sandbox.reset(seed=0, options={"time serie id": 0})
    for _ in range(3):
        obs, *_ = sandbox.step(sandbox.action_space({}))
    actions = [0, 1, sandbox_space.first_topology, sandbox_space.first_topology + 40, sandbox_space.n - 1]
    before = [simulate_rho(obs, sandbox_space.to_grid2op(i, sandbox.action_space)) for i in actions]
    frozen = freeze_obs(obs)
    assert isinstance(frozen, bytes) and obs._obs_env is not None  # the original is left intact

    # the env moves on (another chronic), and a separate env of the same grid works too
    sandbox.reset(seed=1, options={"time serie id": 1})
    other = make_env("l2rpn_case14_sandbox")
    for env in (sandbox, other):
        thawed = thaw_obs(frozen, env)
        assert np.array_equal(thawed.rho, obs.rho) and thawed.current_step == obs.current_step
        for index, expected in zip(actions, before):
            again = simulate_rho(thawed, sandbox_space.to_grid2op(index, env.action_space))
            assert np.allclose(again.rho, expected.rho) and again.reward == expected.reward
