"""One-step-ahead simulation, one action at a time or many candidates for the same observation.

``obs.simulate(action)`` spends about a quarter of its time deep-copying the observation it
returns. Recommendations, the greedy expert and the LLM actor only need rho and the outcome, so
:func:`simulate_rho` performs the same steps as grid2op 1.12's ``BaseObservation.simulate``
(forecast injections, ``_obs_env.init``, ``_obs_env.simulate``) and reads rho from the
simulator's own observation.

:func:`simulate_many` checks several candidates against the same observation. Grid2op re-initialises
its simulator for every call (forecast injections, rules, redispatch, a full observation); for a
topology action on connected elements, all of that is identical to doing nothing except the
buses. So it simulates doing nothing once (that step settles the injections in the simulator's
LightSim2Grid backend), then, for each candidate, sets the candidate's buses on that backend, runs
the power flow and reads rho and the env's reward (the next candidate puts the buses back). The result is the one
``obs.simulate`` gives whenever grid2op's step would add nothing else, which is checked for each
candidate: the action is legal under the env's rules (judged before the step, as grid2op does),
and only sets buses of connected elements. The power flow and the protections (lines tripped by
overflows, cascades) are grid2op's own ``backend.next_grid_state`` with this step's protection
counters; a power flow that diverges is a game over with the minimum reward, as in grid2op. Any other candidate, and every candidate when doing nothing itself trips a line, goes
through :func:`simulate_rho`. The test suite compares both paths on every action of the 14-bus
grid in stressed states. About 4x faster on ten candidates (see ``python -m ace_core bench``).

Both fall back to the public ``obs.simulate`` if grid2op's internals change. What a simulated
step means (usable or not, why, the overloads it relieves or creates) is read in
:mod:`ace_core.grid.outcome`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np


class Simulated(NamedTuple):
    """grid2op's raw answer for one simulated step (read it with :mod:`ace_core.grid.outcome`)."""

    rho: np.ndarray
    reward: float
    done: bool
    info: dict


def simulate_rho(obs, action, time_step: int = 1) -> Simulated:
    try:
        _init_simulator(obs, time_step)
        sim_obs, reward, done, info = obs._obs_env.simulate(action)
    except (AttributeError, KeyError, TypeError):
        sim_obs, reward, done, info = obs.simulate(action, time_step=time_step)
    return Simulated(np.array(sim_obs.rho, copy=True), float(reward), bool(done), info)


AfterEach = Callable[[int, Simulated, object], None]
"""``after_each(i, outcome, backend)``: called right after candidate ``i`` is simulated, while the
simulator's LightSim2Grid ``backend`` holds the grid that candidate leads to (e.g. to screen it
for N-1); it must not change that backend."""


def simulate_many(
    obs, actions: Sequence, time_step: int = 1, after_each: AfterEach | None = None
) -> list[Simulated]:
    """``simulate_rho(obs, a)`` for every action, in order, sharing the simulator's set-up."""
    if len(actions) < 2:
        return [
            _with_hook(i, simulate_rho(obs, a, time_step), obs, after_each) for i, a in enumerate(actions)
        ]
    try:
        fast = _TopologyDelta(obs, actions, time_step)
        results = []
        for i, a in enumerate(actions):
            result = fast.simulate(i, a)
            results.append(result if result is None else _with_hook(i, result, obs, after_each))
    except (AttributeError, KeyError, TypeError):
        results = [None] * len(actions)
    # the full simulations re-initialise the simulator: only after every fast one
    return [
        r if r is not None else _with_hook(i, simulate_rho(obs, a, time_step), obs, after_each)
        for i, (r, a) in enumerate(zip(results, actions))
    ]


def _with_hook(index: int, result: Simulated, obs, after_each: AfterEach | None) -> Simulated:
    if after_each is not None:
        after_each(index, result, obs._obs_env.backend)
    return result


def _init_simulator(obs, time_step: int) -> None:
    forecasts = obs._forecasted_grid_act
    if time_step not in forecasts:
        timestamp, injections = obs._forecasted_inj[time_step]
        forecasts[time_step] = {"timestamp": timestamp, "inj_action": obs.action_helper(injections)}
    forecast = forecasts[time_step]
    obs._obs_env.init(forecast["inj_action"], time_stamp=forecast["timestamp"], obs=obs, time_step=time_step)


class _TopologyDelta:
    """The simulator's backend after doing nothing, and candidates as bus changes on top of it."""

    def __init__(self, obs, actions: Sequence, time_step: int) -> None:
        env = obs._obs_env
        _init_simulator(obs, time_step)
        # what grid2op's step judges before touching anything: legality, protection counters
        self.legal = [bool(env._game_rules(action=a, env=env)[0]) for a in actions]
        self.protection_counter = env._protection_counter.copy()
        _, _, done, info = env.simulate(env._action_space({}))
        disc_lines = info.get("disc_lines")
        self.usable = (
            not done
            and not info.get("exception")
            and disc_lines is not None
            and not (np.asarray(disc_lines) >= 0).any()
            and not env._parameters.STOP_EP_IF_GEN_BREAK_CONSTRAINTS
            and not env._env_dc
        )
        self.env = env
        self.backend = env.backend
        self.topo = np.array(self.backend.get_topo_vect(), copy=True)
        self.voltages = np.array(self.backend.V, copy=True)
        self.buses = env._backend_action_class()
        self.dirty = np.zeros(len(self.topo), dtype=bool)
        self.line_ends = np.stack([env.line_or_pos_topo_vect, env.line_ex_pos_topo_vect], axis=1)

    def simulate(self, index: int, action) -> Simulated | None:
        """The candidate's outcome, or None when only a full simulation can tell it."""
        if not (self.usable and self.legal[index]):
            return None
        set_bus = action._set_topo_vect
        touched = set_bus != 0
        if (
            action._change_bus_vect.any()
            or action._set_line_status.any()
            or action._switch_line_status.any()
            or action._modif_inj
            or action._modif_redispatch
            or action._modif_storage
            or action._modif_curtailment
            or (touched & (self.topo <= 0)).any()
            or (set_bus[touched] <= 0).any()
        ):
            return None
        # one bus update per candidate: this one's buses, and what the previous one moved or
        # tripped put back
        target = self.topo.copy()
        target[touched] = set_bus[touched]
        self._set_buses(touched | self.dirty, target)
        self.dirty = touched.copy()
        # grid2op's own power flow and protections (cascades included), from this step's counters
        self.env._protection_counter[:] = self.protection_counter
        self.backend.V[:] = self.voltages
        disc_lines, _, error = self.backend.next_grid_state(env=self.env, is_dc=False)
        disc_lines = np.array(disc_lines, copy=True)
        self.dirty[self.line_ends[disc_lines >= 0].ravel()] = True
        info = {"is_illegal": False, "exception": [], "disc_lines": disc_lines, "fast": True}
        if error is not None:
            # grid2op's step ends the episode on a diverging power flow, with the minimum reward
            reward = self.env._reward_helper(action, self.env, True, True, False, False)
            info["exception"] = [error]
            return Simulated(np.zeros(len(disc_lines)), float(reward), True, info)
        rho = np.array(self.backend.get_relative_flow(), copy=True)
        if not np.isfinite(rho).all():
            return None
        reward = self.env._reward_helper(action, self.env, False, False, False, False)
        return Simulated(rho, float(reward), False, info)

    def _set_buses(self, mask: np.ndarray, values: np.ndarray) -> None:
        self.buses.reset()
        self.buses.current_topo.values[mask] = values[mask]
        self.buses.current_topo.changed[mask] = True
        self.backend.apply_action(self.buses)
