"""Reduced action sets from a teacher's trajectories (as most L2RPN winners built theirs).

``frequent_topologies`` plays a teacher agent (greedy by default) on train scenarios and counts
the topology actions it chooses; the most frequent ones, saved one index per line, restrict a run
with ``--action-subset FILE``. The full space stays the default.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ace_core.agents.loading import load_agent
from ace_core.errors import ConfigError
from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.scenarios import reset_to, scenarios


def frequent_topologies(
    env_name: str, teacher: str = "greedy", episodes: int = 5, top: int = 200, seed: int = 0
) -> list[tuple[int, int]]:
    """(action index, times chosen) of the teacher's most frequent topology actions."""
    if episodes < 1 or top < 1:
        raise ConfigError(f"episodes ({episodes}) and top ({top}) must be positive")
    env = make_env(env_name)
    space = build_action_space(env)
    agent = load_agent(teacher, env, space)
    counts: Counter[int] = Counter()
    for i, scenario in enumerate(scenarios(env, "train")[:episodes]):
        obs, done = reset_to(env, scenario, seed + i), False
        while not done:
            index = agent.choose(obs)
            if space.is_topology(index):
                counts[index] += 1
            obs, _, done, _ = env.step(space.to_grid2op(index, env.action_space))
    return counts.most_common(top)


def save_subset(pairs: list[tuple[int, int]], path: Path) -> Path:
    if not pairs:
        raise ConfigError("the teacher chose no topology action; play more episodes or use the full space")
    Path(path).write_text("".join(f"{index}\n" for index, _ in pairs))
    return Path(path)
