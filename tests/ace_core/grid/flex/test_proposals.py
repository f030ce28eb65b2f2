"""Transfer factors and the moves proposed from them, judged by grid2op's own simulation."""

import numpy as np
import pytest

from ace_core.grid.flex.moves import FlexMove, refusal
from ace_core.grid.flex.proposals import as_target_move, release_move, relief_moves
from ace_core.grid.flex.sensitivity import sensitivities
from tests.ace_core.conftest import OVERLOADED_LINE


def test_transfer_factors_predict_a_redispatch_within_the_dc_error(tight_sandbox, tight_obs):
    space = tight_sandbox.action_space
    sens = sensitivities(tight_obs, space)
    move = FlexMove(redispatch=((0, 4.0), (5, -4.0)))
    before = tight_obs.simulate(space({}))[0].p_or[OVERLOADED_LINE]
    after = tight_obs.simulate(move.to_grid2op(space))[0].p_or[OVERLOADED_LINE]
    predicted = 4.0 * sens.shift(OVERLOADED_LINE, up=0, down=5)
    assert abs(predicted) > 1.0
    assert after - before == pytest.approx(predicted, rel=0.25, abs=0.5)


def test_every_relief_is_within_limits_and_takes_flow_off_the_line(tight_sandbox, tight_obs):
    space = tight_sandbox.action_space
    moves = relief_moves(tight_obs, sensitivities(tight_obs, space), count=6, target=0.95)
    assert moves and all(refusal(tight_obs, move) == "" for move in moves)
    base = abs(tight_obs.simulate(space({}))[0].p_or[OVERLOADED_LINE])
    flows = [abs(tight_obs.simulate(move.to_grid2op(space))[0].p_or[OVERLOADED_LINE]) for move in moves]
    assert max(flows) < base
    assert min(flows) < base - 2.0  # the best takes MW off, not noise


def test_a_line_overloaded_past_its_allowance_keeps_its_factors(tight_sandbox, tight_obs):
    """Line 0 stays above its limit for two steps: the simulated step then trips it, and the
    factors, read on the simulator's grid, are still the state's (the line in service)."""
    space = tight_sandbox.action_space
    fresh = sensitivities(tight_obs, space)
    obs = tight_obs
    for _ in range(2):
        obs, *_ = tight_sandbox.step(space({}))
    assert obs.line_status[OVERLOADED_LINE] and obs.timestep_overflow[OVERLOADED_LINE] >= 2
    assert not obs.simulate(space({}))[0].line_status[OVERLOADED_LINE]  # tripped in the simulation
    late = sensitivities(obs, space)
    assert np.allclose(late.gen[OVERLOADED_LINE], fresh.gen[OVERLOADED_LINE])
    assert np.abs(late.gen[OVERLOADED_LINE]).max() > 0.5
    assert relief_moves(obs, late, target=0.9)


def test_a_first_redispatch_moves_the_target_by_the_moves_mw(tight_sandbox, tight_obs):
    """Generators 1 and 5 make up for generator 0's redispatch (actual dispatch, no target):
    grid2op sets a generator's first target to its actual dispatch plus the redispatch, so a pair
    on them would keep that share as a target; asked as :func:`as_target_move` asks it, each
    target is the pair's MW."""
    space = tight_sandbox.action_space
    obs, *_ = tight_sandbox.step(space({"redispatch": [(0, -4.0)]}))
    assert abs(obs.actual_dispatch[5]) > 1 and obs.target_dispatch[5] == 0
    pair = FlexMove(redispatch=((1, 3.0), (5, -3.0)))
    as_given = obs.simulate(pair.to_grid2op(space))[0].target_dispatch
    assert as_given[5] == pytest.approx(obs.actual_dispatch[5] - 3.0, abs=0.05)  # the share frozen
    asked = as_target_move(obs, pair, redispatched=set())
    targets = obs.simulate(asked.to_grid2op(space))[0].target_dispatch
    assert targets[[0, 1, 5]] == pytest.approx([-4.0, 3.0, -3.0], abs=0.05)
    # a generator already redispatched in the episode is asked the move as it is
    assert as_target_move(obs, pair, redispatched={1, 5}) == pair
    assert dict(as_target_move(obs, FlexMove(redispatch=((0, 2.0), (5, -2.0))), set()).redispatch)[0] == 2.0


