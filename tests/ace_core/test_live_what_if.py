"""What-if on the live grid (ace_core/live/what_if_step.py): any action simulated one step ahead by the
recommendation pipeline, as grid2op would, from the current state or one kept from an earlier step."""

from __future__ import annotations

import numpy as np
import pytest

from ace_core.live import LiveAction, LiveGrid, absolute_action, make_live_env, what_if
from tests.ace_core.test_live import ENV, act, relieved_and_new, simulated_rho


@pytest.fixture(scope="module")
def module_env():
    return make_live_env(ENV)  # with the live console's one-hour forecasts


@pytest.fixture
def env(module_env):
    module_env.reset()
    return module_env


def test_what_if_of_every_action_matches_grid2op_and_leaves_the_grid_alone(env):
    grid = LiveGrid(ENV, 0, 0, None, env=env)
    grid.reset()
    grid.step()
    state = grid.state
    before = np.asarray(grid.obs.rho)
    legal = 0
    line_switches = [LiveAction("line", line=i, status="disconnect") for i in range(grid.space.n_line)]
    topologies = [absolute_action(i, grid.space) for i in range(grid.space.n)]
    for action in topologies + line_switches:
        outcome = grid.what_if(action).to_dict()
        assert outcome["max_rho_before"] == round(float(before.max()), 4)
        if not outcome["legal"]:
            assert outcome["refusal"] and outcome["max_rho_after"] is None and outcome["rho_after"] == []
            continue
        legal += 1
        rho, done, info = simulated_rho(grid, action)
        assert not done and not info["is_illegal"]
        assert outcome["max_rho_after"] == round(float(rho.max()), 4)
        assert np.allclose(outcome["rho_after"], rho, atol=1e-3)
        relieved, new = relieved_and_new(before, rho)
        assert (outcome["lines_relieved"], outcome["new_overloads"]) == (list(relieved), list(new))
        assert outcome["overloads_after"] == [int(i) for i in np.flatnonzero(rho >= 1.0)]
    assert legal > 100
    # the policy's index and the same action spelled out give the same answer
    for index in range(0, grid.space.n, 17):
        by_index = grid.what_if(LiveAction("index", index=index)).to_dict()
        spelled = grid.what_if(absolute_action(index, grid.space)).to_dict()
        assert {k: by_index[k] for k in ("legal", "max_rho_after", "rho_after")} == {
            k: spelled[k] for k in ("legal", "max_rho_after", "rho_after")
        }
    assert grid.state == state and grid.step_index == 1  # simulations never move the grid


def test_what_if_figures_of_an_earlier_step_s_observation_are_that_step_s(env):
    """A what-if answered from an observation kept from an earlier step (the web process keeps
    them) gets the same N-1 and look-ahead figures as when that step was current."""
    grid = LiveGrid(ENV, 0, 0, None, env=env)
    grid.reset()
    action = act({"kind": "topology", "substation": 1, "set": [[2, 2], [3, 2]]}, grid)
    at_zero = grid.what_if(action)
    kept = grid.obs
    grid.step(with_recommendations=False)
    grid.step(with_recommendations=False)
    later = what_if(grid.pipeline, kept, action)
    assert at_zero.figures["n1"]["screened"] == 20 and at_zero.figures["look_ahead"]["max_rho"]
    assert later.to_dict() == at_zero.to_dict()
