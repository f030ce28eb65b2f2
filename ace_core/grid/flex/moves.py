"""A continuous move (redispatch, curtailment, storage), the limits it must respect, and its cost.

A :class:`FlexMove` holds up to three lists, each of ``(unit, MW)``:

- ``redispatch``: a redispatchable generator's setpoint moved by this many MW (+ up, - down);
  grid2op keeps the redispatch until it is changed, and spreads any imbalance over the other
  redispatchable generators;
- ``curtail``: a renewable generator's output capped at this many MW (its Pmax lifts the cap);
- ``storage``: a storage unit's setpoint in MW (+ charges, - discharges, as grid2op counts it).

:func:`refusal` says in words why a move cannot be played on a state, naming the limit: a ramp,
Pmax or Pmin, a curtailment of a generator that is not renewable, a storage setpoint past the
unit's power or energy, or a move on a grid without such units. Nothing is simulated for a refused
move, and grid2op never sees it.

**Prices** (documented here, applied by :func:`move_cost` and :func:`state_cost`), in euros per
MWh, so a move held for one hour costs MW x price:

- redispatch: :data:`REDISPATCH_PRICE` per MWh moved on each generator, up or down (a generator
  asked up is paid for the energy, one asked down for its lost margin);
- curtailment: :data:`CURTAILMENT_PRICE` per MWh of renewable energy not produced (it is paid
  for anyway, and replaced);
- storage: :data:`STORAGE_PRICE` per MWh charged or discharged (wear and losses).

These are round figures of the order of European balancing prices, the same on every grid, so
that costs compare across agents and days; they are not a market model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ace_core.errors import AceError
from ace_core.grid.names import ElementNames

REDISPATCH_PRICE = 40.0
"""euros per MWh redispatched (each generator moved, up or down)"""
CURTAILMENT_PRICE = 60.0
"""euros per MWh of renewable energy curtailed"""
STORAGE_PRICE = 10.0
"""euros per MWh charged or discharged"""
STEP_HOURS = 5 / 60
"""one grid2op step of the L2RPN grids, in hours"""
KINDS = ("redispatch", "curtail", "storage")


class FlexMoveError(AceError, ValueError):
    """A continuous move that is malformed or names no unit of the grid; the message says why."""


Setpoints = tuple[tuple[int, float], ...]


@dataclass(frozen=True)
class FlexMove:
    """Redispatch, curtailment and storage setpoints played together in one step."""

    redispatch: Setpoints = ()
    """(generator, MW change of its setpoint)"""
    curtail: Setpoints = ()
    """(renewable generator, MW cap on its output)"""
    storage: Setpoints = ()
    """(storage unit, MW setpoint: + charges, - discharges)"""

    def __bool__(self) -> bool:
        return bool(self.redispatch or self.curtail or self.storage)

    def to_dict(self) -> dict[str, list[list[float]]]:
        return {
            kind: [[unit, mw] for unit, mw in getattr(self, kind)] for kind in KINDS if getattr(self, kind)
        }

    @classmethod
    def from_dict(cls, spec: Any) -> FlexMove:
        """A move from its JSON shape, ``{"redispatch": [[gen, MW], ...], "curtail": [...],
        "storage": [...]}`` (any of the three); the units are checked against a grid by
        :func:`refusal`."""
        if not isinstance(spec, dict):
            raise FlexMoveError(
                f"a continuous move must be a JSON object with any of {', '.join(KINDS)}; got {type(spec).__name__}"
            )
        unknown = sorted(set(spec) - set(KINDS) - {"kind"})
        if unknown:
            raise FlexMoveError(
                f"unknown part(s) {', '.join(unknown)} of a continuous move; accepted: {', '.join(KINDS)}"
            )
        parts = {kind: _setpoints(spec.get(kind, []), kind) for kind in KINDS}
        move = cls(**parts)
        if not move:
            raise FlexMoveError(
                f'a continuous move needs at least one setpoint, e.g. {{"redispatch": [[0, 5.0]]}}; parts: {", ".join(KINDS)}'
            )
        return move

    def to_grid2op(self, g2op_space):
        """grid2op's action for the move (curtailment as a fraction of the generator's Pmax)."""
        spec: dict[str, Any] = {}
        if self.redispatch:
            spec["redispatch"] = [(unit, float(mw)) for unit, mw in self.redispatch]
        if self.curtail:
            pmax = g2op_space.gen_pmax
            spec["curtail"] = [(unit, float(mw) / float(pmax[unit])) for unit, mw in self.curtail]
        if self.storage:
            spec["set_storage"] = [(unit, float(mw)) for unit, mw in self.storage]
        return g2op_space(spec)

    def describe(self, names: ElementNames | None = None) -> str:
        """The move in words with the units' one names (:mod:`ace_core.grid.names`), e.g.
        ``redispatch generator 0 +5.0 MW``; numbered by kind without ``names``."""
        gen, storage = _namer(names)
        words = []
        if self.redispatch:
            words.append("redispatch " + ", ".join(f"{gen(g)} {mw:+.1f} MW" for g, mw in self.redispatch))
        if self.curtail:
            words.append("curtail " + ", ".join(f"{gen(g)} to {mw:.1f} MW" for g, mw in self.curtail))
        if self.storage:
            words.append(
                "storage "
                + ", ".join(
                    f"{storage(s)} {'charges' if mw >= 0 else 'discharges'} {abs(mw):.1f} MW"
                    for s, mw in self.storage
                )
            )
        return "; ".join(words) or "no continuous move"


_GRID2OP_TYPES = {"redispatch": "redispatch", "curtail": "curtail", "storage": "set_storage"}


def supported_kinds(g2op_space) -> tuple[str, ...]:
    """The kinds of move the player's action space can play: grid2op silently drops the parts it
    does not support (``l2rpn_wcci_2020``'s actions have redispatch but neither curtailment nor
    storage), so a move of another kind would be simulated as doing nothing."""
    supports = getattr(g2op_space, "supports_type", None)
    if supports is None:
        return KINDS
    return tuple(kind for kind in KINDS if supports(_GRID2OP_TYPES[kind]))


def _setpoints(rows: Any, kind: str) -> Setpoints:
    if not isinstance(rows, list | tuple):
        raise FlexMoveError(f"{kind} must be a list of [unit, MW] pairs, e.g. [[0, 5.0]]")
    out: dict[int, float] = {}
    for row in rows:
        if not isinstance(row, list | tuple) or len(row) != 2:
            raise FlexMoveError(f"{kind}: {row!r} is not a [unit, MW] pair")
        unit, mw = row
        if isinstance(unit, bool) or not isinstance(unit, int | np.integer):
            raise FlexMoveError(f"{kind}: unit {unit!r} must be an integer")
        if isinstance(mw, bool) or not isinstance(mw, int | float | np.number) or not np.isfinite(mw):
            raise FlexMoveError(f"{kind}: {mw!r} MW must be a finite number")
        if int(unit) in out:
            raise FlexMoveError(f"{kind}: unit {int(unit)} is set twice")
        out[int(unit)] = round(float(mw), 3)
    return tuple(sorted(out.items()))


# ----------------------------------------------------------------------------- limits


def _namer(names: ElementNames | None, with_id: bool = False):
    """(generator name, storage name) functions: the grid's one names (followed by the id with
    ``with_id``, for messages that point at a unit to correct), else numbered by kind."""

    def pick(table, kind: str):
        return lambda unit: table[unit] if table is not None and 0 <= unit < len(table) else f"{kind} {unit}"

    gen = pick(names.generators if names else None, "generator")
    storage = pick(names.storages if names else None, "storage")
    if names is None or not with_id:
        return gen, storage

    def with_number(name_of, kind: str):
        return lambda unit: (
            name_of(unit) if name_of(unit) == f"{kind} {unit}" else f"{name_of(unit)} (id {unit})"
        )

    return with_number(gen, "generator"), with_number(storage, "storage")


def refusal(obs, move: FlexMove, names: ElementNames | None = None) -> str:
    """Why ``move`` cannot be played on ``obs`` (empty when it can), naming the limit and the unit
    (by its one name with ``names``, else numbered by kind)."""
    for kind, check in (
        ("redispatch", _redispatch_refusal),
        ("curtail", _curtail_refusal),
        ("storage", _storage_refusal),
    ):
        for unit, mw in getattr(move, kind):
            why = check(obs, unit, mw, names)
            if why:
                return why
    return ""


def _generator_refusal(obs, gen: int, allowed, label, *, none_here: str, refused: str) -> str:
    """The checks a redispatch and a curtailment share: the grid has such generators, ``gen`` is
    one of its generators and one of them (``allowed``), else why not, listing those it has."""
    among = np.flatnonzero(allowed)
    if not len(among):
        return none_here
    if not 0 <= gen < obs.n_gen:
        return f"unknown generator {gen}; this grid has generators 0 to {obs.n_gen - 1}"
    if not allowed[gen]:
        kind = obs.gen_type[gen] if getattr(obs, "gen_type", None) is not None else "type unknown"
        return f"{label(gen)} ({kind}) {refused}" + ", ".join(label(g) for g in among)
    return ""


def _redispatch_refusal(obs, gen: int, mw: float, names: ElementNames | None = None) -> str:
    label, _ = _namer(names, with_id=True)
    why = _generator_refusal(
        obs,
        gen,
        obs.gen_redispatchable,
        label,
        none_here="this grid has no redispatchable generator: redispatch is not available here",
        refused="cannot be redispatched; redispatchable here: ",
    )
    if why:
        return why
    name = label(gen)
    if mw == 0:
        return f"a redispatch of 0 MW on {name} changes nothing"
    ramp = float(obs.gen_max_ramp_up[gen] if mw > 0 else obs.gen_max_ramp_down[gen])
    if abs(mw) > ramp + 1e-6:
        return (
            f"redispatching {name} by {mw:+.1f} MW is past its ramp: it moves by at most "
            f"+{obs.gen_max_ramp_up[gen]:.1f} MW up and -{obs.gen_max_ramp_down[gen]:.1f} MW down per step"
        )
    p, pmax, pmin = float(obs.gen_p[gen]), float(obs.gen_pmax[gen]), float(obs.gen_pmin[gen])
    if p + mw > pmax + 1e-6:
        return f"redispatching {name} by {mw:+.1f} MW is past its Pmax: it produces {p:.1f} MW of at most {pmax:.1f} MW, so at most {pmax - p:+.1f} MW up"
    if p + mw < pmin - 1e-6:
        return f"redispatching {name} by {mw:+.1f} MW is past its Pmin: it produces {p:.1f} MW and at least {pmin:.1f} MW, so at most {pmin - p:+.1f} MW down"
    return ""


def _curtail_refusal(obs, gen: int, mw: float, names: ElementNames | None = None) -> str:
    label, _ = _namer(names, with_id=True)
    why = _generator_refusal(
        obs,
        gen,
        obs.gen_renewable,
        label,
        none_here="this grid has no renewable generator: curtailment is not available here",
        refused="is not renewable: curtailment applies to renewables only; here: ",
    )
    if why:
        return why
    name = label(gen)
    pmax = float(obs.gen_pmax[gen])
    if not 0 <= mw <= pmax + 1e-6:
        return (
            f"a curtailment of {name} to {mw:.1f} MW is outside its limit: from 0 to its Pmax {pmax:.1f} MW"
        )
    return ""


def _storage_refusal(obs, unit: int, mw: float, names: ElementNames | None = None) -> str:
    _, label = _namer(names, with_id=True)
    if not obs.n_storage:
        return "this grid has no storage unit: storage setpoints are not available here"
    if not 0 <= unit < obs.n_storage:
        return f"unknown storage unit {unit}; this grid has units 0 to {obs.n_storage - 1}"
    name = label(unit)
    absorb, prod = float(obs.storage_max_p_absorb[unit]), float(obs.storage_max_p_prod[unit])
    if mw > absorb + 1e-6 or -mw > prod + 1e-6:
        return f"a setpoint of {mw:+.1f} MW on {name} is outside its power: from -{prod:.1f} MW (discharging) to +{absorb:.1f} MW (charging)"
    charge, emax, emin = (
        float(obs.storage_charge[unit]),
        float(obs.storage_Emax[unit]),
        float(obs.storage_Emin[unit]),
    )
    after = charge + mw * STEP_HOURS
    if after > emax + 1e-6:
        return f"charging {name} at {mw:.1f} MW is past its capacity: it holds {charge:.2f} of {emax:.2f} MWh, so at most {(emax - charge) / STEP_HOURS:.1f} MW for one step"
    if after < emin - 1e-6:
        return f"discharging {name} at {-mw:.1f} MW is past its reserve: it holds {charge:.2f} MWh of at least {emin:.2f} MWh, so at most {(charge - emin) / STEP_HOURS:.1f} MW for one step"
    return ""


# ----------------------------------------------------------------------------- cost


@dataclass(frozen=True)
class MoveCost:
    """What a move changes, in MW, and what holding it for one hour costs."""

    redispatched_mw: float = 0.0
    curtailed_mw: float = 0.0
    storage_mw: float = 0.0

    @property
    def mw(self) -> float:
        return self.redispatched_mw + self.curtailed_mw + self.storage_mw

    @property
    def euros_per_hour(self) -> float:
        return (
            self.redispatched_mw * REDISPATCH_PRICE
            + self.curtailed_mw * CURTAILMENT_PRICE
            + self.storage_mw * STORAGE_PRICE
        )

    def to_dict(self) -> dict[str, float]:
        return {
            "mw": round(self.mw, 1),
            "redispatched_mw": round(self.redispatched_mw, 1),
            "curtailed_mw": round(self.curtailed_mw, 1),
            "storage_mw": round(self.storage_mw, 1),
            "euros_per_hour": round(self.euros_per_hour, 0),
        }


def move_cost(obs, move: FlexMove) -> MoveCost:
    """The MW a move changes on ``obs``: each redispatch, each curtailment below the generator's
    available output and each storage setpoint, plus what the other generators make up (grid2op
    balances every move with the redispatchable generators: that is redispatch too, counted as
    :func:`state_cost` counts it)."""
    shifts = sum(mw for _, mw in move.redispatch)
    available = np.asarray(obs.gen_p_before_curtail)
    curtailed = sum(max(0.0, float(available[g]) - mw) for g, mw in move.curtail)
    stored = sum(mw for _, mw in move.storage)
    made_up = abs(-shifts + curtailed + stored)
    redispatched = sum(abs(mw) for _, mw in move.redispatch) + made_up
    return MoveCost(redispatched, curtailed, sum(abs(mw) for _, mw in move.storage))


def state_cost(obs) -> MoveCost:
    """What the state's continuous moves cost while they last: the generators' actual redispatch,
    the renewable output curtailed, and the storage units' power (the cost of a day is the sum of
    this over its steps, times :data:`STEP_HOURS`)."""
    redispatched = float(np.abs(obs.actual_dispatch).sum())
    curtailed = float(
        np.clip(np.asarray(obs.gen_p_before_curtail) - np.asarray(obs.gen_p), 0, None)[
            obs.gen_renewable
        ].sum()
    )
    stored = float(np.abs(obs.storage_power).sum()) if obs.n_storage else 0.0
    return MoveCost(redispatched, curtailed, stored)
