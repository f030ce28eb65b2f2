"""The days a live session can play, as an operator chooses among them: each scenario of
:func:`~ace_core.live.envs.live_scenarios` with its date (the chronic's date and time at the
scenario's first step), its season, its split and how hard it is.

A day's difficulty is doing nothing's survival on it: the steps a do-nothing agent survives from
the scenario's start, out of its length, played once with grid2op's Runner (grid seed
:data:`DIFFICULTY_SEED`). Playing a day takes 0.2 to 2 s, so days are never played while a page
waits: :func:`difficulty_compute` plays those not yet known and keeps them in a JSON file per env
under the cache folder (:class:`DifficultyCache`), written after each day, so an interrupted run
keeps what it played. A day not played yet says so (``survived`` is ``None``).
"""

from __future__ import annotations

import datetime
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import grid2op
from grid2op.Agent import DoNothingAgent
from grid2op.Runner import Runner

from ace_core.grid.action_space import cache_dir
from ace_core.grid.envs import dataset_fingerprint
from ace_core.grid.scenarios import DEFAULT_EPISODE_LENGTH, Scenario, split_of
from ace_core.live.envs import live_scenarios

DIFFICULTY_SEED = 0
"""the grid seed doing nothing plays each day with (opponents and random maintenance follow it)"""
SEASONS = (
    "winter",
    "winter",
    "spring",
    "spring",
    "spring",
    "summer",
    "summer",
    "summer",
    "autumn",
    "autumn",
    "autumn",
    "winter",
)
"""the season of each month, January first (meteorological seasons, northern hemisphere: the
bundled grids' chronics are French)"""

_starts: dict[str, list[datetime.datetime]] = {}
_starts_lock = threading.Lock()


@dataclass(frozen=True)
class Day:
    """One scenario a session can play, as the session form lists it."""

    index: int
    """its position in :func:`~ace_core.live.envs.live_scenarios` (what a session stores)"""
    scenario: Scenario
    starts: datetime.datetime
    """the chronic's date and time at the scenario's first step"""
    split: str
    survived: int | None = None
    """steps doing nothing survives from the start, counted as grid2op's Runner (and evaluation
    reports) count them: the step of a game over included (``None``: not played yet)"""

    @property
    def season(self) -> str:
        return SEASONS[self.starts.month - 1]

    @property
    def difficulty(self) -> float | None:
        """doing nothing's survival: the fraction of the day it survives (1.0: the whole day)"""
        return (
            None if self.survived is None else min(self.survived, self.scenario.length) / self.scenario.length
        )

    @property
    def difficulty_words(self) -> str:
        if self.survived is None:
            return "difficulty not computed yet"
        if self.survived >= self.scenario.length:
            return f"doing nothing survives the whole day ({self.scenario.length} steps)"
        hours, minutes = divmod(self.survived * 5, 60)
        return (
            f"doing nothing survives {self.difficulty:.0%} ({self.survived} of {self.scenario.length} "
            f"steps, {hours} h {minutes:02d})"
        )

    @property
    def words(self) -> str:
        """One line for a choice list: ``Sun 6 Jan 2019 00:00 · winter · doing nothing survives the
        whole day (288 steps) · train day 0000@0+288`` (several chronics may share a date)."""
        when = f"{self.starts:%a} {self.starts.day} {self.starts:%b %Y %H:%M}"
        return f"{when} · {self.season} · {self.difficulty_words} · {self.split} day {self.scenario.name}"

    def to_json(self) -> dict:
        return {
            "index": self.index,
            "scenario": self.scenario.name,
            "starts": self.starts.isoformat(timespec="minutes"),
            "season": self.season,
            "split": self.split,
            "length": self.scenario.length,
            "survived": self.survived,
            "difficulty": self.difficulty,
            "words": self.words,
        }


def chronic_starts(env) -> list[datetime.datetime]:
    """The date and time of each chronic's first step, in the order grid2op indexes them (resets
    the env once per chronic: computed once per env name)."""
    name = getattr(env, "gridace_name", "")
    with _starts_lock:
        if name and name in _starts:
            return _starts[name]
    starts = []
    for index in range(len(env.chronics_handler.real_data.subpaths)):
        obs = env.reset(options={"time serie id": index})
        starts.append(obs.get_time_stamp())
    if name:
        with _starts_lock:
            _starts[name] = starts
    return starts


