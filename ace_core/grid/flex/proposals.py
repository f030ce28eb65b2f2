"""The continuous moves worth simulating: relief for an overloaded line, and a release when calm.

:func:`relief_moves` reads the state's most loaded line (its flow's direction and the MW above the
``target`` loading) and, from the transfer factors of :mod:`~ace_core.grid.flex.sensitivity`,
ranks by the MW of flow each can take off that line within one step's limits:

- **redispatch pairs**: one redispatchable generator up, another down by the same MW (balanced, so
  grid2op has nothing to spread), limited by both ramps and by Pmax and Pmin;
- **curtailment** of a renewable generator whose output loads the line (made up by the
  redispatchable generators);
- **storage**: charging or discharging a unit, within its power and its energy for one step.

A curtailment or a charge asks the redispatchable generators for more power, on top of what the
loads will draw more next step: both are sized within :func:`ramp_reserve`, what those generators
can still add in one step less the forecast's rise and a margin for its error. Without it, a
curtailment the forecast judged safe was refused by the real step (grid2op's
``ImpossibleRedispatching``: 162 MW to add, 151 MW of ramps) on a heavier 118-bus validation day.

The first proposal combines the best pairs (distinct generators, until the MW above the target is
covered); then come the single moves, best first, ``count`` in all. Each is checked against the
limits of :mod:`~ace_core.grid.flex.moves` (so none is refused) and judged by simulation by its
caller.

:func:`release_move` undoes what is no longer needed: the redispatch brought back towards zero
within each ramp, curtailment lifted, storage idle. :func:`swap_move` plays a new move with that
release, so the expert can replace the moves in force rather than add to them.
:func:`as_target_move` asks a generator's first redispatch so that its target moves by the move's
MW, not by the move plus the compensation it carries.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

import numpy as np

from ace_core.grid.flex.moves import KINDS, STEP_HOURS, FlexMove, refusal
from ace_core.grid.flex.sensitivity import Sensitivities

MIN_MW = 0.5
"""smaller moves are not proposed (their relief is within the DC model's error)"""
RAMP_MARGIN = 0.2
"""the share of the generators' one-step ramp room kept for the forecast's error"""


@dataclass(frozen=True)
class Relief:
    move: FlexMove
    mw_off: float
    """MW of flow the DC model takes off the line"""


def relief_moves(
    obs, sens: Sensitivities, *, count: int = 8, target: float = 0.95, kinds: Collection[str] = KINDS
) -> list[FlexMove]:
    """Up to ``count`` moves that take flow off ``obs``'s most loaded line, best first; only moves
    of ``kinds`` (:func:`~ace_core.grid.flex.moves.supported_kinds` of the player's action space)."""
    line = int(np.argmax(obs.rho))
    rho = float(obs.rho[line])
    if count < 1 or rho < target or rho <= 0:
        return []
    direction = 1.0 if obs.p_or[line] >= 0 else -1.0
    needed = abs(float(obs.p_or[line])) * (1 - target / rho)
    pairs = _pairs(obs, sens, line, direction, needed) if "redispatch" in kinds else []
    reserve = ramp_reserve(obs)
    singles = [
        *pairs,
        *(_curtailments(obs, sens, line, direction, needed, reserve) if "curtail" in kinds else []),
        *(_storage(obs, sens, line, direction, needed, reserve) if "storage" in kinds else []),
    ]
    singles.sort(key=lambda r: -r.mw_off)
    combined = _combine(pairs, needed)
    moves = ([combined] if combined else []) + [r.move for r in singles]
    unique = list(dict.fromkeys(m for m in moves if not refusal(obs, m)))
    return unique[:count]


def ramp_reserve(obs) -> float:
    """MW the redispatchable generators can still add in one step (ramps and Pmax), less what the
    loads draw more and the renewables give less next step by the forecast, less
    :data:`RAMP_MARGIN` of that room; what a curtailment or a charge may ask of them (0 when
    nothing is left)."""
    room = sum(up_margin(obs, int(g)) for g in np.flatnonzero(obs.gen_redispatchable))
    return max(0.0, room * (1 - RAMP_MARGIN) - _forecast_rise(obs))


def _forecast_rise(obs) -> float:
    """MW the redispatchable generators must add next step for the loads and the renewables by the
    forecast (0 when no forecast, or when it asks for less). A curtailed renewable gives no more
    than its limit, whatever its forecast: counting its forecast in full took the curtailed MW
    for a rise of the renewables, and judged room left that was not there."""
    try:
        _, injections = obs._forecasted_inj[1]
    except (AttributeError, IndexError, KeyError, TypeError):
        return 0.0
    values = injections.get("injection", {})
    rise = 0.0
    if "load_p" in values:
        rise += float(np.sum(values["load_p"]) - np.sum(obs.load_p))
    if "prod_p" in values:
        renewable = np.asarray(obs.gen_renewable, dtype=bool)
        limit = np.asarray(getattr(obs, "curtailment_limit", np.ones(obs.n_gen)), dtype=float)
        given = np.minimum(np.asarray(values["prod_p"], dtype=float), limit * np.asarray(obs.gen_pmax))
        rise -= float(np.sum(given[renewable]) - np.sum(obs.gen_p[renewable]))
    return max(0.0, rise)


def up_margin(obs, gen: int) -> float:
    return max(0.0, min(float(obs.gen_max_ramp_up[gen]), float(obs.gen_pmax[gen] - obs.gen_p[gen])))


def down_margin(obs, gen: int) -> float:
    return max(0.0, min(float(obs.gen_max_ramp_down[gen]), float(obs.gen_p[gen] - obs.gen_pmin[gen])))


def _pairs(obs, sens: Sensitivities, line: int, direction: float, needed: float) -> list[Relief]:
    gens = [g for g in np.flatnonzero(obs.gen_redispatchable) if obs.gen_p[g] > 0 or obs.gen_pmin[g] == 0]
    out = []
    for up in gens:
        for down in gens:
            per_mw = -direction * sens.shift(line, up=int(up), down=int(down))
            if up == down or per_mw <= 1e-3:
                continue
            mw = min(up_margin(obs, up), down_margin(obs, down), needed / per_mw)
            if mw >= MIN_MW:
                mw = round(mw, 1)
                move = FlexMove(redispatch=tuple(sorted(((int(up), mw), (int(down), -mw)))))
                out.append(Relief(move, mw * per_mw))
    out.sort(key=lambda r: -r.mw_off)
    return out


def _combine(pairs: list[Relief], needed: float) -> FlexMove | None:
    """The best pairs on distinct generators until ``needed`` MW are off the line."""
    used: set[int] = set()
    setpoints: list[tuple[int, float]] = []
    off = 0.0
    for relief in pairs:
        units = {g for g, _ in relief.move.redispatch}
        if units & used:
            continue
        used |= units
        setpoints += relief.move.redispatch
        off += relief.mw_off
        if off >= needed:
            break
    if len(setpoints) <= 2:
        return None
    return FlexMove(redispatch=tuple(sorted(setpoints)))


def _curtailments(
    obs, sens: Sensitivities, line: int, direction: float, needed: float, reserve: float
) -> list[Relief]:
    out = []
    for gen in np.flatnonzero(obs.gen_renewable):
        available = float(obs.gen_p[gen])
        per_mw = direction * (sens.gen[line, gen] - sens.balance[line])
        if available < MIN_MW or per_mw <= 1e-3:
            continue
        mw = min(available, needed / per_mw, reserve)
        if mw >= MIN_MW:
            out.append(Relief(FlexMove(curtail=((int(gen), round(available - mw, 1)),)), mw * per_mw))
    return out


def _storage(
    obs, sens: Sensitivities, line: int, direction: float, needed: float, reserve: float
) -> list[Relief]:
    out = []
    for unit in range(obs.n_storage):
        per_mw_charging = direction * (sens.storage[line, unit] - sens.balance[line])
        charge, emax, emin = (
            float(obs.storage_charge[unit]),
            float(obs.storage_Emax[unit]),
            float(obs.storage_Emin[unit]),
        )
        if per_mw_charging > 1e-3:
            room = min(float(obs.storage_max_p_absorb[unit]), (emax - charge) / STEP_HOURS, reserve)
            mw = min(room, needed / per_mw_charging)
        elif per_mw_charging < -1e-3:
            room = min(float(obs.storage_max_p_prod[unit]), (charge - emin) / STEP_HOURS)
            mw = -min(room, needed / -per_mw_charging)
        else:
            continue
        if abs(mw) >= MIN_MW:
            mw = round(mw, 1) - 0.05 * np.sign(mw)  # inside the energy limit after rounding
            out.append(Relief(FlexMove(storage=((unit, round(float(mw), 2)),)), abs(mw * per_mw_charging)))
    return out


def release_move(obs) -> FlexMove | None:
    """Back towards no continuous move: each generator's redispatch towards zero within its ramp,
    each curtailment lifted, each storage unit idle; None when there is nothing to release."""
    redispatch = []
    for gen in np.flatnonzero(np.abs(np.asarray(obs.target_dispatch)) > 0.05):
        target = float(obs.target_dispatch[gen])
        step = min(abs(target), down_margin(obs, gen) if target > 0 else up_margin(obs, gen))
        if step >= 0.05:
            redispatch.append((int(gen), round(-np.sign(target) * step, 2)))
    limit = np.asarray(getattr(obs, "curtailment_limit", np.ones(obs.n_gen)))
    curtail = [(int(g), float(obs.gen_pmax[g])) for g in np.flatnonzero(obs.gen_renewable & (limit < 0.999))]
    storage = [(int(s), 0.0) for s in range(obs.n_storage) if abs(float(obs.storage_power_target[s])) > 0.05]
    move = FlexMove(tuple(redispatch), tuple(curtail), tuple(storage))
    return move if move and not refusal(obs, move) else None


def swap_move(obs, move: FlexMove, release: FlexMove) -> FlexMove | None:
    """``move`` in place of the moves in force: ``release`` (:func:`release_move` of ``obs``) played
    with it, the two redispatches of a generator added, ``move``'s curtailment and storage
    setpoints over the release's; None when the sum is refused or changes nothing."""
    redispatch = {gen: float(mw) for gen, mw in release.redispatch}
    for gen, mw in move.redispatch:
        redispatch[gen] = round(float(redispatch.get(gen, 0.0) + mw), 2)
    swapped = FlexMove(
        tuple(sorted((g, mw) for g, mw in redispatch.items() if abs(mw) >= 0.05)),
        tuple(sorted({**dict(release.curtail), **dict(move.curtail)}.items())),
        tuple(sorted({**dict(release.storage), **dict(move.storage)}.items())),
    )
    return swapped if swapped and swapped != move and not refusal(obs, swapped) else None


def as_target_move(obs, move: FlexMove, redispatched: Collection[int]) -> FlexMove:
    """``move`` with each redispatch on a generator not yet redispatched in the episode (not in
    ``redispatched``, target 0) asked less its actual dispatch. grid2op sets such a generator's
    target to its actual dispatch plus the redispatch: a generator making up for a curtailment
    would keep that share as a target after the curtailment ends, and targets that no ramp can
    meet end every simulation (``ImpossibleRedispatching``). Asked this way, its target moves by
    the move's MW, and the compensation goes on being spread by grid2op."""
    asked = []
    for gen, mw in move.redispatch:
        first = gen not in redispatched and abs(float(obs.target_dispatch[gen])) < 1e-7
        asked.append((gen, round(mw - float(obs.actual_dispatch[gen]), 2) if first else mw))
    return replace(move, redispatch=tuple(asked))
