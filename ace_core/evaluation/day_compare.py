"""Two episodes of the same day side by side, as grid2viz compares agents: KPIs and per-step frames.

An episode is any folder grid2op's Runner wrote (EpisodeData, read with
``EpisodeData.from_disk``): an evaluation's ``episodes/seed<S>/<scenario>/`` (see
:mod:`ace_core.evaluation.runner`), a live session exported by :mod:`ace_core.live.export`, or
another tool's Runner output. :func:`open_episode` accepts the episode's own folder (it holds
``episode_meta.json``) or a folder above it that holds that one episode alone (an evaluation of
one scenario and seed); given ``roots``, only folders inside them (after resolving links), the web
app's case.

:func:`episode_kpis` gives what an operator compares: steps survived out of the episode's length,
steps with an overload (max rho >= 1) and line-steps overloaded, the actions that changed the
grid (topology per substation, lines reconnected and disconnected, redispatch, curtailment or
storage), and the agent's decision time when the Runner recorded it. An action counts only when
it changed something: a bus set to the bus the element is already on, a connected line set
connected, or a change the next state does not show (an illegal action, played as doing
nothing), is doing nothing.

:func:`compare_day` refuses two episodes of different days (env, chronic and first time stamp);
with ``state_of`` (the web app passes :func:`ace_core.live.grid_state`, the console's drawing
state), each side also has its per-step frames for synchronised diagrams.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ace_core.errors import AceError
from ace_core.grid.names import ElementNames, element_names

META_FILE = "episode_meta.json"
"""what marks a folder as one episode of grid2op's Runner"""
MAX_DEPTH = 4
"""how deep below a given folder its one episode is looked for"""
OVERLOAD = 1.0
BACKEND_SUFFIXES = ("LightSimBackend", "PandaPowerBackend")
ACCEPTED = (
    "accepted: a folder written by grid2op's Runner (EpisodeData: an episode folder holding "
    f"{META_FILE}, or a folder above a single one, such as an evaluation's output)"
)


class EpisodeError(AceError):
    """A folder that is not an episode that may be opened, or two episodes of different days."""


@dataclass(frozen=True)
class Day:
    """What makes two episodes comparable: the same grid, the same chronic, the same start."""

    env: str
    chronic: str
    start: str
    """the first observation's time stamp, to the minute"""

    def __str__(self) -> str:
        return f"{self.env}, chronic {self.chronic}, from {self.start.replace('T', ' ')}"


def open_episode(folder: Path | str, roots: Sequence[Path] | None = None, label: str | None = None):
    """The EpisodeData in ``folder`` (see the module for what is accepted); with ``roots``, a
    folder outside them is refused, whether or not it exists. Messages name the folder by
    ``label`` when given (the web app's name for it: never the server's own paths), else as
    given."""
    from grid2op.Episode import EpisodeData

    shown = label if label is not None else str(folder)
    if "\x00" in str(folder):
        raise EpisodeError(f"{shown!r} is not a folder; {ACCEPTED}")
    resolved = Path(folder).resolve()
    if roots is not None and not any(resolved.is_relative_to(Path(root).resolve()) for root in roots):
        raise EpisodeError(
            f"{shown} is outside the folders episodes may be opened from; {ACCEPTED}, inside them"
        )
    if not resolved.is_dir():
        raise EpisodeError(f"{shown} is not a folder; {ACCEPTED}")
    episode_dir = _episode_dir(resolved, shown)
    try:
        return EpisodeData.from_disk(str(episode_dir.parent), episode_dir.name)
    except Exception as exc:  # grid2op raises its own, OSError or ValueError on a damaged folder
        detail = type(exc).__name__ if label is not None else f"{type(exc).__name__}: {exc}"
        raise EpisodeError(f"{shown} could not be read as EpisodeData ({detail}); {ACCEPTED}") from None


def _episode_dir(resolved: Path, shown: str) -> Path:
    """The one episode folder at or below ``resolved`` (an evaluation's output holds its episodes
    at ``episodes/seed<S>/<scenario>/<chronic>/``, four levels down)."""
    if (resolved / META_FILE).is_file():
        return resolved
    episodes = sorted(
        meta.parent
        for depth in range(1, MAX_DEPTH + 1)
        for meta in resolved.glob("/".join(["*"] * depth + [META_FILE]))
    )
    if len(episodes) == 1:
        return episodes[0]
    if episodes:
        names = ", ".join(str(p.relative_to(resolved)) for p in episodes[:10])
        raise EpisodeError(f"{shown} holds {len(episodes)} episodes ({names}); name one of their folders")
    raise EpisodeError(f"{shown} holds no episode; {ACCEPTED}")


