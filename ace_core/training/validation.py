"""Validation: how the policy as it stands plays the validation days, and which policy was best.

Every ``validate_every`` agent decisions (from decision 0, the starting policy, and once more at
the end of a run that reached its budget) the trainer asks a :class:`Validator` to play the plain
policy, the ``sac:`` agent of :mod:`ace_core.agents` (greedy argmax of the actor when max rho
reaches the threshold, reconnect-or-nothing below it, no simulation), on every scenario of the
``validation`` split with grid seeds ``0..validation_seeds-1``. The mean survival fraction decides
which policy the run keeps as ``best.pt`` (ties keep the earlier one).

With ``validation_demand_scale`` F != 1 the validation days are played twice: as they are, and with
every load and production multiplied by F (:mod:`ace_core.grid.demand`). The days of a split are
few, and a policy that holds them as they are may still fail on the next stressed day; the heavier
copies are a harder test of the same days that separates policies the days as they are score
alike. With ``validation_opponent`` (an opponent profile, :mod:`ace_core.grid.opponents`) they are
also played under its line attacks (with ``validation_attack_seeds`` grid seeds, when given: an
attacked day varies with the attacks drawn), so a run that trains under attacks chooses its best
policy on attacked days too. The survival that decides is the mean over every copy (each one is
reported too), or with ``validation_decides=attacks`` the attacked copy's alone.
With ``validation_uneven`` (demand scales) the days are also played heavier and uneven, as the
stress table's uneven rows: each load's share of the demand drawn from the grid seed and the day
(:data:`~ace_core.grid.demand.UNEVEN_SPREAD`), on ``validation_uneven_seeds`` grid seeds. On a grid
with no opponent nor maintenance a heavier day is the same under every grid seed, so the heavier
copy is as few episodes as there are days, and a choice on it picks one episode's luck; the uneven
copies are as many days as seeds times days. ``validation_decides=uneven`` lets their mean decide.
``validation_floor`` puts a policy that holds at least that share of the days as they are before
any that does not, so a run can choose its best policy for attacked or heavier days among those
that still hold ordinary ones (:mod:`ace_core.training.best_choice`).

Validation has its own envs, one per copy of the days, and :func:`~ace_core.grid.scenarios.reset_to`
starts each episode as a fresh env would, so a validation's figures do not depend on what was
played before. On Ray workers (a run's ``--workers`` > 1, or ``--ray-address``), its episodes
are played on that many Ray actors (:mod:`ace_core.training.validation_ray`), with the same
figures. It reads the
networks without sampling and the trainer wraps it in
:func:`~ace_core.rl.rng_state.preserved_rng`, so training goes on exactly as without it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ace_core.grid.action_space import ActionSpace
from ace_core.grid.demand import UNEVEN_SPREAD
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.opponents import DEFAULT_OPPONENT
from ace_core.grid.scenarios import Scenario
from ace_core.rl.sac import SAC
from ace_core.training.best_choice import SURVIVAL, SURVIVAL_UNDER_ATTACKS, SURVIVAL_UNEVEN
from ace_core.training.validation_episodes import Copy, Episode, play_episodes
from ace_core.training.validation_ray import RayValidation
from ace_core.workers import HERE, Workers


@dataclass(frozen=True)
class Validation:
    """One validation of the policy, at a point of the run."""

    survival: float
    """mean share of each validation day survived"""
    reward: float
    """mean episode reward"""
    step: int
    decisions: int
    survival_by_demand: dict[str, float] = field(default_factory=dict)
    """mean survival at each demand scale played ("1.0": the days as they are); empty when only
    the days as they are were played"""
    survival_under_attacks: float | None = None
    """mean survival of the days as they are under ``validation_opponent``'s attacks (None: not played)"""
    survival_uneven: float | None = None
    """mean survival over the uneven copies (``validation_uneven``; None: not played)"""

    def as_dict(self) -> dict:
        return asdict(self)

    def metrics(self) -> dict[str, float]:
        """Its figures as the run reports them (``eval/...``)."""
        values = {
            SURVIVAL: self.survival,
            "eval/validation_reward": self.reward,
            "eval/validation_decisions": float(self.decisions),
        }
        for scale, survival in self.survival_by_demand.items():
            values[f"eval/validation_survival_demand_{scale}"] = survival
        if self.survival_under_attacks is not None:
            values[SURVIVAL_UNDER_ATTACKS] = self.survival_under_attacks
        if self.survival_uneven is not None:
            values[SURVIVAL_UNEVEN] = self.survival_uneven
        return values