def live_days(env, episode_length: int = DEFAULT_EPISODE_LENGTH) -> list[Day]:
    """Every day of :func:`~ace_core.live.envs.live_scenarios`, by index, with its date, season
    and split; their difficulty comes from :meth:`DifficultyCache.days`."""
    scenarios = live_scenarios(env, episode_length)
    starts = chronic_starts(env)
    step = datetime.timedelta(seconds=float(env.delta_time_seconds))
    return [
        Day(i, s, starts[s.chronic_index] + s.start * step, split_of(i, len(scenarios)))
        for i, s in enumerate(scenarios)
    ]


def do_nothing_runner(env) -> Runner:
    """grid2op's Runner of a do-nothing agent on ``env`` (an env made without the chronics cache,
    which grid2op advises against in a Runner)."""
    return Runner(**env.get_params_for_runner(), agentClass=DoNothingAgent)


def do_nothing_survival(runner: Runner, scenario: Scenario, seed: int = DIFFICULTY_SEED) -> int:
    """The steps doing nothing survives on ``scenario`` (its length when it survives the day)."""
    # the Runner's last field is the chronic step the episode could reach, not its length
    (_, _, _, survived, _), *_ = runner.run(
        nb_episode=1, reset_options=[scenario.reset_options()], env_seeds=[seed], agent_seeds=[seed]
    )
    return min(int(survived), scenario.length)


class DifficultyCache:
    """Doing nothing's survival per day of one env, in ``<cache>/days/<env>.json``: valid for one
    dataset, grid2op version and seed (a file made otherwise counts as empty); days are keyed by
    scenario name, which holds the chronic, start and length."""

    def __init__(self, env_name: str, folder: Path | None = None, seed: int = DIFFICULTY_SEED) -> None:
        self.env_name = env_name
        self.seed = seed
        self.path = (folder or cache_dir() / "days") / f"{env_name}.json"

    def _key(self) -> dict:
        data = dataset_fingerprint(self.env_name)  # a downloaded dataset's days are not the bundled copy's
        return {"env": self.env_name, "data": data, "grid2op": grid2op.__version__, "seed": self.seed}

    def load(self) -> dict[str, int]:
        """Steps survived by scenario name, for the days played so far."""
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        if (
            not isinstance(data, dict)
            or data.get("key") != self._key()
            or not isinstance(data.get("days"), dict)
        ):
            return {}
        return {name: int(n) for name, n in data["days"].items() if isinstance(n, int) and n >= 0}

    def save(self, survived: dict[str, int]) -> None:
        """Write the whole file beside and rename it over the old one, so a reader never sees half."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(json.dumps({"key": self._key(), "days": dict(sorted(survived.items()))}, indent=1))
        partial.replace(self.path)

    def days(self, days: list[Day]) -> list[Day]:
        """``days`` with their difficulty where it is known."""
        known = self.load()
        return [Day(d.index, d.scenario, d.starts, d.split, known.get(d.scenario.name)) for d in days]


def difficulty_compute(
    env,
    cache: DifficultyCache,
    days: list[Day] | None = None,
    force: bool = False,
    progress: Callable[[Day], None] | None = None,
) -> list[Day]:
    """Play doing nothing on each day (every live day of ``env`` by default) not in ``cache`` yet
    (all of them with ``force``), saving after each; returns the days with their difficulty.
    ``env``: made without the chronics cache (``make_env(name, cache_chronics=False)``), as the
    Runner wants it; ``progress`` is called with each day just played."""
    days = live_days(env) if days is None else days
    survived = {} if force else cache.load()
    runner = None
    for day in days:
        if day.scenario.name in survived:
            continue
        runner = runner or do_nothing_runner(env)
        survived[day.scenario.name] = do_nothing_survival(runner, day.scenario, cache.seed)
        cache.save(survived)
        if progress is not None:
            progress(cache.days([day])[0])
    return cache.days(days)
