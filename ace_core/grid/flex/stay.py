"""Whether a continuous move can stay in force: grid2op's dispatch followed over the forecasts.

grid2op keeps a redispatch, and the make-up of a curtailment, as targets the redispatchable
generators must meet at every later step within their ramps and Pmin / Pmax. A move that one
simulated step accepts may leave targets that the next hour's loads and renewables make
impossible to meet; grid2op then refuses every later step's dispatch (``ImpossibleRedispatching``,
doing nothing included), and a search that simulates one step ahead is blind. On a heavier 118-bus
day, moves added one step at a time piled up to that point
(docs/results-stress.md, "Beyond topology").

:func:`stay_failure` plays the move (with the topology it goes with) and then doing nothing,
chaining grid2op's own ``obs.simulate`` over the forecasts, and says at which step, if any, the
dispatch could not be met.
"""

from __future__ import annotations

from dataclasses import dataclass

from grid2op.Exceptions import ImpossibleRedispatching

from ace_core.grid.forecasts import available_horizon


@dataclass(frozen=True)
class Stay:
    """A move followed over the forecasts."""

    simulations: int
    """chained steps simulated (1 to the horizon asked)"""
    failed_at: int | None = None
    """the first step (1 = the move's own) whose dispatch grid2op could not meet; None: it held"""

    @property
    def holds(self) -> bool:
        return self.failed_at is None


def stay_failure(obs, action, steps: int) -> Stay:
    """``action`` played on ``obs``, then doing nothing, for ``steps`` steps or as far as the
    forecasts reach: the first step whose dispatch grid2op cannot meet. A step that ends the
    episode otherwise (an overload, a cascade) ends the check: that is not the move's dispatch."""
    horizon = max(1, min(steps, available_horizon(obs)))
    do_nothing = obs.action_helper({})
    current, simulated = obs, 0
    for step in range(1, horizon + 1):
        current, _, done, info = current.simulate(action if step == 1 else do_nothing)
        simulated += 1
        if any(isinstance(error, ImpossibleRedispatching) for error in info.get("exception") or []):
            return Stay(simulated, step)
        if done:
            break
    return Stay(simulated)