class Validator:
    def __init__(
        self,
        env_name: str,
        space: ActionSpace,
        scenarios: list[Scenario],
        seeds: int,
        rho_threshold: float,
        demand_scale: float = 1.0,
        opponent: str = "",
        attack_seeds: int = 0,
        workers: Workers = HERE,
        uneven_scales: tuple[float, ...] = (),
        uneven_seeds: int = 5,
    ) -> None:
        self.env_name = env_name
        self.space = space
        self.scenarios = scenarios
        self.seeds = seeds
        self.rho_threshold = rho_threshold
        self.demand_scales = (1.0,) if demand_scale == 1.0 else (1.0, demand_scale)
        self.opponent = opponent
        """an opponent profile the days as they are are also played under ("": none)"""
        self.attack_seeds = attack_seeds or seeds
        """grid seeds of the attacked copy"""
        self.uneven_scales = uneven_scales
        """the demand scales of the uneven copies (none: not played)"""
        self.uneven_seeds = uneven_seeds
        self.ray = RayValidation(env_name, space, rho_threshold, workers) if workers.on_ray else None
        self.envs: dict[Copy, object] = {}
        """this process's env of each copy, kept between validations (as the Ray actors keep theirs)"""

    def __call__(self, sac: SAC, features: FeatureBuilder, step: int, decisions: int) -> Validation:
        copies = [((scale, DEFAULT_OPPONENT, 0.0), self.seeds) for scale in self.demand_scales]
        if self.opponent:
            copies.append(((1.0, self.opponent, 0.0), self.attack_seeds))
        copies += [
            ((scale, DEFAULT_OPPONENT, UNEVEN_SPREAD), self.uneven_seeds) for scale in self.uneven_scales
        ]
        played = self._play(sac, features, copies)
        by_demand = {str(scale): float(np.mean(played[i][0])) for i, scale in enumerate(self.demand_scales)}
        attacked = played[len(self.demand_scales)][0] if self.opponent else None
        uneven = [value for values, _ in played[len(played) - len(self.uneven_scales) :] for value in values]
        return Validation(
            float(np.mean([value for values, _ in played for value in values])),
            float(np.mean([value for _, values in played for value in values])),
            step,
            decisions,
            by_demand if len(played) > 1 else {},
            float(np.mean(attacked)) if attacked else None,
            float(np.mean(uneven)) if self.uneven_scales else None,
        )

    def close(self) -> None:
        """Close the envs and stop the Ray actors of the validations, if any."""
        for env in self.envs.values():
            env.close()
        self.envs = {}
        if self.ray:
            self.ray.close()

    def _play(
        self, sac: SAC, features: FeatureBuilder, copies: list[tuple[Copy, int]]
    ) -> list[tuple[list[float], list[float]]]:
        """(survival fractions, episode rewards) of each copy: every scenario with its grid seeds
        ``0..seeds-1``, seed by seed."""
        episodes = [
            (copy, scenario, seed)
            for copy, seeds in copies
            for seed in range(seeds)
            for scenario in self.scenarios
        ]
        results = self.ray.play(sac, features, episodes) if self.ray else None
        if results is None:  # one process, or an actor died: the figures are the same here
            results = self._play_here(sac, features, episodes)
        survival = [steps / scenario.length for (_, scenario, _), (steps, _) in zip(episodes, results)]
        rewards = [reward for _, reward in results]
        out, start = [], 0
        for _, seeds in copies:
            end = start + seeds * len(self.scenarios)
            out.append((survival[start:end], rewards[start:end]))
            start = end
        return out

    def _play_here(
        self, sac: SAC, features: FeatureBuilder, episodes: list[Episode]
    ) -> list[tuple[int, float]]:
        """(steps survived, reward) of each episode, in this process."""
        return play_episodes(
            self.envs, self.env_name, self.space, sac, features, self.rho_threshold, episodes
        )
