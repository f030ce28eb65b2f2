"""The baseline agents (do-nothing, reconnect) and the per-step timing every GridACE agent keeps."""

from __future__ import annotations

import time

from grid2op.Agent import BaseAgent

from ace_core.grid.action_space import ActionSpace
from ace_core.grid.candidates import reconnect_or_nothing
from ace_core.grid.flex.moves import STEP_HOURS, FlexMove, state_cost


class TimedAgent(BaseAgent):
    """Keeps per-step decision times and simulate counts for evaluation reports.

    The Runner shallow-copies the agent for every episode, so the counters live in one shared
    dict rather than in attributes the copies would rebind.
    """

    def __init__(self, env, space: ActionSpace) -> None:
        super().__init__(env.action_space)
        self.space = space
        self.stats: dict = {
            "decision_seconds": [],
            "simulate_calls": 0,
            "steps": 0,
            "decisions": 0,
            "real_actions": 0,
            "folded_noops": 0,
            "flex_mwh": 0.0,
            "flex_euros": 0.0,
        }
        self.move: FlexMove | None = None
        """the continuous move to play with this step's action (redispatch, curtailment, storage),
        set by :meth:`choose` when the expert's search found one (``flex``)"""

    @property
    def decision_seconds(self) -> list[float]:
        return self.stats["decision_seconds"]

    @property
    def simulate_calls(self) -> int:
        return self.stats["simulate_calls"]

    def count_decision(self, stressed: bool, action: int) -> None:
        """Count a step where the agent was asked to decide, and whether it changed the grid."""
        if stressed:
            self.stats["decisions"] += 1
            self.stats["real_actions"] += int(action != 0)

    def act(self, observation, reward, done=False):
        start = time.perf_counter()
        self.stats["steps"] += 1
        self._count_cost(observation)
        index = self.choose(observation)
        action = self.space.to_grid2op(index, self.action_space)
        move, self.move = self.move, None
        if move is not None:
            action = action + move.to_grid2op(self.action_space)
        self.decision_seconds.append(time.perf_counter() - start)
        return action

    def choose(self, obs) -> int:
        raise NotImplementedError

    def _count_cost(self, obs) -> None:
        """The continuous moves in force over the step that led to ``obs`` (redispatch, curtailment,
        storage; :func:`~ace_core.grid.flex.moves.state_cost`), in MWh and euros."""
        cost = state_cost(obs)
        if cost.mw:
            self.stats["flex_mwh"] += cost.mw * STEP_HOURS
            self.stats["flex_euros"] += cost.euros_per_hour * STEP_HOURS


class DoNothing(TimedAgent):
    def choose(self, obs) -> int:
        self.count_decision(obs.rho.max() >= 0.9, 0)
        return 0


class Reconnect(TimedAgent):
    def choose(self, obs) -> int:
        action = reconnect_or_nothing(obs)
        self.count_decision(obs.rho.max() >= 0.9, action)
        return action
