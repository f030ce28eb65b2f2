"""One validation episode, the same in the trainer's process and on a Ray actor."""

from __future__ import annotations

from ace_core.agents.baselines import TimedAgent
from ace_core.grid.scenarios import Scenario, reset_to

Copy = tuple[float, str]
"""a copy of the validation days: (demand scale, opponent profile)"""


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
