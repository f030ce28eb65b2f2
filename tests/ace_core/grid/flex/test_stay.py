"""A continuous move followed over the forecasts: the step at which grid2op can no longer meet the
dispatch it leaves, found by chaining grid2op's own simulations."""

import pytest

from ace_core.grid.flex.stay import stay_failure
from ace_core.grid.forecasts import make_env_with_forecasts

PAIR = [(0, 5.0), (1, -5.0)]


@pytest.fixture(scope="module")
def forecast_sandbox():
    return make_env_with_forecasts("l2rpn_case14_sandbox", "perfect", 12)


def targets_in_force(env, schedule_at_pmax_from: int | None = None):
    """Day 0 after four steps of the pair (targets +20 / -20 MW on generators 0 and 1); with
    ``schedule_at_pmax_from``, a forecast in which generator 0's own schedule reaches its Pmax
    (less 1 MW) from that step on."""
    obs = env.reset(seed=0, options={"time serie id": 0})
    for _ in range(4):
        obs, *_ = env.step(env.action_space({"redispatch": PAIR}))
    if schedule_at_pmax_from is not None:
        for _, forecast in obs._forecasted_inj[schedule_at_pmax_from:]:
            injection = forecast["injection"]
            injection["prod_p"] = injection["prod_p"].copy()
            injection["prod_p"][0] = obs.gen_pmax[0] - 1
    return obs


def test_a_move_whose_dispatch_cannot_be_met_later_fails_at_that_step(forecast_sandbox):
    """Generator 0 reaches its Pmax by its own schedule in three steps: pushing its target further
    up is accepted one step ahead and refused at step 3; the pair released is not."""
    env = forecast_sandbox
    more = env.action_space({"redispatch": PAIR})
    back = env.action_space({"redispatch": [(gen, -mw) for gen, mw in PAIR]})
    obs = targets_in_force(env, schedule_at_pmax_from=3)
    assert obs.target_dispatch[0] == pytest.approx(20.0)
    one_step = obs.simulate(more)[2:]
    assert not one_step[0] and not one_step[1]["exception"]  # one step ahead, nothing to see
    stay = stay_failure(obs, more, 12)
    assert (stay.failed_at, stay.simulations, stay.holds) == (3, 3, False)
    assert stay_failure(targets_in_force(env, schedule_at_pmax_from=3), back, 12).holds


def test_a_move_that_stays_is_followed_over_the_whole_horizon_asked(forecast_sandbox, sandbox, fresh_obs):
    env = forecast_sandbox
    more = env.action_space({"redispatch": PAIR})
    assert stay_failure(targets_in_force(env), more, 12).holds
    assert stay_failure(targets_in_force(env), more, 12).simulations == 12
    assert stay_failure(targets_in_force(env), more, 4).simulations == 4
    # a grid whose forecasts reach one step ahead: followed one step
    assert stay_failure(fresh_obs, sandbox.action_space({"redispatch": PAIR}), 12).simulations == 1
