"""A continuous move followed over the forecasts: the step at which grid2op can no longer meet the
dispatch it leaves, found by chaining grid2op's own simulations."""

import pytest

from ace_core.grid.flex.stay import stay_failure
from tests.ace_core.conftest import TARGETS_PAIR


def test_a_move_whose_dispatch_cannot_be_met_later_fails_at_that_step(forecast_sandbox, targets_in_force):
    """Generator 0 reaches its Pmax by its own schedule in three steps: pushing its target further
    up is accepted one step ahead and refused at step 3; the pair released is not."""
    env = forecast_sandbox
    more = env.action_space({"redispatch": TARGETS_PAIR})
    back = env.action_space({"redispatch": [(gen, -mw) for gen, mw in TARGETS_PAIR]})
    obs = targets_in_force(schedule_at_pmax_from=3)
    assert obs.target_dispatch[0] == pytest.approx(20.0)
    one_step = obs.simulate(more)[2:]
    assert not one_step[0] and not one_step[1]["exception"]  # one step ahead, nothing to see
    stay = stay_failure(obs, more, 12)
    assert (stay.failed_at, stay.simulations, stay.holds) == (3, 3, False)
    assert stay_failure(targets_in_force(schedule_at_pmax_from=3), back, 12).holds


def test_a_move_that_stays_is_followed_over_the_whole_horizon_asked(
    forecast_sandbox, targets_in_force, sandbox, fresh_obs
):
    more = forecast_sandbox.action_space({"redispatch": TARGETS_PAIR})
    assert stay_failure(targets_in_force(), more, 12).holds
    assert stay_failure(targets_in_force(), more, 12).simulations == 12
    assert stay_failure(targets_in_force(), more, 4).simulations == 4
    # a grid whose forecasts reach one step ahead: followed one step
    assert stay_failure(fresh_obs, sandbox.action_space({"redispatch": TARGETS_PAIR}), 12).simulations == 1
