"""Look-ahead: max rho over the next steps if an action is kept and nothing else is done.

The same as chaining grid2op's ``obs.simulate``: step 1 is the action's one-step simulation;
each further step ``k`` puts the observation's forecast for ``k`` steps ahead (injections and
maintenance) on the simulator's grid, keeps the topology, and runs grid2op's power flow and
protections (lines tripped on hard overflow or after too many steps of soft overflow, cascades),
carrying the overflow counters from step to step as grid2op's step does. A diverging power flow
is a game over at that step.

Two ways, same result (the test suite compares both with chained ``obs.simulate``):

- fast: LightSim2Grid's ``TimeSeriesCPP`` solves every step of the horizon on the fixed
  post-action topology in one C++ call from a :class:`~ace_core.grid.solved.SolvedGrid`, and the
  protections are replayed on its flows. Valid as long as nothing changes the topology: when a
  protection would trip a line, a step diverges, or the forecasts bring maintenance (or the grid
  has storage units), it hands over to
- exact: grid2op's own ``backend.next_grid_state`` step by step on the simulator (one simulation
  of the action, then one power flow and the protections per step).

A continuous move that grid2op keeps (a redispatch, a curtailment) is kept over the horizon by
``hold``: the forecast generation of every further step passed through it (its imbalance goes to
the slack bus, where grid2op would share it among the redispatchable generators).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ace_core.grid.forecasts import STEP_MINUTES, ForecastInfo
from ace_core.grid.simulate import simulate_rho
from ace_core.grid.solved import SolvedGrid


@dataclass(frozen=True)
class LookAhead:
    """Max rho trajectory over the horizon (step 1 = the step after the action)."""

    forecast: ForecastInfo
    max_rho: tuple[float, ...] = ()
    """per step reached; a game over ends the trajectory"""
    game_over_step: int | None = None
    skipped: str = ""
    """why there is no look-ahead (e.g. the env carries no forecasts)"""
    exact: bool = False
    """computed step by step with grid2op (protections tripped a line, or maintenance)"""
    solver_ms: float = 0.0
    """LightSim2Grid's own time in the power flows of the fast path"""
    overloaded_lines: tuple[int, ...] = ()
    """the lines at or above their limit at some step of the trajectory, in the order they first
    get there (the early warning names them)"""

    @property
    def horizon(self) -> int:
        return len(self.max_rho) + (self.game_over_step is not None)

    @property
    def first_overload_step(self) -> int | None:
        over = [i + 1 for i, rho in enumerate(self.max_rho) if rho >= 1.0]
        return over[0] if over else None

    @property
    def worst_rho(self) -> float:
        """highest max rho over the horizon; infinity with a game over"""
        if self.game_over_step is not None:
            return float("inf")
        return max(self.max_rho, default=0.0)

    @property
    def status(self) -> str:
        if self.skipped:
            return f"no look-ahead: {self.skipped}"
        minutes = self.horizon * STEP_MINUTES
        if self.game_over_step is not None:
            return f"game over in simulation in {self.game_over_step * STEP_MINUTES} min"
        first = self.first_overload_step
        if first is not None:
            return f"overload in {first * STEP_MINUTES} min (max rho {max(self.max_rho):.1%} within {minutes} min)"
        return f"no overload in the next {minutes} min (max rho {self.worst_rho:.1%})"

    def to_json(self) -> dict:
        first = self.first_overload_step
        return {
            "status": self.status,
            "forecast": self.forecast.to_json(),
            "max_rho": list(self.max_rho),
            "first_overload_step": first,
            "first_overload_minutes": None if first is None else first * STEP_MINUTES,
            "game_over_step": self.game_over_step,
            "overloaded_lines": list(self.overloaded_lines),
            "skipped": self.skipped,
        }


class ForecastSeries:
    """The forecasts of one observation for steps 2..horizon, as LightSim2Grid's inputs."""

    def __init__(self, obs, horizon: int) -> None:
        self.obs = obs
        self.horizon = horizon
        env = obs._obs_env
        steps = [obs._forecasted_inj[k][1] for k in range(2, horizon + 1)]
        injections = [step.get("injection", {}) for step in steps]
        self.fast = (
            env.n_storage == 0
            and not any(set(step) - {"injection"} for step in steps)
            and all({"load_p", "load_q", "prod_p", "prod_v"} <= set(inj) for inj in injections)
        )
        if self.fast and steps:
            pu_to_kv = np.asarray(env.backend.prod_pu_to_kv, dtype=float)
            self.gen_p = _matrix(injections, "prod_p")
            self.gen_v = _matrix(injections, "prod_v") / pu_to_kv
            self.load_p = _matrix(injections, "load_p")
            self.load_q = _matrix(injections, "load_q")
        self.soft = float(env._parameters.SOFT_OVERFLOW_THRESHOLD)
        self.hard = np.asarray(env._hard_overflow_threshold, dtype=float)
        self.max_counter = np.asarray(env._nb_ts_max_protection_counter)
        self.protections = not env._no_overflow_disconnection
        self.counter_now = np.asarray(getattr(obs, "timestep_protection_engaged", obs.timestep_overflow))