def env_name(episode) -> str:
    """The grid's name: the env folder that holds the grid file, else the observation space's
    class name without the backend's suffix."""
    grid_path = episode.meta.get("grid_path") or ""
    if grid_path:
        return Path(grid_path).parent.name
    name = str(getattr(episode.observation_space, "env_name", "") or "unknown")
    for suffix in BACKEND_SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def episode_day(episode) -> Day:
    chronic = Path(str(episode.meta.get("chronics_path") or "")).name or "unknown"
    first = episode.observations[0]
    return Day(env_name(episode), chronic, first.get_time_stamp().isoformat(timespec="minutes"))


def _observations(episode) -> list:
    """The states the episode went through: the first, then one per step played; on a game over
    grid2op keeps a last, empty, observation, left out here."""
    survived = int(episode.meta["nb_timestep_played"])
    kept = survived if game_over(episode) else survived + 1
    return [episode.observations[t] for t in range(min(kept, len(episode.observations)))]


def episode_length(episode) -> int:
    first = episode.observations[0]
    max_step = int(getattr(first, "max_step", -1))
    return max_step if max_step > 0 else int(episode.meta.get("chronics_max_timestep") or 0)


def game_over(episode) -> bool:
    return int(episode.meta["nb_timestep_played"]) < episode_length(episode)


def _names(episode) -> ElementNames:
    return element_names(episode.observation_space, env_name(episode))


@dataclass
class Changes:
    """What one action changed on the grid it was played on."""

    substations: list[int]
    reconnected: list[int]
    disconnected: list[int]
    continuous: bool

    @property
    def any(self) -> bool:
        return bool(self.substations or self.reconnected or self.disconnected or self.continuous)


def action_changes(action, obs, sub_of_position: np.ndarray, after=None) -> Changes:
    """The real changes of ``action`` played on the grid of ``obs``: substations whose buses it
    moved, lines it reconnected or disconnected, and whether it redispatched, curtailed or used
    storage. A line end set to a bus while the line is off is the line's reconnection, not a
    substation's move. With ``after`` (the next state), a change the grid does not show there was
    refused (an illegal action is played as doing nothing) and is left out."""
    topo = np.asarray(obs.topo_vect)
    status = np.asarray(obs.line_status, dtype=bool)
    set_bus = np.asarray(action.set_bus)
    change_bus = np.asarray(action.change_bus, dtype=bool)
    set_status = np.asarray(action.line_set_status)
    change_status = np.asarray(action.line_change_status, dtype=bool)
    # the positions of each line's ends in the topology vector
    or_pos = np.asarray(obs.line_or_pos_topo_vect)
    ex_pos = np.asarray(obs.line_ex_pos_topo_vect)
    bus_on = (set_bus > 0) | change_bus
    reconnect = ~status & ((set_status == 1) | change_status | bus_on[or_pos] | bus_on[ex_pos])
    disconnect = status & (
        (set_status == -1) | change_status | (set_bus[or_pos] == -1) | (set_bus[ex_pos] == -1)
    )
    moved = ((set_bus != 0) & (set_bus != topo)) | (change_bus & (topo > 0))
    line_ends = np.concatenate([or_pos[reconnect | disconnect], ex_pos[reconnect | disconnect]])
    moved[line_ends] = False
    if after is not None:
        next_topo = np.asarray(after.topo_vect)
        next_status = np.asarray(after.line_status, dtype=bool)
        moved &= next_topo != topo
        reconnect &= next_status
        disconnect &= ~next_status
    continuous = bool(
        np.any(np.asarray(action.redispatch) != 0)
        or np.any(np.asarray(getattr(action, "curtail", [-1])) != -1)
        or np.any(np.asarray(getattr(action, "storage_p", [0])) != 0)
    )
    return Changes(
        substations=sorted({int(s) for s in sub_of_position[np.flatnonzero(moved)]}),
        reconnected=[int(i) for i in np.flatnonzero(reconnect)],
        disconnected=[int(i) for i in np.flatnonzero(disconnect)],
        continuous=continuous,
    )


def _sub_of_position(episode) -> np.ndarray:
    """The substation of each position of the topology vector (grid2op groups it by substation)."""
    sub_info = np.asarray(episode.observation_space.sub_info, dtype=int)
    return np.repeat(np.arange(len(sub_info)), sub_info)


def _legal(episode, step: int) -> bool:
    """Whether grid2op played the action at ``step`` (an illegal one is replaced by nothing)."""
    legal = getattr(episode, "legal", None) if getattr(episode, "has_legal_ambiguous", False) else None
    return legal is None or step >= len(legal) or bool(legal[step])


def describe(changes: Changes, names: ElementNames) -> str:
    """An action's real changes in words, with the grid's one names."""
    if not changes.any:
        return "no action"
    words = [f"{names.substation(s)}: buses changed" for s in changes.substations]
    words += [f"reconnect {names.line(i)}" for i in changes.reconnected]
    words += [f"disconnect {names.line(i)}" for i in changes.disconnected]
    if changes.continuous:
        words.append("redispatch, curtailment or storage")
    return "; ".join(words)


