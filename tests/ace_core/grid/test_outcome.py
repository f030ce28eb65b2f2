"""Reading a simulated step: one failure kind with one wording, and the overload diff."""

import numpy as np

from ace_core.grid.outcome import Failure, failure, outcome_of
from ace_core.grid.simulate import Simulated

BEFORE = np.array([0.5, 1.2, 0.9, 1.1])


def simulated(rho=(0.4, 0.8, 1.05, 1.3), done=False, **info) -> Simulated:
    return Simulated(np.array(rho), -1.0 if done else 0.7, done, {"exception": [], **info})


def test_a_usable_step_says_what_it_relieves_and_creates():
    outcome = outcome_of(simulated(), BEFORE)
    assert outcome.failure is None and not outcome.failed and outcome.error == ""
    assert (outcome.max_rho_before, outcome.max_rho_after, outcome.reward) == (1.2, 1.3, 0.7)
    assert outcome.lines_relieved == (1,)  # overloaded before, not after
    assert outcome.new_overloads == (2,)  # overloaded after, not before
    assert outcome.overloads_after == (2, 3)
    np.testing.assert_array_equal(outcome.rho_after, [0.4, 0.8, 1.05, 1.3])


def test_each_failure_has_one_wording_checked_in_a_fixed_order():
    illegal = simulated(is_illegal=True, exception=["IllegalAction: substation 4 in cooldown"])
    assert failure(illegal) is Failure.ILLEGAL
    outcome = outcome_of(illegal, BEFORE)
    assert outcome.illegal and not outcome.game_over
    assert outcome.error == "illegal: IllegalAction: substation 4 in cooldown"

    diverged = simulated(done=True, exception=["BackendError: Divergence of AC powerflow\ndetails"])
    outcome = outcome_of(diverged, BEFORE)
    assert outcome.failure is Failure.GRID_FAILS and outcome.game_over
    assert outcome.error == "the grid would fail: BackendError: Divergence of AC powerflow"
    assert (outcome.max_rho_after, outcome.reward, outcome.rho_after) == (None, None, None)
    assert outcome.overloads_after == outcome.lines_relieved == outcome.new_overloads == ()

    ambiguous = simulated(exception=["AmbiguousAction: set and change the same bus"])
    outcome = outcome_of(ambiguous, BEFORE)
    assert outcome.failure is Failure.SIMULATION_ERROR and outcome.game_over
    assert outcome.error == "simulation error: AmbiguousAction: set and change the same bus"

    # an illegal action is said illegal even when grid2op also ends the step
    assert failure(simulated(done=True, is_illegal=True)) is Failure.ILLEGAL
