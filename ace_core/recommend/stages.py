"""The recommendation pipeline's helpers around its stages (:mod:`ace_core.recommend.pipeline`):
a look-ahead that says why when the simulator cannot step, LightSim2Grid's solver time over a
run, and the live state's own security (its N-1 status and doing nothing's look-ahead, with
alarms in words)."""

from __future__ import annotations

from grid2op.Exceptions import Grid2OpException

from ace_core.grid.contingency import N1Screen
from ace_core.grid.forecasts import ForecastInfo
from ace_core.grid.lookahead import ForecastSeries, Hold, LookAhead, look_ahead, skipped_look_ahead
from ace_core.recommend.outcomes import Candidate, StateSecurity


def looked_ahead(
    obs, action, series: ForecastSeries, forecast: ForecastInfo, start, hold: Hold | None = None
) -> LookAhead:
    try:
        return look_ahead(obs, action, series, forecast, start, hold)
    except (Grid2OpException, RuntimeError, ValueError) as exc:
        # a grid the simulator cannot step: say so, keep the feed running
        reason = f"the simulator failed: {str(exc).splitlines()[0][:200]}"
        return skipped_look_ahead(forecast, reason)


def solver_seconds(obs) -> float:
    """LightSim2Grid's cumulated solver time in grid2op's simulator (``comp_time``)."""
    return float(getattr(obs._obs_env.backend, "comp_time", 0.0))


def solver_ms(obs, solver_before: float, candidates: list[Candidate]) -> float:
    """LightSim2Grid's own time in every power flow of a run (simulator, N-1, time series)."""
    simulator = max(solver_seconds(obs) - solver_before, 0.0) * 1000
    n1 = sum(c.n1.solver_ms for c in candidates if c.n1 is not None)
    series = sum(c.look_ahead.solver_ms for c in candidates if c.look_ahead is not None)
    return simulator + n1 + series


def state_security(n1: N1Screen | None, reference: Candidate) -> StateSecurity:
    """The current grid's N-1 status and doing nothing's look-ahead, with alarms in words."""
    alarms = []
    if n1 is not None and not n1.secure and n1.worst is not None:
        worst = n1.worst
        alarms.append(
            f"not N-1 secure: losing {worst.line_name} overloads {worst.worst_line_name} "
            f"({worst.max_rho:.1%}); {n1.n_overloading} outage(s) overload a line"
        )
    la = reference.look_ahead
    if la is not None and not la.skipped and (la.first_overload_step or la.game_over_step):
        alarms.append(f"doing nothing: {la.status}")
    return StateSecurity(n1, la, tuple(alarms))
