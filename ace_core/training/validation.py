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
reported too), or with ``validation_decides=attacks`` the attacked copy's alone;
``validation_floor`` puts a policy that holds at least that share of the days as they are before
any that does not, so a run can choose its best policy for attacked days among those that still
hold ordinary ones (:mod:`ace_core.training.best_choice`).

Validation has its own env: a fresh one per validation, and a fresh one per episode on grids with
an opponent, whose state a grid2op env carries across seeded resets (as mining does), so a
validation's figures do not depend on what was played before. It reads the networks without
sampling and the trainer wraps it in :func:`~ace_core.rl.rng_state.preserved_rng`, so training
goes on exactly as without it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ace_core.agents.baselines import TimedAgent
from ace_core.agents.sac import SacAgent
from ace_core.grid.action_space import ActionSpace
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.opponents import DEFAULT_OPPONENT
from ace_core.grid.scenarios import Scenario, reset_to
from ace_core.rl.sac import SAC
from ace_core.training.best_choice import SURVIVAL, SURVIVAL_UNDER_ATTACKS


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

    def __call__(self, sac: SAC, features: FeatureBuilder, step: int, decisions: int) -> Validation:
        played = {
            str(scale): self._play_all(sac, features, scale, self.seeds) for scale in self.demand_scales
        }
        attacked = (
            self._play_all(sac, features, 1.0, self.attack_seeds, self.opponent) if self.opponent else None
        )
        copies = [*played.values(), *([attacked] if attacked else [])]
        survival = [value for values, _ in copies for value in values]
        rewards = [value for _, values in copies for value in values]
        by_demand = {scale: float(np.mean(values)) for scale, (values, _) in played.items()}
        return Validation(
            float(np.mean(survival)),
            float(np.mean(rewards)),
            step,
            decisions,
            by_demand if len(copies) > 1 else {},
            float(np.mean(attacked[0])) if attacked else None,
        )

    def _play_all(
        self, sac: SAC, features: FeatureBuilder, scale: float, seeds: int, opponent: str = DEFAULT_OPPONENT
    ) -> tuple[list[float], list[float]]:
        """(survival fractions, episode rewards) of every scenario with grid seeds ``0..seeds-1``
        at demand ``scale``, under ``opponent``'s attacks."""
        env = make_env(self.env_name, demand_scale=scale, opponent=opponent)
        survival, rewards = [], []
        try:
            for seed in range(seeds):
                for scenario in self.scenarios:
                    agent = SacAgent(env, self.space, sac, features, self.rho_threshold)
                    steps, reward = play(env, agent, scenario, seed)
                    survival.append(steps / scenario.length)
                    rewards.append(reward)
        finally:
            env.close()
        return survival, rewards


def play(env, agent: TimedAgent, scenario: Scenario, seed: int) -> tuple[int, float]:
    """(steps survived, episode reward) of ``agent`` on ``scenario`` with grid seed ``seed``."""
    obs = reset_to(env, scenario, seed)
    agent.reset(obs)
    reward, done, steps, total = 0.0, False, 0, 0.0
    while not done:
        obs, reward, done, _ = env.step(agent.act(obs, reward, done))
        steps += 1
        total += float(reward)
    return steps, total
