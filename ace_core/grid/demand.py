"""Heavier (or lighter) days from the same chronics: every load and every generator's output
multiplied by one factor.

The bundled datasets hold few stressed days: on the 14-bus grid doing nothing survives 0.69 of
the one-day train days as they are, 0.47 of them at 1.05 and 0.28 at 1.10 (the power flows
grow with the injections, so lines reach their limits sooner and more often). Mining the expert
on scaled train days gives imitation many more of the decisions that matter: those where doing
nothing overloads the grid. Loads and generators are scaled together, so the slack bus does not
take the difference; voltage set-points are kept. The forecasts are scaled with the values, so
the expert's simulations see the day it plays.

Only the time series in memory are changed (``MultifolderWithCache``'s cache, or the chronic
``SeededMultifolder`` has just read), never the dataset's files. Training validates on the days as
they are (and, with ``validation_demand_scale``, scaled too); ``evaluate --demand-scale`` plays
any split scaled, for the stress table.
"""

from __future__ import annotations

import math

from ace_core.errors import ConfigError

DEMAND_SCALE_RANGE = (0.8, 1.3)
_SCALED = ("load_p", "load_q", "prod_p", "load_p_forecast", "load_q_forecast", "prod_p_forecast")
_SCALED_HANDLERS = (
    "load_p_handler",
    "load_q_handler",
    "gen_p_handler",
    "load_p_for_handler",
    "load_q_for_handler",
    "gen_p_for_handler",
)


def check_demand_scale(value: float) -> float:
    """``value`` as a float if it is in :data:`DEMAND_SCALE_RANGE`; a clear error otherwise."""
    low, high = DEMAND_SCALE_RANGE
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"demand scale {value!r} must be a number from {low} to {high}, e.g. 1.05")
    if not low <= value <= high:
        raise ConfigError(
            f"demand scale {value} is out of range; accepted: {low} to {high} (1: the days as they are)"
        )
    return float(value)


def scale_chronic(data, factor: float) -> None:
    """Multiply one loaded chronic's loads and productions (and their forecasts) by ``factor``:
    a ``GridStateFromFile``'s arrays, or the arrays of a ``FromHandlers`` chronic's handlers (the
    envs made with forecasts, :mod:`ace_core.grid.forecasts`; perfect forecasts read the scaled
    values from the handlers they forecast)."""
    for name in _SCALED:
        values = getattr(data, name, None)
        if values is not None:
            values *= factor
    for name in _SCALED_HANDLERS:
        values = getattr(getattr(data, name, None), "array", None)
        if values is not None:
            values *= factor


def scale_demand(env, factor: float) -> None:
    """Multiply the loads and productions of every cached chronic of ``env`` by ``factor``; the
    next reset plays them. ``env`` must cache its chronics (``make_env(..., cache_chronics=True)``);
    an env that reads each chronic from disk scales it as it reads it
    (:class:`ace_core.grid.chronic_seeds.SeededMultifolder`)."""
    factor = check_demand_scale(factor)
    cached = getattr(env.chronics_handler.real_data, "_cached_data", None)
    if cached is None:
        raise ConfigError(
            "a demand scale needs the chronics cached in memory (make_env(..., cache_chronics=True))"
        )
    for data in cached:
        if data is not None:
            scale_chronic(data, factor)
