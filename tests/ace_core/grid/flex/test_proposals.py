"""Transfer factors and the moves proposed from them, judged by grid2op's own simulation."""

import numpy as np
import pytest

from ace_core.grid.flex.moves import FlexMove, refusal
from ace_core.grid.flex.proposals import release_move, relief_moves
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


def test_a_calm_grid_gets_nothing_and_a_move_in_force_is_released(tight_sandbox, tight_obs):
    space = tight_sandbox.action_space
    assert relief_moves(tight_obs, sensitivities(tight_obs, space), target=1.5) == []
    assert release_move(tight_obs) is None
    obs, *_ = tight_sandbox.step(FlexMove(redispatch=((0, 3.0), (5, -3.0))).to_grid2op(space))
    release = release_move(obs)
    assert dict(release.redispatch) == pytest.approx({0: -3.0, 5: 3.0})
    obs, *_ = tight_sandbox.step(release.to_grid2op(space))
    assert np.abs(obs.target_dispatch).max() < 1e-6
