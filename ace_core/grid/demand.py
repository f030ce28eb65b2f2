"""Heavier (or lighter) days from the same chronics: every load and every generator's output
multiplied by one factor.

The bundled datasets hold few stressed days: on the 14-bus grid doing nothing survives 0.69 of
the one-day train days as they are, 0.47 of them at 1.05 and 0.28 at 1.10 (the power flows
grow with the injections, so lines reach their limits sooner and more often). Mining the expert
on scaled train days gives imitation many more of the decisions that matter: those where doing
nothing overloads the grid. Loads and generators are scaled together, so the slack bus does not
take the difference; voltage set-points are kept. The forecasts are scaled with the values, so
the expert's simulations see the day it plays.

No generator is scaled past its Pmax (:func:`keep_within_pmax`): what a generator cannot make is
made by the redispatchable generators with room left, in proportion to their room, as an economic
dispatch would, so the day's total production is kept. Without it, a generator running near its
Pmax on the bundled days (``gen_32_19`` on ``l2rpn_wcci_2020``, 399 of 400 MW) was asked for more
than it can make, and grid2op refused every redispatch on such days (``ImpossibleRedispatching``).

Only the time series in memory are changed (``MultifolderWithCache``'s cache, or the chronic
``SeededMultifolder`` has just read), never the dataset's files. Training validates on the days as
they are (and, with ``validation_demand_scale``, scaled too); ``evaluate --demand-scale`` plays
any split scaled, for the stress table.

A scaled day is the same whatever the grid seed, so on a grid without opponent or maintenance
model a heavier row played with five grid seeds plays each day five times. A demand *spread*
(:func:`spread_loads`, ``evaluate --demand-spread``) makes the seed matter: each load's share of
the day's demand is drawn from the grid seed and the chronic, while the total of every step, and
so the productions, stay as they were. The same day then loads the grid's lines otherwise under
each seed, as days of one season differ from region to region: a validation split of three days
gives fifteen different episodes with five seeds.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from ace_core.errors import ConfigError

DEMAND_SCALE_RANGE = (0.8, 1.3)
DEMAND_SPREAD_RANGE = (0.0, 0.3)
"""the standard deviation of a load's share (log scale): 0, the days' own shares"""
UNEVEN_SPREAD = 0.05
"""the spread of uneven days (the stress table's uneven rows, a run's uneven validation copies):
each load's share about 5% from the day's own"""
_LOAD_P = ("load_p", "load_p_handler")
_LOAD_Q = ("load_q", "load_q_handler")
_PROD_P = ("prod_p", "gen_p_handler")
_LOAD_P_FORECAST = ("load_p_forecast", "load_p_for_handler")
_LOAD_Q_FORECAST = ("load_q_forecast", "load_q_for_handler")
_PROD_P_FORECAST = ("prod_p_forecast", "gen_p_for_handler")
"""each series of a chronic as (``GridStateFromFile`` attribute, ``FromHandlers`` handler): a
chronic holds its arrays in one or the other (:func:`_array`)"""
_SERIES = (_LOAD_P, _LOAD_Q, _PROD_P, _LOAD_P_FORECAST, _LOAD_Q_FORECAST, _PROD_P_FORECAST)
_PRODUCTIONS = (_PROD_P, _PROD_P_FORECAST)
_LOADS = ((_LOAD_P, _LOAD_Q), (_LOAD_P_FORECAST, _LOAD_Q_FORECAST))
"""(active, reactive) loads, values then forecasts"""


def _number_in(what: str, value: float, bounds: tuple[float, float], example: str, meaning: str) -> float:
    """``value`` as a float if it is within ``bounds``; an error naming ``what`` and the range
    otherwise."""
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{what} {value!r} must be a number from {low} to {high}, e.g. {example}")
    if not low <= value <= high:
        raise ConfigError(f"{what} {value} is out of range; accepted: {low} to {high} ({meaning})")
    return float(value)


def check_demand_scale(value: float) -> float:
    """``value`` as a float if it is in :data:`DEMAND_SCALE_RANGE`; a clear error otherwise."""
    return _number_in("demand scale", value, DEMAND_SCALE_RANGE, "1.05", "1: the days as they are")


def check_demand_spread(value: float) -> float:
    """``value`` as a float if it is in :data:`DEMAND_SPREAD_RANGE`; a clear error otherwise."""
    meaning = "0: each load's own share of the demand; 0.05: shares drawn about 5% apart"
    return _number_in("demand spread", value, DEMAND_SPREAD_RANGE, "0.05", meaning)


GeneratorLimits = tuple[tuple[float, ...], tuple[bool, ...]]
"""each generator's Pmax and whether it is redispatchable, in the backend's order"""


def generator_limits(env) -> GeneratorLimits:
    """What :func:`keep_within_pmax` needs of ``env``'s generators, in a form a reader's keyword
    arguments can carry (grid2op's Runner copies them to build its own env)."""
    return (
        tuple(float(p) for p in env.gen_pmax),
        tuple(bool(r) for r in env.gen_redispatchable),
    )


def keep_within_pmax(prod_p: np.ndarray, limits: GeneratorLimits) -> None:
    """In place, each row of ``prod_p`` (steps x generators): every generator at most its Pmax, and
    what is cut made by the redispatchable generators with room left below their Pmax, each in
    proportion to its room; what they cannot make is left to the slack."""
    pmax = np.asarray(limits[0], dtype=prod_p.dtype)
    redispatchable = np.asarray(limits[1], dtype=bool)
    if prod_p.ndim != 2 or prod_p.shape[1] != pmax.size:
        return  # not one column per generator (an empty handler)
    cut = np.clip(prod_p - pmax, 0.0, None).sum(axis=1)
    if not cut.any():
        return
    np.minimum(prod_p, pmax, out=prod_p)
    room = np.where(redispatchable, np.clip(pmax - prod_p, 0.0, None), 0.0)
    room_total = room.sum(axis=1)
    share = np.divide(np.minimum(cut, room_total), room_total, out=np.zeros_like(cut), where=room_total > 0)
    prod_p += room * share[:, None]


def scale_chronic(data, factor: float, limits: GeneratorLimits | None = None) -> None:
    """Multiply one loaded chronic's loads and productions (and their forecasts) by ``factor``:
    a ``GridStateFromFile``'s arrays, or the arrays of a ``FromHandlers`` chronic's handlers (the
    envs made with forecasts, :mod:`ace_core.grid.forecasts`; perfect forecasts read the scaled
    values from the handlers they forecast). With ``limits``, the productions are then kept within
    each generator's Pmax (:func:`keep_within_pmax`)."""
    for series in _SERIES:
        values = _array(data, series)
        if values is not None:
            values *= factor
    if limits is not None:
        for series in _PRODUCTIONS:
            values = _array(data, series)
            if values is not None:
                keep_within_pmax(values, limits)


def load_weights(seed: int, chronic: str, n_loads: int, spread: float) -> np.ndarray:
    """Each load's weight for ``chronic`` under grid seed ``seed``: log-normal with ``spread`` as
    its standard deviation, drawn from the seed and the chronic's name alone (the same in any
    process, whatever was played before)."""
    digest = hashlib.sha256(f"{int(seed)}/{chronic}/loads".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    return np.exp(spread * rng.standard_normal(n_loads))


def spread_loads(data, weights: np.ndarray) -> None:
    """In place, each load of one loaded chronic (values and forecasts, active and reactive) times
    its weight, every step then rescaled so that its total active load is what it was: the
    productions still match the demand, and each load keeps its power factor."""
    for active, reactive in _LOADS:
        p = _array(data, active)
        if p is None or p.ndim != 2 or p.shape[1] != weights.size:
            continue
        before = p.sum(axis=1)
        weighted = p * weights
        after = weighted.sum(axis=1)
        factor = (
            weights[None, :] * np.divide(before, after, out=np.ones_like(before), where=after != 0)[:, None]
        )
        p *= factor
        q = _array(data, reactive)
        if q is not None and q.shape == p.shape:
            q *= factor


def _array(data, names: tuple[str, str]):
    """A chronic's array: a ``GridStateFromFile`` attribute, or a ``FromHandlers`` handler's."""
    attribute, handler = names
    values = getattr(data, attribute, None)
    if isinstance(values, np.ndarray):
        return values
    return getattr(getattr(data, handler, None), "array", None)


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
    limits = generator_limits(env)
    for data in cached:
        if data is not None:
            scale_chronic(data, factor, limits)
