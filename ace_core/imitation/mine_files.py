"""A mine's folder on disk: where each file lies, the summary written last, and reading it back.

``mine.json`` (the settings) first, ``episodes/*.npz`` as they are played (a ``.playing`` marker
names the worker playing one), then ``action_set.json`` and ``dataset.npz``, and ``summary.json``
last: the mark of a finished mine. Whoever asks "is this mine finished?" or "what does it hold?"
(the trainer's checks, the web app's mines pages) asks here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ace_core.errors import ConfigError

if TYPE_CHECKING:
    from ace_core.grid.scenarios import Scenario

SUMMARY = "summary.json"
ACTION_SET = "action_set.json"


class MineError(ConfigError):
    """A mine that cannot run as asked: bad settings, unreachable cluster, a foreign directory."""


def episode_file(out: Path, scenario: Scenario, seed: int) -> Path:
    return out / "episodes" / f"{scenario.name.replace('/', '_')}-seed{seed}.npz"


def mine_days(folder: str | Path) -> list[str]:
    """The days (scenario names) whose episodes a mine holds (``folder``: the mine, or its
    ``dataset.npz``), from its episode files' names: what a policy cloned from it learned from."""
    folder = Path(folder)
    episodes = (folder if folder.is_dir() else folder.parent) / "episodes"
    return sorted({path.name.rsplit("-seed", 1)[0] for path in episodes.glob("*.npz")})


def marker(path: Path) -> Path:
    """``<episode>.npz.playing``: holds ``host pid`` of the worker playing that episode."""
    return path.with_name(path.name + ".playing")


def write_marker(path: Path, where: str) -> None:
    """Name the worker playing ``path``'s episode, whole or not at all: whoever watches the
    directory never reads a marker still being written."""
    target = marker(path)
    partial = target.with_name(target.name + ".tmp")
    partial.write_text(where)
    os.replace(partial, target)


def finished(folder: str | Path) -> bool:
    """Whether ``folder`` holds a finished mine (its summary, written last, is there)."""
    return (Path(folder) / SUMMARY).is_file()


def read_summary(folder: str | Path) -> dict:
    """The summary of the finished mine in ``folder``, as :func:`~ace_core.imitation.mining.mine`
    wrote it."""
    return json.loads((Path(folder) / SUMMARY).read_text())


def expert_text(expert: Any) -> str:
    """A mine's expert as a spec (``greedy`` plus the settings that differ from the defaults)."""
    if not isinstance(expert, dict):
        return str(expert)
    from ace_core.config.expert import ExpertConfig

    defaults = ExpertConfig().key()
    changed = [f"{key}={value}" for key, value in expert.items() if defaults.get(key) != value]
    return "greedy" + (":" + ",".join(changed) if changed else "")


@dataclass(frozen=True)
class MineSummary:
    """A finished mine as its files describe it (``summary.json`` and its ``mine`` settings)."""

    name: str
    path: str
    env: str
    expert: str
    split: str
    seeds: int
    episodes: int
    episode_length: int
    opponent: str
    """line attacks in the mined episodes: env (the env's own), none or random-line"""
    demand_scale: float
    """every load and production of the mined days times this (1: the days as they are)"""
    decisions: int
    topology_decisions: int
    distinct_topologies: int
    coverage: list[tuple[int, float]]
    """(top N, share of the expert's topology decisions the N most played topologies cover)"""
    steps: int
    game_overs: int
    seconds: float

    @classmethod
    def read(cls, folder: str | Path) -> MineSummary | None:
        """The mine in ``folder``, or None when it is not a finished mine (no or a corrupt summary)."""
        folder = Path(folder)
        try:
            summary = read_summary(folder)
            spec = summary["mine"]
            coverage = sorted((int(top), float(share)) for top, share in summary["coverage"].items())
            return cls(
                name=folder.name,
                path=str(folder),
                env=str(spec["env"]),
                expert=expert_text(spec["expert"]),
                split=str(spec["split"]),
                seeds=int(spec["seeds"]),
                episodes=int(summary["episodes"]),
                episode_length=int(spec["episode_length"]),
                opponent=str(spec.get("opponent", "env")),  # mines made before opponents: the env's own
                demand_scale=float(spec.get("demand_scale", 1.0)),  # and before demand scales: as they are
                decisions=int(summary["decisions"]),
                topology_decisions=int(summary["topology_decisions"]),
                distinct_topologies=int(summary["distinct_topologies"]),
                coverage=coverage,
                steps=int(summary.get("steps", 0)),
                game_overs=int(summary.get("game_overs", 0)),
                seconds=float(summary.get("seconds", 0.0)),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def top_actions(self, limit: int) -> tuple[list[tuple[int, int]], str | None]:
        """The ``limit`` most played topology actions as (index, times played), and the
        fingerprint of the action space they index; nothing when the action set is unreadable."""
        try:
            data = json.loads((Path(self.path) / ACTION_SET).read_text())
            pairs = [(int(index), int(count)) for index, count in data["actions"][:limit]]
            return pairs, data.get("fingerprint")
        except (OSError, ValueError, KeyError, TypeError):
            return [], None
