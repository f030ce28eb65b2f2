"""Envs and scenarios of live sessions: a pool of reusable envs and the list sessions index into."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from ace_core.grid.scenarios import DEFAULT_EPISODE_LENGTH, Scenario, chronic_lengths, cut_episodes
from ace_core.live.actions import LiveActionError
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


def session_scenario(
    all_scenarios: list[Scenario], index: int, *, start_step: int = 0, max_steps: int = 0
) -> Scenario:
    """The part of scenario ``index`` a session plays: from ``start_step`` steps into it (a session
    that opens where an incident began, as grid2op's ``init ts`` skips to it), for ``max_steps``
    steps (0: to its end). Refused, with what is accepted, when the day or the step does not exist."""
    if not 0 <= index < len(all_scenarios):
        raise LiveActionError(f"scenario {index} does not exist; accepted: 0 to {len(all_scenarios) - 1}")
    scenario = all_scenarios[index]
    last = scenario.length - 2  # a session plays at least one step
    if not 0 <= start_step <= last:
        raise LiveActionError(
            f"start step {start_step} is outside scenario {index} ({scenario.length} steps); accepted: 0 to {last}"
        )
    if start_step:
        scenario = replace(scenario, start=scenario.start + start_step, length=scenario.length - start_step)
    if max_steps and max_steps < scenario.length:
        scenario = replace(scenario, length=max_steps)
    return scenario