def test_a_calm_grid_gets_nothing_and_a_move_in_force_is_released(tight_sandbox, tight_obs):
    space = tight_sandbox.action_space
    assert relief_moves(tight_obs, sensitivities(tight_obs, space), target=1.5) == []
    assert release_move(tight_obs) is None
    obs, *_ = tight_sandbox.step(FlexMove(redispatch=((0, 3.0), (5, -3.0))).to_grid2op(space))
    release = release_move(obs)
    assert dict(release.redispatch) == pytest.approx({0: -3.0, 5: 3.0})
    obs, *_ = tight_sandbox.step(release.to_grid2op(space))
    assert np.abs(obs.target_dispatch).max() < 1e-6


def test_a_curtailment_leaves_the_generators_ramps_for_the_loads_next_step(monkeypatch):
    """What a curtailment asks of the redispatchable generators stays within what they can add in
    one step once the forecast's rise is served (grid2op refuses the real step otherwise). The
    sandbox's wind farm loads its most loaded line: tightened, that line gets a curtailment."""
    from ace_core.grid.envs import make_env
    from ace_core.grid.flex import proposals

    env = make_env("l2rpn_case14_sandbox")
    obs = env.reset(seed=0, options={"time serie id": 0})
    limits = np.array(env.get_thermal_limit(), dtype=float)
    line = int(np.argmax(obs.rho))
    limits[line] *= obs.rho[line] / 1.02
    env.set_thermal_limit(limits)
    obs = env.reset(seed=0, options={"time serie id": 0})
    sens = sensitivities(obs, env.action_space)
    room = sum(proposals.up_margin(obs, int(g)) for g in np.flatnonzero(obs.gen_redispatchable))
    rise = proposals._forecast_rise(obs)
    reserve = proposals.ramp_reserve(obs)
    assert rise > 0 and reserve == pytest.approx(room * (1 - proposals.RAMP_MARGIN) - rise)

    def curtailed(moves):
        return [float(obs.gen_p[g]) - cap for move in moves for g, cap in move.curtail]

    wanted = curtailed(relief_moves(obs, sens, count=50, target=0.5, kinds=("curtail",)))
    assert wanted and max(wanted) == pytest.approx(reserve, abs=0.1)  # the whole reserve, no more
    # loads about to rise by more than the generators can follow: no curtailment is proposed
    monkeypatch.setattr(proposals, "_forecast_rise", lambda obs: room)
    assert curtailed(relief_moves(obs, sens, count=50, target=0.5, kinds=("curtail",))) == []


def test_a_curtailed_renewable_is_forecast_to_give_no_more_than_its_limit():
    """With a curtailment in force, the renewable's forecast is not a rise the generators can count
    on: it stays at its limit, and the redispatchable generators make up the loads' rise alone."""
    from ace_core.grid.envs import make_env
    from ace_core.grid.flex import proposals

    env = make_env("l2rpn_case14_sandbox")
    obs = env.reset(seed=0, options={"time serie id": 0})
    wind = int(np.flatnonzero(obs.gen_renewable)[np.argmax(obs.gen_p[obs.gen_renewable])])
    cap = round(float(obs.gen_p[wind]) / 2, 1)
    curtail = FlexMove(curtail=((wind, cap),)).to_grid2op(env.action_space)
    for _ in range(60):  # the morning: the loads rise next step
        obs, *_ = env.step(curtail)
        productions, _, loads, _ = obs.get_forecasted_inj(1)
        if loads.sum() - obs.load_p.sum() > 1.0 and productions[wind] > cap + 1.0:
            break
    renewable = obs.gen_renewable
    given = np.minimum(productions, obs.curtailment_limit * obs.gen_pmax)
    rise = (loads.sum() - obs.load_p.sum()) - (given[renewable].sum() - obs.gen_p[renewable].sum())
    counted_in_full = rise - (productions[wind] - given[wind])  # the curtailed MW taken for a rise
    assert rise > 0 and counted_in_full < rise - 1.0
    assert proposals._forecast_rise(obs) == pytest.approx(rise, abs=1e-3)
