"""Continuous moves: their JSON, their limits in words, grid2op's action and their cost."""

import numpy as np
import pytest

from ace_core.grid.flex.moves import (
    CURTAILMENT_PRICE,
    REDISPATCH_PRICE,
    FlexMove,
    FlexMoveError,
    move_cost,
    refusal,
    state_cost,
)

# l2rpn_case14_sandbox: generators 0, 1 and 5 are redispatchable (ramps 5, 10, 15 MW per step),
# 2 (wind), 3 and 4 (solar) are renewable; no storage


def test_a_move_round_trips_through_its_json():
    move = FlexMove.from_dict({"redispatch": [[5, -3.0], [0, 3]], "curtail": [[2, 10.5]]})
    assert move == FlexMove(redispatch=((0, 3.0), (5, -3.0)), curtail=((2, 10.5),))
    assert FlexMove.from_dict(move.to_dict()) == move


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ([["redispatch"]], "JSON object"),
        ({}, "at least one setpoint"),
        ({"redispatch": [[0, 1.0]], "ramp": 3}, "unknown part(s) ramp"),
        ({"redispatch": [[0]]}, "not a [unit, MW] pair"),
        ({"redispatch": [["0", 1.0]]}, "must be an integer"),
        ({"redispatch": [[0, "5"]]}, "finite number"),
        ({"curtail": [[2, float("nan")]]}, "finite number"),
        ({"storage": [[0, 1.0], [0, 2.0]]}, "set twice"),
    ],
)
def test_malformed_moves_are_refused_with_what_is_accepted(spec, words):
    with pytest.raises(
        FlexMoveError, match=words.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    ):
        FlexMove.from_dict(spec)


@pytest.mark.parametrize(
    ("move", "words"),
    [
        (FlexMove(redispatch=((0, 6.0),)), "past its ramp: it moves by at most +5.0 MW up"),
        (
            FlexMove(redispatch=((2, 1.0),)),
            "cannot be redispatched; redispatchable here: generator 0, generator 1, generator 5",
        ),
        (FlexMove(redispatch=((9, 1.0),)), "unknown generator 9; this grid has generators 0 to 5"),
        (FlexMove(redispatch=((0, 0.0),)), "changes nothing"),
        (FlexMove(curtail=((0, 10.0),)), "is not renewable: curtailment applies to renewables only"),
        (FlexMove(curtail=((2, 500.0),)), "outside its limit: from 0 to its Pmax"),
        (FlexMove(storage=((0, 1.0),)), "this grid has no storage unit"),
    ],
)
def test_each_limit_is_named(fresh_obs, move, words):
    assert words in refusal(fresh_obs, move)


def test_redispatch_past_pmax_and_pmin_names_the_limit(fresh_obs):
    gen = 0
    headroom = float(fresh_obs.gen_pmax[gen] - fresh_obs.gen_p[gen])
    obs = fresh_obs.copy()
    obs.gen_p[gen] = fresh_obs.gen_pmax[gen] - 1.0  # one MW under Pmax: a 3 MW ramp goes past it
    assert "past its Pmax" in refusal(obs, FlexMove(redispatch=((gen, 3.0),)))
    obs.gen_p[gen] = fresh_obs.gen_pmin[gen] + 1.0
    assert "past its Pmin" in refusal(obs, FlexMove(redispatch=((gen, -3.0),)))
    assert headroom > 3 and refusal(fresh_obs, FlexMove(redispatch=((gen, 3.0),))) == ""


def test_storage_setpoints_respect_power_and_energy(storage_env):
    obs = storage_env.reset(seed=0, options={"time serie id": 0})
    unit = 0  # 5 MW either way, 15 MWh, holds 7.5 MWh at the start
    assert refusal(obs, FlexMove(storage=((unit, 5.0),))) == ""
    assert "outside its power: from -5.0 MW (discharging) to +5.0 MW (charging)" in refusal(
        obs, FlexMove(storage=((unit, 6.0),))
    )
    full = obs.copy()
    full.storage_charge[unit] = full.storage_Emax[unit] - 0.1
    assert "past its capacity" in refusal(full, FlexMove(storage=((unit, 5.0),)))
    empty = obs.copy()
    empty.storage_charge[unit] = empty.storage_Emin[unit] + 0.1
    assert "past its reserve" in refusal(empty, FlexMove(storage=((unit, -5.0),)))
    assert "unknown storage unit 7" in refusal(obs, FlexMove(storage=((7, 1.0),)))


def test_grid2op_plays_the_move_as_written(sandbox):
    space = sandbox.action_space
    action = FlexMove(redispatch=((0, 2.0), (5, -2.0)), curtail=((2, 7.0),)).to_grid2op(space)
    assert action.redispatch[0] == pytest.approx(2.0) and action.redispatch[5] == pytest.approx(-2.0)
    assert action.curtail[2] == pytest.approx(7.0 / float(sandbox.gen_pmax[2]))


def test_a_balanced_pair_costs_both_legs(fresh_obs):
    cost = move_cost(fresh_obs, FlexMove(redispatch=((0, 2.0), (5, -2.0))))
    assert cost.redispatched_mw == pytest.approx(4.0) and cost.curtailed_mw == 0
    assert cost.euros_per_hour == pytest.approx(4.0 * REDISPATCH_PRICE)


def test_a_curtailment_costs_the_energy_lost_and_its_replacement(fresh_obs):
    wind = 2
    available = float(fresh_obs.gen_p_before_curtail[wind])
    cost = move_cost(fresh_obs, FlexMove(curtail=((wind, available - 3.0),)))
    assert cost.curtailed_mw == pytest.approx(3.0, abs=1e-3)
    assert cost.redispatched_mw == pytest.approx(3.0, abs=1e-3)  # made up by the redispatchable generators
    assert cost.euros_per_hour == pytest.approx(3.0 * (CURTAILMENT_PRICE + REDISPATCH_PRICE), rel=1e-3)


def test_the_state_costs_what_is_in_force(tight_sandbox, tight_obs):
    assert state_cost(tight_obs).mw == 0
    obs, *_ = tight_sandbox.step(
        FlexMove(redispatch=((0, 3.0), (5, -3.0))).to_grid2op(tight_sandbox.action_space)
    )
    cost = state_cost(obs)
    assert cost.redispatched_mw == pytest.approx(float(np.abs(obs.actual_dispatch).sum()))
    assert cost.redispatched_mw > 5
