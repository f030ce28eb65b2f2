"""Scenarios: episodes cut from the env's chronics, and the train / validation / test split.

A scenario is ``(chronic, start, length)``: each chronic (a time series of loads, productions
and maintenance) is cut into consecutive episodes of ``length`` steps (default 288, one day at
5-minute resolution); a last piece of at least half a length is kept as a shorter episode. So the
bundled test copies, with one to seven chronics, still give 2 to 56 distinct episodes.

The split is deterministic and depends only on the env's chronics: episodes are numbered in
(chronic, start) order and episode ``i`` goes to

- ``test`` when ``i % 5 == 4`` (and, for envs with fewer than 5 episodes, the last one),
- ``validation`` when ``i % 5 == 3`` (or the second-to-last one of a 3-4 episode env),
- ``train`` otherwise.

Test episodes are never used in training, as long as the split is cut the same way: numbering
depends on the episode length and on every chronic before a day (grown weeks sort before the
bundled days), so a day of one cut can be a test day of another. A policy's run therefore names
the days it learned from (``days.json``, :mod:`ace_core.checkpoint`), and an evaluation refuses a
validation or test scenario that plays steps of one of them (:func:`learned_in`). Neighbouring
days of one chronic can share weather and load patterns, as in SMAAC's split; full datasets with
many chronics make this leakage small.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ace_core.errors import ConfigError

SPLITS = ("train", "validation", "test")
DEFAULT_EPISODE_LENGTH = 288


@dataclass(frozen=True)
class Scenario:
    chronic_index: int
    chronic_name: str
    start: int
    """first step of the chronic (0 = its beginning)"""
    length: int

    @property
    def name(self) -> str:
        return f"{self.chronic_name}@{self.start}+{self.length}"

    @classmethod
    def from_name(cls, name: str) -> Scenario:
        """The scenario a :attr:`name` stands for (its chronic's index is not in the name: -1)."""
        chronic, at, span = name.rpartition("@")
        start, plus, length = span.partition("+")
        if not (chronic and at and plus and start.isdigit() and length.isdigit()):
            raise ConfigError(f"{name!r} is not a scenario name; accepted: CHRONIC@START+LENGTH")
        return cls(-1, chronic, int(start), int(length))

    def shares_steps(self, other: Scenario) -> bool:
        """Whether the two play some of the same steps of the same chronic."""
        return (
            self.chronic_name == other.chronic_name
            and self.start < other.start + other.length
            and other.start < self.start + self.length
        )

    def reset_options(self) -> dict:
        """Options for ``env.reset(options=...)`` and the Runner's ``reset_options``."""
        options = {"time serie id": self.chronic_index, "max step": self.length}
        if self.start:
            options["init ts"] = self.start
        return options


def chronic_lengths(env) -> list[tuple[str, int]]:
    """(name, number of steps) of each chronic, in the order grid2op indexes them."""
    data = env.chronics_handler.real_data
    out = []
    for index, path in enumerate(data.subpaths):
        env.reset(options={"time serie id": index})
        out.append((Path(str(path)).name, int(env.chronics_handler.max_timestep())))
    return out


def cut_episodes(
    lengths: list[tuple[str, int]], episode_length: int = DEFAULT_EPISODE_LENGTH
) -> list[Scenario]:
    if episode_length < 2:
        raise ConfigError(f"episode_length={episode_length} is too short; accepted: 2 or more steps")
    episodes = []
    for index, (name, total) in enumerate(lengths):
        start = 0
        while total - start >= max(2, episode_length // 2):
            length = min(episode_length, total - start)
            episodes.append(Scenario(index, name, start, length))
            start += length
    return episodes


def split_of(i: int, n: int) -> str:
    if n < 5:
        if i == n - 1:
            return "test"
        if n >= 3 and i == n - 2:
            return "validation"
        return "train"
    return {4: "test", 3: "validation"}.get(i % 5, "train")


def scenarios(env, split: str, episode_length: int = DEFAULT_EPISODE_LENGTH) -> list[Scenario]:
    """The env's scenarios of one split, in a fixed order."""
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; accepted: {', '.join(SPLITS)}")
    episodes = cut_episodes(chronic_lengths(env), episode_length)
    return [s for i, s in enumerate(episodes) if split_of(i, len(episodes)) == split]


def learned_in(chosen: list[Scenario], learned: list[str]) -> list[tuple[Scenario, str]]:
    """(scenario, learned day) for each of ``chosen`` that plays steps of a day named in
    ``learned``: a policy's training days show through a split cut otherwise (another episode
    length, or chronics added before them)."""
    days = [Scenario.from_name(name) for name in learned]
    return [(scenario, day.name) for scenario in chosen for day in days if scenario.shares_steps(day)]


def reset_to(env, scenario: Scenario, seed: int):
    """Reset ``env`` to the start of ``scenario`` with ``seed`` (opponents, maintenance noise):
    the same start whatever the env played before, as in a fresh env.

    grid2op resets the opponent only after fast-forwarding to a scenario's first step (``init
    ts``), and the fast-forward plays one step: an attack still under way when the env's last
    episode ended would strike again there and leave its line out at the new start. The opponent
    is reset first, after seeding, so what it does on that step depends on ``seed`` alone."""
    env.seed(seed)
    env._oppSpace.reset()  # grid2op has no public reset for the opponent alone
    return env.reset(seed=seed, options=scenario.reset_options())
