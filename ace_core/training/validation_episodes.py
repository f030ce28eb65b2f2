"""Validation episodes, played the same in the trainer's process and on a Ray actor."""

from __future__ import annotations

from ace_core.agents.baselines import TimedAgent
from ace_core.agents.sac import SacAgent
from ace_core.grid.action_space import ActionSpace
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.scenarios import Scenario, reset_to
from ace_core.rl.sac import SAC

Copy = tuple[float, str, float]
"""a copy of the validation days: (demand scale, opponent profile, demand spread)"""
Episode = tuple[Copy, Scenario, int]
"""(copy of the days, scenario, grid seed)"""


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


def play_episodes(
    envs: dict[Copy, object],
    env_name: str,
    space: ActionSpace,
    sac: SAC,
    features: FeatureBuilder,
    rho_threshold: float,
    episodes: list[Episode],
) -> list[tuple[int, float]]:
    """(steps survived, reward) of the plain policy of ``sac`` on each episode, in order, each
    copy's in its env of ``envs`` (built there the first time it is needed, kept for the next)."""
    out = []
    for copy, scenario, seed in episodes:
        if copy not in envs:
            scale, opponent, spread = copy
            envs[copy] = make_env(env_name, demand_scale=scale, opponent=opponent, demand_spread=spread)
        env = envs[copy]
        out.append(play(env, SacAgent(env, space, sac, features, rho_threshold), scenario, seed))
    return out
