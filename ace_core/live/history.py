"""A live grid that keeps the observation of every step it played, so a what-if at any of those
steps is one simulation: no replay from step 0, whatever the session's length.

grid2op's ``obs.simulate`` rebuilds its forecast grid from the observation alone (topology, line
status, cooldowns, maintenance and the env's internal state at that step travel with it), and each
step returns a new observation, so the observation of step k kept after the grid moved on
simulates exactly as the grid at step k does. An observation holds ~18 KB on the 14-bus grid and
~38 KB on the 36-bus one: a day (288 steps) ~5 MB and ~11 MB.
"""

from __future__ import annotations

from ace_core.live.actions import DO_NOTHING, LiveAction, LiveActionError
from ace_core.live.grid import LiveGrid
from ace_core.live.what_if_step import WhatIf, what_if


class GridHistory:
    """``grid``, reset to its scenario's first step, then stepped forward only, with every step's
    observation kept for what-ifs.

    Not thread-safe: the observations share the env's simulation grid, so one caller at a time
    (the web process holds one lock per session)."""

    def __init__(self, grid: LiveGrid) -> None:
        self.grid = grid
        grid.reset()
        self._observations = [grid.obs]

    @property
    def step_index(self) -> int:
        """The last step played; what-ifs are answered for steps 0 to this one."""
        return self.grid.step_index

    def advance(self, action: LiveAction = DO_NOTHING) -> None:
        """Play ``action`` at the next step and keep the new step's observation."""
        self.grid.advance(action)
        self._observations.append(self.grid.obs)

    def what_if(self, step: int, action: LiveAction) -> WhatIf:
        """Simulate ``action`` one step ahead of the state of ``step``, as the grid's own what-if
        did at that step; refused (with the reason) when it could not be played then."""
        if not 0 <= step <= self.step_index:
            raise LiveActionError(f"step {step} has not been played here; accepted: 0 to {self.step_index}")
        grid = self.grid
        if step == self.step_index:
            return grid.what_if(action)  # the current state: also refused once the scenario is over
        obs = self._observations[step]
        # the same outcome, N-1 and look-ahead figures as then
        return what_if(grid.pipeline, obs, action, grid.rules.refusal(obs, action))
