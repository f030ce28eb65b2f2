"""Envs and scenarios of live sessions: a pool of reusable envs and the list sessions index into."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from ace_core.grid.scenarios import DEFAULT_EPISODE_LENGTH, Scenario, chronic_lengths, cut_episodes
from ace_core.live.recommendations import make_live_env

_pool: dict[str, list[Any]] = {}
_pool_lock = threading.Lock()
_lengths: dict[str, list[tuple[str, int]]] = {}


def acquire_env(name: str):
    """An env of ``name``: a released one when there is one (making one costs 1-3 s; every
    :class:`~ace_core.live.grid.LiveGrid` resets it to its own scenario and seed before use), else
    a new one."""
    with _pool_lock:
        free = _pool.get(name)
        if free:
            return free.pop()
    return make_live_env(name)  # with a one-hour forecast horizon for the look-ahead


def release_env(name: str, env) -> None:
    # an env left after a game over refuses get_obs() (the policy's feature builder calls it)
    env.reset()
    with _pool_lock:
        _pool.setdefault(name, []).append(env)


def live_scenarios(env, episode_length: int = DEFAULT_EPISODE_LENGTH) -> list[Scenario]:
    """Every episode the env's chronics give (all splits), in a fixed order: live sessions name
    their scenario by its position in this list."""
    name = getattr(env, "gridace_name", "")
    lengths = _lengths.get(name) if name else None
    if lengths is None:
        lengths = chronic_lengths(env)  # resets the env once per chronic: computed once per env name
        if name:
            _lengths[name] = lengths
    return cut_episodes(lengths, episode_length)


def shorter(scenario: Scenario, max_steps: int) -> Scenario:
    """``scenario`` cut to ``max_steps`` steps (0: unchanged)."""
    if max_steps and max_steps < scenario.length:
        return replace(scenario, length=max_steps)
    return scenario
