"""The greedy expert as an agent, and the narrow greedy search the trainer's teacher uses."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ace_core.agents.baselines import TimedAgent
from ace_core.agents.expert import Expert
from ace_core.agents.expert_order import max_rho
from ace_core.config.expert import ExpertConfig
from ace_core.grid.action_space import ActionSpace
from ace_core.grid.candidates import greedy_candidates, reconnect_or_nothing
from ace_core.grid.contingency import resolve_lines
from ace_core.grid.opponents import attackable_lines
from ace_core.grid.simulate import simulate_many

DEFAULT_GREEDY_BUDGET = ExpertConfig.budget


def best_simulated(obs, space: ActionSpace, g2op_space, candidates: list[int]) -> tuple[int, float]:
    """(action, simulated max rho) of the candidate with the lowest simulated max rho; the first
    candidate wins ties, so put the default (reconnect-or-nothing) first."""
    outcomes = simulate_many(obs, [space.to_grid2op(index, g2op_space) for index in candidates])
    scores = [max_rho(outcome) for outcome in outcomes]
    best = int(np.argmin(scores))
    return candidates[best], scores[best]


def greedy_search(
    obs, space: ActionSpace, g2op_space, budget: int, extra: Sequence[int] = ()
) -> tuple[int, float, int]:
    """(best action, its simulated max rho, simulate calls) among the greedy candidates and
    ``extra`` ones (e.g. a policy's most likely actions), starting from reconnect-or-nothing so
    that only an improvement is played. The budgeted search of the trainer's teacher; the expert
    agent searches wider (:mod:`ace_core.agents.expert`)."""
    default = reconnect_or_nothing(obs)
    candidates = list(dict.fromkeys([default, *extra, *greedy_candidates(obs, space, budget)]))
    best, best_rho = best_simulated(obs, space, g2op_space, candidates)
    return best, best_rho, len(candidates)


class Greedy(TimedAgent):
    """The simulation-based expert (:class:`ace_core.agents.expert.Expert`): reconnect first, and when
    stressed, the best of a wide batched search by simulated max rho."""

    def __init__(
        self,
        env,
        space: ActionSpace,
        budget: int | None = None,
        rho_threshold: float | None = None,
        config: ExpertConfig | None = None,
    ):
        super().__init__(env, space)
        config = config or ExpertConfig()
        overrides = {"budget": budget, "threshold": rho_threshold}
        config = dataclasses.replace(config, **{k: v for k, v in overrides.items() if v is not None})
        attacked = attackable_lines(env) if config.attacked else ()  # N-1 on these lines (n1, guard)
        outages = resolve_lines(attacked, env.name_line) if attacked else None
        self.expert = Expert.from_config(space, env.action_space, config, outages)
        self.rho_threshold = config.threshold
        self.stats["contingency_calls"] = 0  # N-1 screenings of candidates (greedy:n1=K)

    def reset(self, obs) -> None:
        self.expert.reset()  # what the search learns stays within an episode

    def choose(self, obs) -> int:
        search = self.expert.search(obs)
        self.stats["simulate_calls"] += search.simulations
        self.stats["contingency_calls"] += search.screened
        self.count_decision(search.stressed, search.action if search.move is None else -1)
        self.move = search.move
        return search.action