class _Overloads:
    """The lines over their limit along a trajectory, in the order they first get there."""

    def __init__(self) -> None:
        self.lines: dict[int, None] = {}

    def add(self, rho: np.ndarray) -> None:
        for line in np.flatnonzero(np.nan_to_num(rho, nan=0.0) >= 1.0):
            self.lines.setdefault(int(line), None)

    def __call__(self) -> tuple[int, ...]:
        return tuple(self.lines)


def _matrix(injections: list[dict], key: str) -> np.ndarray:
    return np.ascontiguousarray(np.stack([np.asarray(inj[key], dtype=float) for inj in injections]))


Hold = Callable[[np.ndarray], np.ndarray]
"""the generators' output (MW, last axis) a kept continuous move makes of the forecast's"""


def look_ahead(
    obs,
    action,
    series: ForecastSeries,
    forecast: ForecastInfo,
    start: SolvedGrid | None = None,
    hold: Hold | None = None,
) -> LookAhead:
    """Keep ``action`` and do nothing else for ``series.horizon`` steps. ``start``: the grid the
    action's one-step simulation led to, when known (enables the fast path); ``hold``: the
    action's continuous move kept (module docstring)."""
    if start is not None and series.fast:
        fast = _fast(series, forecast, start, hold)
        if fast is not None:
            return fast
    return _exact(obs, action, series, forecast, hold)


def _fast(
    series: ForecastSeries, forecast: ForecastInfo, start: SolvedGrid, hold: Hold | None = None
) -> LookAhead | None:
    """The trajectory from LightSim2Grid's time series; None when a protection would act."""
    from lightsim2grid.lightsim2grid_cpp import TimeSeriesCPP

    limits = start.thermal_limit
    counter = np.where(start.rho > series.soft, series.counter_now + 1, 0)
    trajectory = [float(start.rho.max())]
    overloads = _Overloads()
    overloads.add(start.rho)
    solver_ms = 0.0
    if series.horizon > 1:
        solver = TimeSeriesCPP(start.grid)
        solver.modify_gen_p(series.gen_p if hold is None else np.ascontiguousarray(hold(series.gen_p)))
        solver.modify_gen_v(series.gen_v)
        solver.modify_load_p(series.load_p)
        solver.modify_load_q(series.load_q)
        solver.compute(np.array(start.V, copy=True), start.max_it, start.tol)
        solver_ms = 1e3 * solver.solver_time()
        if not all(solver.converged_mask()):
            return None
        solver.compute_flows()
        flows = 1e3 * np.asarray(solver.get_flows())
        for amps in flows:
            rho = np.where(start.line_status, amps / limits, 0.0)
            engaged = rho > series.soft
            counter = np.where(engaged, counter + 1, 0)
            trips = (rho > series.hard) | (counter > series.max_counter)
            if not np.isfinite(rho).all() or (series.protections and (trips & start.line_status).any()):
                return None
            trajectory.append(float(rho.max()))
            overloads.add(rho)
    return LookAhead(forecast, tuple(trajectory), solver_ms=solver_ms, overloaded_lines=overloads())


def _exact(
    obs, action, series: ForecastSeries, forecast: ForecastInfo, hold: Hold | None = None
) -> LookAhead:
    rho, _, done, info = simulate_rho(obs, action)
    if done or info.get("is_illegal") or info.get("exception"):
        return LookAhead(forecast, (), 1, exact=True)
    trajectory = [float(rho.max())]
    overloads = _Overloads()
    overloads.add(np.asarray(rho))
    env = obs._obs_env
    backend = env.backend
    limits = np.asarray(backend.get_thermal_limit())
    for k in range(2, series.horizon + 1):
        _, injections = obs._forecasted_inj[k]
        if hold is not None and "prod_p" in injections.get("injection", {}):
            held = {**injections["injection"], "prod_p": hold(np.asarray(injections["injection"]["prod_p"]))}
            injections = {**injections, "injection": held}
        buses = env._backend_action_class()
        buses += obs.action_helper(injections)
        backend.apply_action(buses)
        _, _, error = backend.next_grid_state(env=env, is_dc=False)
        if error is not None:
            return LookAhead(forecast, tuple(trajectory), k, exact=True, overloaded_lines=overloads())
        flows = np.asarray(backend.get_line_flow())
        rho = flows / limits
        if not np.isfinite(rho).all():
            return LookAhead(forecast, tuple(trajectory), k, exact=True, overloaded_lines=overloads())
        trajectory.append(float(rho.max()))
        overloads.add(rho)
        # grid2op's step: a line's counter grows while it is above the soft threshold
        engaged = flows > limits * series.soft
        env._protection_counter[engaged] += 1
        env._protection_counter[~engaged] = 0
    return LookAhead(forecast, tuple(trajectory), exact=True, overloaded_lines=overloads())


def skipped_look_ahead(forecast: ForecastInfo, reason: str) -> LookAhead:
    return LookAhead(forecast, skipped=reason)