def _played(episode) -> list[Changes]:
    """The real changes of each step's action, played on the state before it (nothing for an
    illegal one); the last one of a game over led to it."""
    observations = _observations(episode)
    sub_of_position = _sub_of_position(episode)
    out = []
    for step in range(int(episode.meta["nb_timestep_played"])):
        if step >= min(len(episode.actions), len(observations)) or not _legal(episode, step):
            out.append(Changes([], [], [], False))
            continue
        after = observations[step + 1] if step + 1 < len(observations) else None
        out.append(action_changes(episode.actions[step], observations[step], sub_of_position, after))
    return out


def _decision_ms(episode, steps: int) -> dict[str, Any]:
    """The agent's time per step as the Runner recorded it (``agent_exec_times.npz``)."""
    times = getattr(episode, "times", None)
    values = np.asarray(times if times is not None else [], dtype=float)[:steps] * 1000.0
    values = values[np.isfinite(values)]
    if not len(values):
        return {"recorded": False, "note": "not recorded"}
    return {
        "recorded": True,
        "p50": float(np.percentile(values, 50)),
        "p95": float(np.percentile(values, 95)),
        "max": float(values.max()),
        "mean": float(values.mean()),
    }


def episode_kpis(episode) -> dict[str, Any]:
    """One episode in the figures :func:`compare_day` sets side by side (see the module)."""
    names = _names(episode)
    observations = _observations(episode)
    survived = int(episode.meta["nb_timestep_played"])
    length = episode_length(episode)
    # the states after each step; the first is the day's, the same for both sides
    faced = [np.asarray(o.rho, dtype=float) for o in observations[1:]]
    overloaded = [int(np.sum(rho >= OVERLOAD)) for rho in faced]
    played = _played(episode)
    per_sub: Counter = Counter(s for changes in played for s in changes.substations)
    reconnected: Counter = Counter(i for changes in played for i in changes.reconnected)
    disconnected: Counter = Counter(i for changes in played for i in changes.disconnected)
    reward = float(episode.meta.get("cumulative_reward") or 0.0)
    return {
        "day": str(episode_day(episode)),
        "steps_survived": survived,
        "length": length,
        "survival": survived / length if length else 0.0,
        "game_over": game_over(episode),
        "steps_overloaded": int(sum(n > 0 for n in overloaded)),
        "overload_line_steps": int(sum(overloaded)),
        "max_rho": float(max((rho.max() for rho in faced if len(rho)), default=0.0)),
        "action_steps": int(sum(changes.any for changes in played)),
        "actions_per_substation": {
            names.substation(s): count for s, count in sorted(per_sub.items(), key=lambda kv: (-kv[1], kv[0]))
        },
        "topology_actions": int(sum(per_sub.values())),
        "reconnections": int(sum(reconnected.values())),
        "reconnected_lines": {names.line(i): n for i, n in sorted(reconnected.items())},
        "disconnections": int(sum(disconnected.values())),
        "continuous_action_steps": int(sum(changes.continuous for changes in played)),
        "decision_ms": _decision_ms(episode, survived),
        "reward": reward if math.isfinite(reward) else None,
    }


def episode_frames(episode, state_of: Callable[[Any, int], dict]) -> list[dict[str, Any]]:
    """Each state of the episode drawn by ``state_of(obs, step)``, with the action played to reach
    it in words (``applied``) and the substations it touched (``touched``)."""
    names = _names(episode)
    played = _played(episode)
    frames = []
    for step, obs in enumerate(_observations(episode)):
        before = played[step - 1] if 0 < step <= len(played) else None
        frame = state_of(obs, step)
        frame["applied"] = describe(before, names) if before else "start of the day"
        frame["touched"] = before.substations if before else []
        frames.append(frame)
    return frames


def compare_day(
    a: Path | str,
    b: Path | str,
    *,
    roots: Sequence[Path] | None = None,
    state_of: Callable[[Any, int], dict] | None = None,
    labels: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """Episodes ``a`` and ``b`` of one day, side by side: their day, env, KPIs and (with
    ``state_of``) frames. Two episodes of different days are refused, naming both. ``roots`` and
    ``labels``: as :func:`open_episode` takes them."""
    label_a, label_b = labels or (None, None)
    first, second = open_episode(a, roots, label_a), open_episode(b, roots, label_b)
    day_a, day_b = episode_day(first), episode_day(second)
    if day_a != day_b:
        raise EpisodeError(
            f"episode A is {day_a} and episode B is {day_b}; only two episodes of the same env and day "
            "(the same chronic from the same time stamp) can be compared"
        )
    sides = {}
    for key, episode in (("a", first), ("b", second)):
        side: dict[str, Any] = {"kpis": episode_kpis(episode)}
        if state_of is not None:
            side["frames"] = episode_frames(episode, state_of)
        sides[key] = side
    return {"env": day_a.env, "day": str(day_a), **sides}
